// The messages service's events and register state through the real event tier
// (POST /register, GET /events): what clients actually receive.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
});
afterAll(() => stack.close());

test('a message event reaches each recipient finalized with their own flags', async () => {
  const stream = await stack.createStream({ name: 'events', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  const queue = await registerEventQueue(bob.client, {
    event_types: JSON.stringify(['message']),
    apply_markdown: true,
    client_gravatar: false,
  });
  const rawQueue = await registerEventQueue(alice.client, {
    event_types: JSON.stringify(['message']),
    apply_markdown: false,
    client_capabilities: JSON.stringify({ empty_topic_name: true }),
  });
  const id = (
    await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: '',
      content: 'hi @**Bob Dylan**',
    })
  ).body.id;

  const [event] = await queue.next();
  expect(event).toMatchObject({
    type: 'message',
    flags: ['mentioned'],
    message: {
      id,
      content: `<p>hi <span class="user-mention" data-user-id="${bob.id}">@Bob Dylan</span></p>`,
      content_type: 'text/html',
      subject: 'general chat',
      avatar_url: expect.stringMatching(/^https:/),
      stream_id: stream.id,
    },
  });
  expect(event.message).not.toHaveProperty('rendered_content');
  const [own] = await rawQueue.next();
  expect(own).toMatchObject({
    type: 'message',
    flags: [],
    message: { id, content: 'hi @**Bob Dylan**', content_type: 'text/x-markdown', subject: '' },
  });

  // Carol is not subscribed: nothing for her.
  const carolQueue = await registerEventQueue(carol.client, { event_types: JSON.stringify(['message']) });
  await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'again' });
  await settleEvents(stack);
  expect(await carolQueue.drain()).toEqual([]);
});

test('register: max_message_id, unread_msgs, starred_messages, recent_private_conversations, drafts', async () => {
  const dave = await stack.createUser({ fullName: 'Dave Reader' });
  const stream = await stack.createStream({ name: 'state', creatorId: alice.id, subscribers: [alice.id, dave.id] });
  const inStream = (
    await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: '',
      content: '@**Dave Reader** look',
    })
  ).body.id;
  const direct = (await alice.client.post('/api/v1/messages', { type: 'direct', to: [dave.id], content: 'dm' })).body
    .id;
  const group = (
    await bob.client.post('/api/v1/messages', { type: 'direct', to: [dave.id, carol.id], content: 'group' })
  ).body.id;
  await dave.client.post('/api/v1/messages/flags', { messages: [direct], op: 'add', flag: 'starred' });
  await dave.client.post('/api/v1/drafts', {
    drafts: JSON.stringify([{ type: 'stream', to: [stream.id], topic: 'later', content: 'unsent' }]),
  });

  const queue = await registerEventQueue(dave.client, {
    // unread_msgs comes with message AND update_message_flags, as in Zulip (zulip-terminal relies on it).
    fetch_event_types: JSON.stringify([
      'message',
      'update_message_flags',
      'starred_messages',
      'recent_private_conversations',
      'drafts',
    ]),
  });
  const state = queue.registration;
  expect(state.max_message_id).toBe(group);
  const groupKey = [bob.id, carol.id, dave.id].sort((a, b) => a - b).join(',');
  expect(state.unread_msgs).toEqual({
    count: 3,
    pms: [{ other_user_id: alice.id, sender_id: alice.id, unread_message_ids: [direct] }],
    streams: [{ stream_id: stream.id, topic: 'general chat', unread_message_ids: [inStream] }],
    huddles: [{ user_ids_string: groupKey, unread_message_ids: [group] }],
    mentions: [inStream],
    old_unreads_missing: false,
  });
  expect(state.starred_messages).toEqual([direct]);
  expect(state.recent_private_conversations).toEqual([
    { max_message_id: group, user_ids: [bob.id, carol.id].sort((a, b) => a - b) },
    { max_message_id: direct, user_ids: [alice.id] },
  ]);
  expect(state.drafts).toEqual([
    {
      id: expect.any(Number),
      type: 'stream',
      to: [stream.id],
      topic: 'later',
      content: 'unsent',
      timestamp: expect.any(Number),
    },
  ]);

  const messagesOnly = await registerEventQueue(dave.client, { fetch_event_types: JSON.stringify(['message']) });
  expect(messagesOnly.registration.max_message_id).toBe(group);
  expect(messagesOnly.registration).not.toHaveProperty('unread_msgs');

  const withEmptyTopics = await registerEventQueue(dave.client, {
    fetch_event_types: JSON.stringify(['message', 'update_message_flags']),
    client_capabilities: JSON.stringify({ empty_topic_name: true }),
  });
  expect(withEmptyTopics.registration.unread_msgs.streams[0].topic).toBe('');
});

test('flag events and the typing capability', async () => {
  const stream = await stack.createStream({
    name: 'typing events',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  const id = (await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'x' }))
    .body.id;
  const queue = await registerEventQueue(bob.client, {
    event_types: JSON.stringify(['update_message_flags', 'typing']),
    client_capabilities: JSON.stringify({ stream_typing_notifications: true }),
  });
  await bob.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await alice.client.post('/api/v1/typing', { type: 'stream', op: 'start', stream_id: stream.id, topic: 't' });
  const events = await queue.next(2);
  expect(events[0]).toMatchObject({
    type: 'update_message_flags',
    op: 'add',
    flag: 'read',
    messages: [id],
    all: false,
  });
  expect(events[1]).toMatchObject({
    type: 'typing',
    message_type: 'stream',
    op: 'start',
    stream_id: stream.id,
    topic: 't',
    sender: { user_id: alice.id },
  });
  expectError(
    await bob.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'bad' }),
    400,
    'BAD_REQUEST',
    "Invalid flag: 'bad'",
  );
});
