// Code playgrounds: POST /realm/playgrounds and DELETE /realm/playgrounds/{id} (administrators),
// Zulip's validation, realm_playgrounds events to everyone and register's realm_playgrounds.
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue } from '@teamchat/testing';
import { activeIds, createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

test('administrators add and remove playgrounds; everyone gets the whole list; register lists them', async () => {
  let python = 0;
  let rust = 0;
  const added = await captureEvents(stack, async () => {
    const response = await cast.admin.client.post('/api/v1/realm/playgrounds', {
      name: ' Python playground ',
      pygments_language: 'python ',
      url_template: 'https://python.example.com/?code={code}',
    });
    expect(response.body).toEqual({ result: 'success', msg: '', id: expect.any(Number) });
    python = response.body.id;
    rust = (
      await cast.owner.client.post('/api/v1/realm/playgrounds', {
        name: 'Rust playground',
        pygments_language: 'rust',
        url_template: 'https://play.rust-lang.org/?edition=2021&code{?code}',
      })
    ).body.id;
  });
  const pythonDict = {
    id: python,
    name: 'Python playground',
    pygments_language: 'python',
    url_template: 'https://python.example.com/?code={code}',
  };
  const rustDict = {
    id: rust,
    name: 'Rust playground',
    pygments_language: 'rust',
    url_template: 'https://play.rust-lang.org/?edition=2021&code{?code}',
  };
  const events = ofType(added, 'realm_playgrounds');
  expect(events.map((e) => e.event)).toEqual([
    { type: 'realm_playgrounds', realm_playgrounds: [pythonDict] },
    { type: 'realm_playgrounds', realm_playgrounds: [pythonDict, rustDict] },
  ]);
  expect(events[0].recipientIds).toEqual(await activeIds(stack));
  const state = (await registerEventQueue(cast.guest.client, { fetch_event_types: ['realm_playgrounds'] }))
    .registration;
  expect(state.realm_playgrounds).toEqual([pythonDict, rustDict]);

  const removed = await captureEvents(stack, async () => {
    expect((await cast.admin.client.delete(`/api/v1/realm/playgrounds/${python}`)).body).toEqual({
      result: 'success',
      msg: '',
    });
  });
  expect(ofType(removed, 'realm_playgrounds')[0].event).toEqual({
    type: 'realm_playgrounds',
    realm_playgrounds: [rustDict],
  });
  expectError(
    await cast.admin.client.delete(`/api/v1/realm/playgrounds/${python}`),
    400,
    'BAD_REQUEST',
    'Invalid playground',
  );
  await cast.admin.client.delete(`/api/v1/realm/playgrounds/${rust}`);
  expect(await stack.db.realmPlayground.count({ where: { realm_id: stack.realm.id } })).toBe(0);
});

test('only administrators', async () => {
  const params = { name: 'Go', pygments_language: 'go', url_template: 'https://go.dev/play/?code={code}' };
  for (const user of [cast.moderator, cast.member, cast.guest]) {
    expectError(
      await user.client.post('/api/v1/realm/playgrounds', params),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  }
  const id = (await cast.admin.client.post('/api/v1/realm/playgrounds', params)).body.id;
  expectError(
    await cast.member.client.delete(`/api/v1/realm/playgrounds/${id}`),
    400,
    'UNAUTHORIZED_PRINCIPAL',
    'Must be an organization administrator',
  );
  await cast.admin.client.delete(`/api/v1/realm/playgrounds/${id}`);
});

const valid = { name: 'Kotlin', pygments_language: 'kotlin', url_template: 'https://k.example/{code}' };
test.each([
  ['Missing the required variable "code" in the URL template', { url_template: 'https://k.example/{text}' }, '__all__'],
  [
    '"code" should be the only variable present in the URL template',
    { url_template: 'https://k.example/{code}/{x}' },
    '__all__',
  ],
  ['Invalid URL template.', { url_template: 'https://k.example/{code' }, 'url_template'],
  ['Invalid URL template.', { url_template: 'javascript:alert({code})' }, 'url_template'],
  ['This field cannot be blank.', { url_template: '  ' }, 'url_template'],
  ['This field cannot be blank.', { name: '' }, 'name'],
  ['This field cannot be blank.', { pygments_language: ' ' }, 'pygments_language'],
  ['Invalid characters in pygments language', { pygments_language: 'kot$lin' }, null],
  ['pygments_language is too long (limit: 40 characters)', { pygments_language: 'k'.repeat(41) }, null],
] as const)('refused: %s (%j)', async (message, change, field) => {
  const response = await cast.admin.client.post('/api/v1/realm/playgrounds', { ...valid, ...change });
  expectError(response, 400, 'BAD_REQUEST', message);
  if (field) expect(response.body.errors).toEqual({ [field]: [message] });
  else expect(response.body.errors).toBeUndefined();
});

test("Zulip's language pattern: upper case (lexer names), and the range +-. (so a comma)", async () => {
  for (const pygments_language of ['Python', 'C++', 'objective-c', 'a,b', 'F#', 'text/x.y']) {
    const response = await cast.admin.client.post('/api/v1/realm/playgrounds', {
      ...valid,
      name: `Pattern ${pygments_language}`,
      pygments_language,
    });
    expect(response.status).toBe(200);
  }
  for (const pygments_language of ['py$', 'py*', 'py:', 'py\\', 'пайтон']) {
    expectError(
      await cast.admin.client.post('/api/v1/realm/playgrounds', { ...valid, pygments_language }),
      400,
      'BAD_REQUEST',
      'Invalid characters in pygments language',
    );
  }
});

test('a language and name pair is unique in the realm', async () => {
  const params = { name: 'Scala', pygments_language: 'scala', url_template: 'https://scastie.example/{code}' };
  expect((await cast.admin.client.post('/api/v1/realm/playgrounds', params)).status).toBe(200);
  const again = await cast.admin.client.post('/api/v1/realm/playgrounds', params);
  expectError(
    again,
    400,
    'BAD_REQUEST',
    'Realm playground with this Realm, Pygments language and Name already exists.',
  );
  expect((await cast.admin.client.post('/api/v1/realm/playgrounds', { ...params, name: 'Scala 3' })).status).toBe(200);
});
