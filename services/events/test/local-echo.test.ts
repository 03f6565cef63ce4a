// Local echo (spec "Send a message": queue_id and local_id): the message event reaching the queue
// the sender named carries local_message_id; no other queue's copy does.
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, settleEvents } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events', 'messages'] });
});
afterAll(() => stack.close());

const messageQueue = (client: Parameters<typeof registerEventQueue>[0]) =>
  registerEventQueue(client, { event_types: ['message'], fetch_event_types: [] });

test("the sender's queue named by queue_id gets local_message_id; the sender's other queue and the recipient's do not", async () => {
  const alice = await stack.createUser();
  const bob = await stack.createUser();
  const echoing = await messageQueue(alice.client);
  const otherTab = await messageQueue(alice.client);
  const bobs = await messageQueue(bob.client);

  const sent = await alice.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify([bob.id]),
    content: 'echo me',
    queue_id: echoing.queueId,
    local_id: '100.01',
  });
  expect(sent.status).toBe(200);

  const [own] = await echoing.next(1);
  expect(own).toMatchObject({
    type: 'message',
    local_message_id: '100.01',
    message: { id: sent.body.id, content: 'echo me' },
  });
  const [other] = await otherTab.next(1);
  expect(other.message.id).toBe(sent.body.id);
  expect(other).not.toHaveProperty('local_message_id');
  const [received] = await bobs.next(1);
  expect(received.message.id).toBe(sent.body.id);
  expect(received).not.toHaveProperty('local_message_id');
  // Everything else is the same event.
  const { local_message_id: _local, ...ownRest } = own;
  expect(ownRest).toEqual(other);
  for (const event of [own, other, received]) {
    expect(event).not.toHaveProperty('_local_id');
    expect(event).not.toHaveProperty('_sender_queue_id');
  }
});

test("local_id comes back only to the sender's own queue, and only when both queue_id and local_id were sent", async () => {
  const alice = await stack.createUser();
  const bob = await stack.createUser();
  const alices = await messageQueue(alice.client);
  const bobs = await messageQueue(bob.client);

  // queue_id names another user's queue: nobody gets the local id.
  const foreign = await alice.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify([bob.id]),
    content: 'one',
    queue_id: bobs.queueId,
    local_id: '7.01',
  });
  // queue_id without local_id: nothing to give back.
  const withoutLocalId = await alice.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify([bob.id]),
    content: 'two',
    queue_id: alices.queueId,
  });
  expect([foreign.status, withoutLocalId.status]).toEqual([200, 200]);
  await settleEvents(stack);

  const events = [...(await alices.drain()), ...(await bobs.drain())];
  expect(events.map((event) => event.message.id).sort()).toEqual(
    [foreign.body.id, foreign.body.id, withoutLocalId.body.id, withoutLocalId.body.id].sort(),
  );
  for (const event of events) expect(event).not.toHaveProperty('local_message_id');
});
