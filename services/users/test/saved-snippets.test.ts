// Saved snippets: GET/POST /saved_snippets, PATCH/DELETE /saved_snippets/{id}, the
// saved_snippets events (to the owner only) and register's saved_snippets.
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
});
afterAll(() => stack.close());

test('create, edit, list, register and delete; each change is an event to the owner', async () => {
  const user = await stack.createUser();
  let id = 0;
  const created = await captureEvents(stack, async () => {
    const response = await user.client.post('/api/v1/saved_snippets', {
      title: '  Welcome ',
      content: ' Welcome to the organization.\n',
    });
    expect(response.body).toEqual({ result: 'success', msg: '', saved_snippet_id: expect.any(Number) });
    id = response.body.saved_snippet_id;
  });
  const snippet = {
    id,
    title: 'Welcome',
    content: 'Welcome to the organization.',
    date_created: expect.any(Number),
  };
  const [add] = ofType(created, 'saved_snippets', 'add');
  expect(add.event).toEqual({ type: 'saved_snippets', op: 'add', saved_snippet: snippet });
  expect(add.recipientIds).toEqual([user.id]);
  expect(Math.abs(add.event.saved_snippet.date_created - Date.now() / 1000)).toBeLessThan(60);

  const edited = await captureEvents(stack, async () => {
    expect((await user.client.patch(`/api/v1/saved_snippets/${id}`, { content: 'Hello!' })).status).toBe(200);
  });
  expect(ofType(edited, 'saved_snippets', 'update')[0].event).toEqual({
    type: 'saved_snippets',
    op: 'update',
    saved_snippet: { ...snippet, content: 'Hello!' },
  });
  // Nothing to change: success, no event.
  const idle = await captureEvents(stack, async () => {
    expect((await user.client.patch(`/api/v1/saved_snippets/${id}`)).status).toBe(200);
  });
  expect(ofType(idle, 'saved_snippets')).toEqual([]);

  const second = (await user.client.post('/api/v1/saved_snippets', { title: 'Bye', content: 'See you' })).body
    .saved_snippet_id;
  const listed = (await user.client.get('/api/v1/saved_snippets')).body.saved_snippets;
  expect(listed).toEqual([
    { ...snippet, content: 'Hello!' },
    { id: second, title: 'Bye', content: 'See you', date_created: expect.any(Number) },
  ]);
  const state = (await registerEventQueue(user.client, { fetch_event_types: ['saved_snippets'] })).registration;
  expect(state.saved_snippets).toEqual(listed);

  const removed = await captureEvents(stack, async () => {
    expect((await user.client.delete(`/api/v1/saved_snippets/${id}`)).status).toBe(200);
  });
  expect(ofType(removed, 'saved_snippets', 'remove')[0].event).toEqual({
    type: 'saved_snippets',
    op: 'remove',
    saved_snippet_id: id,
  });
  expect(await stack.db.savedSnippet.findMany({ where: { user_profile_id: user.id }, select: { id: true } })).toEqual([
    { id: second },
  ]);
});

test("another user's snippet does not exist for you", async () => {
  const owner = await stack.createUser();
  const other = await stack.createUser();
  const id = (await owner.client.post('/api/v1/saved_snippets', { title: 'Mine', content: 'x' })).body.saved_snippet_id;
  expectError(
    await other.client.patch(`/api/v1/saved_snippets/${id}`, { title: 'Yours' }),
    404,
    'BAD_REQUEST',
    'Saved snippet does not exist.',
  );
  expectError(
    await other.client.delete(`/api/v1/saved_snippets/${id}`),
    404,
    'BAD_REQUEST',
    'Saved snippet does not exist.',
  );
  expect((await other.client.get('/api/v1/saved_snippets')).body.saved_snippets).toEqual([]);
  expect((await owner.client.get('/api/v1/saved_snippets')).body.saved_snippets[0].title).toBe('Mine');
});

test.each([
  ['Title cannot be empty.', 'BAD_REQUEST', { title: '   ', content: 'x' }],
  ['Content cannot be empty.', 'BAD_REQUEST', { title: 'x', content: '\n' }],
  ['title is too long (limit: 60 characters)', 'BAD_REQUEST', { title: 'x'.repeat(61), content: 'x' }],
  ['content is too long (limit: 10000 characters)', 'BAD_REQUEST', { title: 'x', content: 'y'.repeat(10001) }],
  ["Missing 'content' argument", 'REQUEST_VARIABLE_MISSING', { title: 'x' }],
] as const)('creating is refused: %s', async (message, code, params) => {
  const user = await stack.createUser();
  expectError(await user.client.post('/api/v1/saved_snippets', params), 400, code, message);
});

test('editing to an empty title is refused', async () => {
  const user = await stack.createUser();
  const id = (await user.client.post('/api/v1/saved_snippets', { title: 'A', content: 'B' })).body.saved_snippet_id;
  expectError(
    await user.client.patch(`/api/v1/saved_snippets/${id}`, { title: '' }),
    400,
    'BAD_REQUEST',
    'Title cannot be empty.',
  );
});
