import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType } from '@teamchat/testing';
import { activeIds, createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
});
afterAll(() => stack.close());

test('administrators add, update, reorder and remove; everyone gets the whole list each time', async () => {
  const client = cast.admin.client;
  let a = 0;
  const captured = await captureEvents(stack, async () => {
    const first = await client.post('/api/v1/realm/filters', {
      pattern: '#(?P<id>[0-9]+)',
      url_template: 'https://github.com/zulip/zulip/issues/{id}',
    });
    expect(first.body).toEqual({ result: 'success', msg: '', id: expect.any(Number) });
    const second = await client.post('/api/v1/realm/filters', {
      pattern: '(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)',
      url_template: 'https://github.com/{org}/{repo}/issue/{id}',
    });
    a = first.body.id;
    const b = second.body.id;
    expect(
      (
        await client.patch(`/api/v1/realm/filters/${a}`, {
          pattern: 'ZUL-(?P<id>\\d+)',
          url_template: 'https://example.com/{?id}',
        })
      ).status,
    ).toBe(200);
    expect((await client.patch('/api/v1/realm/linkifiers', { ordered_linkifier_ids: [b, a] })).status).toBe(200);

    const listed = (await cast.guest.client.get('/api/v1/realm/linkifiers')).body.linkifiers;
    expect(listed).toEqual([
      {
        id: b,
        pattern: '(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)',
        url_template: 'https://github.com/{org}/{repo}/issue/{id}',
      },
      { id: a, pattern: 'ZUL-(?P<id>\\d+)', url_template: 'https://example.com/{?id}' },
    ]);
    expect((await cast.member.client.get('/api/v1/realm/filters')).body.filters).toEqual(
      listed.map((l: { pattern: string; url_template: string; id: number }) => [l.pattern, l.url_template, l.id]),
    );

    expect((await client.delete(`/api/v1/realm/filters/${b}`)).status).toBe(200);
  });
  const events = ofType(captured, 'realm_linkifiers');
  expect(events).toHaveLength(5);
  expect(events[4].event).toEqual({
    type: 'realm_linkifiers',
    realm_linkifiers: [{ id: a, pattern: 'ZUL-(?P<id>\\d+)', url_template: 'https://example.com/{?id}' }],
  });
  expect(events[4].recipientIds).toEqual(await activeIds(stack));
});

test('patterns must compile as re2 would and name exactly the template variables', async () => {
  const add = (pattern: string, url_template: string) =>
    cast.owner.client.post('/api/v1/realm/filters', { pattern, url_template });
  expectError(await add('', 'https://example.com/{id}'), 400, 'BAD_REQUEST', 'This field cannot be blank.');
  expectError(await add('(foo', 'https://example.com/'), 400, 'BAD_REQUEST', /^Bad regular expression: /);
  expectError(
    await add('ZUL-(?P<id>\\d????)', 'https://example.com/{id}'),
    400,
    'BAD_REQUEST',
    /^Bad regular expression: /,
  );
  expectError(
    await add('(?=x)(?P<id>\\d+)', 'https://example.com/{id}'),
    400,
    'BAD_REQUEST',
    'Bad regular expression: invalid perl operator: (?=',
  );
  expectError(
    await add('(?P<id>\\d+)-\\1', 'https://example.com/{id}'),
    400,
    'BAD_REQUEST',
    'Bad regular expression: invalid escape sequence: \\1',
  );
  const mismatch = await add('ZUL-(?P<id>\\d+)', 'https://example.com/{hello}');
  expectError(mismatch, 400, 'BAD_REQUEST', "Group 'hello' in URL template is not present in linkifier pattern.");
  expect(mismatch.body.errors).toEqual({
    __all__: ["Group 'hello' in URL template is not present in linkifier pattern."],
  });
  expectError(
    await add('ZUL-(?P<id>\\d+)-(?P<hello>\\d+)', 'https://example.com/{hello}'),
    400,
    'BAD_REQUEST',
    "Group 'id' in linkifier pattern is not present in URL template.",
  );
  expectError(
    await add('ZUL-(?P<id>\\d+)', '$fgfg'),
    400,
    'BAD_REQUEST',
    "Group 'id' in linkifier pattern is not present in URL template.",
  );
  for (const template of [
    'https://example.com/{foo',
    'https://example.com/{{}',
    'https://example.com/{//foo}',
    'https://example.com/{bar++}',
  ]) {
    const response = await add('(?P<foo>x)', template);
    expectError(response, 400, 'BAD_REQUEST', 'Invalid URL template.');
    expect(response.body.errors).toEqual({ url_template: ['Invalid URL template.'] });
  }
  expect(
    (
      await add(
        'FOO_(?P<id>[a-f]{5});(?P<zone>[a-f]);(?P<domain>[a-z]+)',
        'https://zone_{zone}{.domain}.net/ticket{/id}',
      )
    ).status,
  ).toBe(200);
  expect((await add('lp:(?P<id>[0-9]+)', 'https://realm.com/my_realm_filter/?sort=reverse&value={id}')).status).toBe(
    200,
  );
  expectError(
    await add('lp:(?P<id>[0-9]+)', 'https://other.example/{id}'),
    400,
    'BAD_REQUEST',
    'Realm filter with this Realm and Pattern already exists.',
  );
});

test('only administrators change linkifiers; unknown ids and bad orders are refused', async () => {
  for (const user of [cast.moderator, cast.member, cast.guest, cast.bot]) {
    expectError(
      await user.client.post('/api/v1/realm/filters', { pattern: 'x', url_template: 'https://x' }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  }
  expectError(
    await cast.member.client.delete('/api/v1/realm/filters/15'),
    400,
    'UNAUTHORIZED_PRINCIPAL',
    'Must be an organization administrator',
  );
  expectError(
    await cast.admin.client.delete('/api/v1/realm/filters/987654'),
    400,
    'BAD_REQUEST',
    'Linkifier not found.',
  );
  expectError(
    await cast.admin.client.patch('/api/v1/realm/filters/987654', {
      pattern: '#(?P<id>[123])',
      url_template: 'https://x/{id}',
    }),
    400,
    'BAD_REQUEST',
    'Linkifier not found.',
  );
  const ids = (await cast.admin.client.get('/api/v1/realm/linkifiers')).body.linkifiers.map(
    (l: { id: number }) => l.id,
  );
  expectError(
    await cast.admin.client.patch('/api/v1/realm/linkifiers', { ordered_linkifier_ids: [ids[0], ids[0]] }),
    400,
    'BAD_REQUEST',
    'The ordered list must not contain duplicated linkifiers',
  );
  expectError(
    await cast.admin.client.patch('/api/v1/realm/linkifiers', { ordered_linkifier_ids: ids.slice(1) }),
    400,
    'BAD_REQUEST',
    'The ordered list must enumerate all existing linkifiers exactly once',
  );
});

// Patterns are re2 patterns (the engine rendering uses, linear in the text), with re2's
// error wording; a pattern JavaScript would backtrack on forever is fine under re2.
test('patterns are checked by re2: its syntax, its wording, its size limit', async () => {
  const add = (pattern: string, url_template: string) =>
    cast.owner.client.post('/api/v1/realm/filters', { pattern, url_template });
  const refusedWith = async (pattern: string, message: string) => {
    const response = await add(pattern, 'https://example.com/{id}');
    expectError(response, 400, 'BAD_REQUEST', `Bad regular expression: ${message}`);
  };
  expectError(await add('(foo', 'https://example.com/'), 400, 'BAD_REQUEST', 'Bad regular expression: missing ): (foo');
  await refusedWith('ZUL-(?P<id>\\d????)', 'bad repetition operator: ????');
  await refusedWith('(?<=x)(?P<id>\\d+)', 'invalid perl operator: (?<=');
  await refusedWith('ZUL-(?P<id>\\d{1001})', 'invalid repetition size: {1001}');
  const alternatives = Array.from({ length: 50 }, (_, n) => `word${n}`).join('|');
  const tooLarge = await add(`(?P<id>(?:${alternatives}){1,1000})`, 'https://example.com/{id}');
  expectError(tooLarge, 400, 'BAD_REQUEST', 'Bad regular expression: pattern too large - compile failed');
  expect(tooLarge.body.errors).toEqual({ __all__: ['Bad regular expression: pattern too large - compile failed'] });
  expect((await add('(?i)re2-(?P<id>\\d+)', 'https://example.com/{id}')).status).toBe(200);
  expect((await add('(?P<id>(a+)+)', 'https://example.com/{id}')).status).toBe(200);
});

test('a URL template whose own scheme is unsafe is refused; schemes from the text are checked later', async () => {
  const add = (pattern: string, url_template: string) =>
    cast.admin.client.post('/api/v1/realm/filters', { pattern, url_template });
  const unsafeTemplates = [
    'javascript:alert({id})',
    'JavaScript:void({id})',
    ' javascript:{id}',
    'data:text/html,{id}',
    'vbscript:{id}',
  ];
  for (const template of unsafeTemplates) {
    const refused = await add('XSS-(?P<id>\\d+)', template);
    expectError(refused, 400, 'BAD_REQUEST', 'Invalid URL template.');
    expect(refused.body.errors).toEqual({ url_template: ['Invalid URL template.'] });
  }
  const safe = await add('TEL-(?P<id>\\d+)', 'tel:{id}');
  expect(safe.status).toBe(200);
  const edit = { pattern: 'TEL-(?P<id>\\d+)', url_template: 'javascript:{id}' };
  const edited = await cast.admin.client.patch(`/api/v1/realm/filters/${safe.body.id}`, edit);
  expectError(edited, 400, 'BAD_REQUEST', 'Invalid URL template.');
  expect((await add('!(?P<url>\\S+)', '{+url}')).status).toBe(200);
  expect((await add('MAIL-(?P<id>\\d+)', 'mailto:desk+{id}@example.com')).status).toBe(200);
});
