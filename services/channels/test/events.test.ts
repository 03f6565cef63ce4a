// Through the real event tier: what a client registered with /register receives for channel
// actions (every response, /register and /events included, is checked against zulip.yaml).
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, settleEvents } from '@teamchat/testing';
import { Role } from '@teamchat/domain';
import { insertMessages, uniqueName } from './helpers';

let stack: Stack;
let owner: TestUser;
let member: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'events', 'worker'] });
  owner = await stack.createUser({ role: Role.OWNER });
  member = await stack.createUser({ role: Role.MEMBER });
});
afterAll(async () => stack?.close());

test('register state and the events of subscribing, updating, muting and deleting a topic', async () => {
  const name = uniqueName('live');
  const queue = await registerEventQueue(member.client, {
    event_types: ['subscription', 'stream', 'user_topic', 'delete_message'],
    include_subscribers: true,
    client_capabilities: { bulk_message_deletion: true },
  });
  expect(queue.registration.subscriptions).toEqual([]);

  await owner.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name }],
    principals: [owner.id, member.id],
  });
  const [create, add] = await queue.next(2);
  expect(create).toMatchObject({ type: 'stream', op: 'create', streams: [{ name, invite_only: false }] });
  const streamId = create.streams[0].stream_id;
  expect(add).toMatchObject({
    type: 'subscription',
    op: 'add',
    subscriptions: [{ stream_id: streamId, name, subscribers: [owner.id, member.id] }],
  });

  await owner.client.patch(`/api/v1/streams/${streamId}`, { description: 'Live **now**', new_name: `${name}!` });
  const [description, rename] = await queue.next(2);
  expect(description).toMatchObject({
    type: 'stream',
    op: 'update',
    property: 'description',
    value: 'Live **now**',
    rendered_description: '<p>Live <strong>now</strong></p>',
  });
  expect(rename).toMatchObject({ type: 'stream', op: 'update', property: 'name', value: `${name}!`, name });

  await member.client.post('/api/v1/user_topics', { stream_id: streamId, topic: 'news', visibility_policy: 3 });
  expect(await queue.next(1)).toEqual([
    expect.objectContaining({ type: 'user_topic', stream_id: streamId, topic_name: 'news', visibility_policy: 3 }),
  ]);

  // An older message elsewhere stays the channel's first (zulip.yaml 10.2 has no null value
  // for the stream update event first_message_id would otherwise send).
  await insertMessages(stack, {
    streamId,
    senderId: owner.id,
    topic: 'older',
    count: 1,
    recipients: [owner.id, member.id],
  });
  const ids = await insertMessages(stack, {
    streamId,
    senderId: owner.id,
    topic: 'news',
    count: 120,
    recipients: [owner.id, member.id],
  });
  expect(
    (await owner.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: 'news' })).body.complete,
  ).toBe(true);
  const deletions = await queue.next(3);
  expect(deletions.map((e) => e.type)).toEqual(['delete_message', 'delete_message', 'user_topic']);
  expect([...deletions[1].message_ids, ...deletions[0].message_ids]).toEqual(ids);
  expect(deletions[2]).toMatchObject({ stream_id: streamId, topic_name: 'news', visibility_policy: 0 });

  await member.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [`${name}!`] });
  expect(await queue.next(1)).toEqual([
    expect.objectContaining({
      type: 'subscription',
      op: 'remove',
      subscriptions: [{ name: `${name}!`, stream_id: streamId }],
    }),
  ]);
  await settleEvents(stack);
  expect(await queue.drain()).toEqual([]);

  // A new registration sees the state those events led to.
  const fresh = await registerEventQueue(member.client, { event_types: ['subscription', 'stream', 'user_topic'] });
  expect(fresh.registration.unsubscribed).toEqual([expect.objectContaining({ stream_id: streamId, name: `${name}!` })]);
  expect(fresh.registration.user_topics).toEqual([]);
});
