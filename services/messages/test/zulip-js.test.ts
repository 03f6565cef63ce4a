// A real client: zulip-js (multipart POST bodies, GET parameters in the query string) sends,
// fetches, flags, marks all read and types through the gateway.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zulipInit = require('zulip-js') as (config: { username: string; apiKey: string; realm: string }) => Promise<any>;

let stack: Stack;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'worker'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
});
afterAll(() => stack.close());

const clientFor = (user: TestUser) => zulipInit({ username: user.email, apiKey: user.apiKey, realm: stack.gatewayUrl });

test('send, fetch, flag, mark all read and type with zulip-js', async () => {
  const stream = await stack.createStream({ name: 'zulip-js', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  const aliceJs = await clientFor(alice);
  const bobJs = await clientFor(bob);

  const sent = await aliceJs.messages.send({
    to: stream.name,
    type: 'stream',
    topic: 'from zulip-js',
    content: 'Hello **world**',
  });
  expect(sent).toEqual({ result: 'success', msg: '', id: expect.any(Number) });
  const direct = await aliceJs.messages.send({ to: [bob.id], type: 'private', content: 'just you' });
  expect(direct.result).toBe('success');

  const fetched = await bobJs.messages.retrieve({
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: 'channel', operand: stream.name }],
  });
  expect(fetched.result).toBe('success');
  expect(fetched.messages.map((message: { id: number }) => message.id)).toEqual([sent.id]);
  expect(fetched.messages[0]).toMatchObject({
    content: '<p>Hello <strong>world</strong></p>',
    subject: 'from zulip-js',
    flags: [],
  });

  const one = await bobJs.messages.getById({ message_id: direct.id });
  expect(one).toMatchObject({
    result: 'success',
    raw_content: 'just you',
    message: { id: direct.id, type: 'private' },
  });

  expect(await bobJs.messages.flags.add({ flag: 'starred', messages: [sent.id] })).toMatchObject({
    result: 'success',
    messages: [sent.id],
  });
  const starred = await bobJs.messages.retrieve({
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: 'is', operand: 'starred' }],
  });
  expect(starred.messages.map((message: { id: number; flags: string[] }) => [message.id, message.flags])).toEqual([
    [sent.id, ['starred']],
  ]);
  expect(await bobJs.messages.flags.remove({ flag: 'starred', messages: [sent.id] })).toMatchObject({
    result: 'success',
  });

  // zulip-js has no helper for this endpoint. (With no parameters at all it sends a multipart body
  // holding only the closing boundary, which the shared body parser refuses; hence one field.)
  expect(await bobJs.callEndpoint('/mark_all_as_read', 'POST', { client: 'zulip-js' })).toMatchObject({
    result: 'success',
    complete: true,
  });
  const unread = await bobJs.messages.retrieve({
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: 'is', operand: 'unread' }],
  });
  expect(unread.messages).toEqual([]);

  expect(await aliceJs.typing.send({ to: [bob.id], op: 'start' })).toMatchObject({ result: 'success' });
});

test('react, edit, read the history and delete with zulip-js', async () => {
  const stream = await stack.createStream({
    name: 'zulip-js edits',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  const aliceJs = await clientFor(alice);
  const bobJs = await clientFor(bob);
  const sent = await aliceJs.messages.send({
    to: stream.name,
    type: 'stream',
    topic: 'draft',
    content: 'first version',
  });

  expect(await bobJs.reactions.add({ message_id: sent.id, emoji_name: 'octopus' })).toMatchObject({
    result: 'success',
  });
  expect(await bobJs.reactions.add({ message_id: sent.id, emoji_name: 'octopus' })).toMatchObject({
    result: 'error',
    code: 'REACTION_ALREADY_EXISTS',
  });
  const reacted = await aliceJs.messages.getById({ message_id: sent.id });
  expect(reacted.message.reactions).toEqual([
    { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji', user_id: bob.id },
  ]);
  expect(await bobJs.reactions.remove({ message_id: sent.id, emoji_name: 'octopus' })).toMatchObject({
    result: 'success',
  });

  expect(
    await aliceJs.messages.update({ message_id: sent.id, content: 'second version', topic: 'final' }),
  ).toMatchObject({ result: 'success', detached_uploads: [] });
  const history = await bobJs.messages.getHistoryById({ message_id: sent.id });
  expect(
    history.message_history.map((snapshot: { content: string; topic: string }) => [snapshot.content, snapshot.topic]),
  ).toEqual([
    ['first version', 'draft'],
    ['second version', 'final'],
  ]);

  expect(await bobJs.messages.deleteById({ message_id: sent.id })).toMatchObject({
    result: 'error',
    msg: "You don't have permission to delete this message",
  });
  expect(await aliceJs.messages.deleteById({ message_id: sent.id })).toMatchObject({ result: 'success' });
  expect(await aliceJs.messages.getById({ message_id: sent.id })).toMatchObject({
    result: 'error',
    msg: 'Invalid message(s)',
  });
});
