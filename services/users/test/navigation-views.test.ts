import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType } from '@teamchat/testing';
import { createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
});
afterAll(() => stack.close());

test('add, list, update and remove, each announced to the user alone', async () => {
  const client = cast.member.client;
  const captured = await captureEvents(stack, async () => {
    expect(
      (await client.post('/api/v1/navigation_views', { fragment: 'narrow/is/starred', is_pinned: false })).body,
    ).toEqual({ result: 'success', msg: '' });
    expect(
      (
        await client.post('/api/v1/navigation_views', {
          fragment: 'narrow/channel/5-design',
          is_pinned: true,
          name: ' Design ',
        })
      ).status,
    ).toBe(200);
    expect((await client.get('/api/v1/navigation_views')).body.navigation_views).toEqual([
      { fragment: 'narrow/is/starred', is_pinned: false, name: null },
      { fragment: 'narrow/channel/5-design', is_pinned: true, name: 'Design' },
    ]);
    // Fragments with slashes work in the path, raw or %2F-encoded.
    expect(
      (
        await client.patch('/api/v1/navigation_views/narrow/channel/5-design', {
          name: 'Design team',
          is_pinned: false,
        })
      ).status,
    ).toBe(200);
    expect((await client.patch('/api/v1/navigation_views/narrow%2Fis%2Fstarred', { is_pinned: true })).status).toBe(
      200,
    );
    expect((await client.delete('/api/v1/navigation_views/narrow/channel/5-design')).status).toBe(200);
    expect((await client.get('/api/v1/navigation_views')).body.navigation_views).toEqual([
      { fragment: 'narrow/is/starred', is_pinned: true, name: null },
    ]);
    // Others have their own.
    expect((await cast.admin.client.get('/api/v1/navigation_views')).body.navigation_views).toEqual([]);
  });
  const events = ofType(captured, 'navigation_view');
  expect(events.map((e) => e.event)).toEqual([
    {
      type: 'navigation_view',
      op: 'add',
      navigation_view: { fragment: 'narrow/is/starred', is_pinned: false, name: null },
    },
    {
      type: 'navigation_view',
      op: 'add',
      navigation_view: { fragment: 'narrow/channel/5-design', is_pinned: true, name: 'Design' },
    },
    {
      type: 'navigation_view',
      op: 'update',
      fragment: 'narrow/channel/5-design',
      data: { name: 'Design team', is_pinned: false },
    },
    { type: 'navigation_view', op: 'update', fragment: 'narrow/is/starred', data: { is_pinned: true } },
    { type: 'navigation_view', op: 'remove', fragment: 'narrow/channel/5-design' },
  ]);
  for (const event of events) expect(event.recipientIds).toEqual([cast.member.id]);
});

test("Zulip's refusals", async () => {
  const client = cast.guest.client;
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: '   ', is_pinned: true }),
    400,
    'BAD_REQUEST',
    'fragment cannot be blank',
  );
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: 'inbox', is_pinned: true, name: 'Mine' }),
    400,
    'BAD_REQUEST',
    'Built-in views cannot have a custom name.',
  );
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: 'narrow/custom', is_pinned: true }),
    400,
    'BAD_REQUEST',
    'Custom views must have a valid name.',
  );
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: 'narrow/custom', is_pinned: true, name: ' ' }),
    400,
    'BAD_REQUEST',
    'name cannot be blank',
  );
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: 'inbox' }),
    400,
    'REQUEST_VARIABLE_MISSING',
    "Missing 'is_pinned' argument",
  );
  expect((await client.post('/api/v1/navigation_views', { fragment: 'inbox', is_pinned: true })).status).toBe(200);
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: 'inbox', is_pinned: false }),
    400,
    'BAD_REQUEST',
    'Navigation view already exists.',
  );
  expect(
    (await client.post('/api/v1/navigation_views', { fragment: 'narrow/a', is_pinned: true, name: 'Same' })).status,
  ).toBe(200);
  expectError(
    await client.post('/api/v1/navigation_views', { fragment: 'narrow/b', is_pinned: true, name: 'Same' }),
    400,
    'BAD_REQUEST',
    'Navigation view already exists.',
  );
  expectError(
    await client.patch('/api/v1/navigation_views/inbox', { name: 'Renamed' }),
    400,
    'BAD_REQUEST',
    'Built-in views cannot have a custom name.',
  );
  expectError(
    await client.patch('/api/v1/navigation_views/narrow/missing', { is_pinned: true }),
    404,
    'BAD_REQUEST',
    'Navigation view does not exist.',
  );
  expectError(
    await client.delete('/api/v1/navigation_views/narrow/missing'),
    404,
    'BAD_REQUEST',
    'Navigation view does not exist.',
  );
  // A bot has navigation views of its own too.
  expect((await cast.bot.client.post('/api/v1/navigation_views', { fragment: 'recent', is_pinned: true })).status).toBe(
    200,
  );
});
