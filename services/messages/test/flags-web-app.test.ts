// The flag answers as Zulip 10.2's server gives them and its web app parses them
// (web/src/unread_ops.ts): ignored_because_not_subscribed_channels is always there, empty but
// for marking unread. Without it, marking a topic as read from the web app's inbox is a ZodError.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { sendMessage } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let general: { id: number; name: string };

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
});
afterAll(() => stack.close());

function send(content: string): Promise<number> {
  return sendMessage(alice, { type: 'stream', to: general.id, topic: 'lunch', content });
}

const topicNarrow = () => [
  { operator: 'channel', operand: general.id },
  { operator: 'topic', operand: 'lunch' },
];

test('marking a topic read over its narrow answers the skipped channels, none', async () => {
  const id = await send('pizza?');
  const answer = await bob.client.post('/api/v1/messages/flags/narrow', {
    anchor: 'oldest',
    num_before: 0,
    num_after: 1000,
    narrow: topicNarrow(),
    op: 'add',
    flag: 'read',
  });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({
    processed_count: 1,
    updated_count: 1,
    first_processed_id: id,
    last_processed_id: id,
    found_oldest: true,
    found_newest: true,
    ignored_because_not_subscribed_channels: [],
  });
});

test('starring by ids answers the skipped channels too, none', async () => {
  const id = await send('sushi?');
  const answer = await bob.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ messages: [id], ignored_because_not_subscribed_channels: [] });
});

test('marking unread in a channel one left lists it, over a narrow and by ids', async () => {
  const id = await send('tacos?');
  const left = await bob.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [general.name] });
  expect(left.status).toBe(200);
  const byIds = await bob.client.post('/api/v1/messages/flags', { messages: [id], op: 'remove', flag: 'read' });
  expect(byIds.body.ignored_because_not_subscribed_channels).toEqual([general.id]);
  const overNarrow = await bob.client.post('/api/v1/messages/flags/narrow', {
    anchor: id,
    num_before: 0,
    num_after: 0,
    narrow: topicNarrow(),
    op: 'remove',
    flag: 'read',
  });
  expect(overNarrow.body.ignored_because_not_subscribed_channels).toEqual([general.id]);
});
