// Emoji reactions: POST/DELETE /messages/{id}/reactions, with Zulip's errors, the `reaction`
// events and their recipients, historical rows for readers, and reactions in fetched messages.
import { MessageFlag, Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue, sendMessage } from '@teamchat/testing';
import { sorted } from './helpers';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let guest: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  guest = await stack.createUser({ fullName: 'Guest Star', role: Role.GUEST });
});
afterAll(() => stack.close());

const react = (user: TestUser, id: number, params: Record<string, unknown>) =>
  user.client.post(`/api/v1/messages/${id}/reactions`, params as never);
const unreact = (user: TestUser, id: number, params: Record<string, unknown>) =>
  user.client.delete(`/api/v1/messages/${id}/reactions`, params as never);
const reactionsOf = async (user: TestUser, id: number) =>
  (await user.client.get(`/api/v1/messages/${id}`)).body.message.reactions;

describe('adding', () => {
  test('by name only: the code and type are looked up; the event goes to everyone who has the message', async () => {
    const stream = await stack.createStream({ name: 'reacting', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'hello' });
    const captured = await captureEvents(stack, async () => {
      expect((await react(bob, id, { emoji_name: 'octopus' })).body).toEqual({ result: 'success', msg: '' });
    });
    const [event] = ofType(captured, 'reaction');
    expect(event.event).toEqual({
      type: 'reaction',
      op: 'add',
      user_id: bob.id,
      user: { user_id: bob.id, email: bob.email, full_name: 'Bob Dylan' },
      message_id: id,
      emoji_name: 'octopus',
      emoji_code: '1f419',
      reaction_type: 'unicode_emoji',
    });
    expect(event.recipientIds).toEqual(sorted([alice.id, bob.id]));
    expect(await reactionsOf(alice, id)).toEqual([
      { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji', user_id: bob.id },
    ]);
  });

  test('with a code: any well-formed name is accepted (Zulip names differ from iamcal); zulip_extra_emoji', async () => {
    const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'dm' });
    expect(
      (await react(bob, id, { emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji' })).status,
    ).toBe(200);
    expect(
      (await react(bob, id, { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' })).status,
    ).toBe(200);
    expect((await react(alice, id, { emoji_name: 'zulip' })).status).toBe(200);
    expect(await reactionsOf(bob, id)).toEqual([
      { emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji', user_id: bob.id },
      { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji', user_id: bob.id },
      { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji', user_id: alice.id },
    ]);
    // GET /messages carries them too.
    const fetched = await bob.client.get('/api/v1/messages', { anchor: id, num_before: 0, num_after: 0 });
    expect(fetched.body.messages[0].reactions).toHaveLength(3);
  });

  test("a vote for an existing reaction takes that reaction's name", async () => {
    const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'vote' });
    await react(alice, id, { emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji' });
    const captured = await captureEvents(stack, async () => {
      expect((await react(bob, id, { emoji_name: '+1' })).status).toBe(200);
    });
    const [event] = ofType(captured, 'reaction');
    expect(event.event).toMatchObject({ emoji_name: 'thumbs_up', emoji_code: '1f44d', user_id: bob.id });
  });

  test("Zulip's errors", async () => {
    const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'errors' });
    await react(bob, id, { emoji_name: 'tada' });
    expectError(
      await react(bob, id, { emoji_name: 'tada' }),
      400,
      'REACTION_ALREADY_EXISTS',
      'Reaction already exists.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'no_such_emoji_here' }),
      400,
      'BAD_REQUEST',
      "Emoji 'no_such_emoji_here' does not exist",
    );
    expectError(
      await react(bob, id, { emoji_name: 'x', emoji_code: '1F600', reaction_type: 'unicode_emoji' }),
      400,
      'BAD_REQUEST',
      'Invalid emoji code.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'x', emoji_code: 'd800', reaction_type: 'unicode_emoji' }),
      400,
      'BAD_REQUEST',
      'Invalid emoji code.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'Not A Name', emoji_code: '1f600', reaction_type: 'unicode_emoji' }),
      400,
      'BAD_REQUEST',
      'Invalid emoji name.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'zulip', emoji_code: 'other', reaction_type: 'zulip_extra_emoji' }),
      400,
      'BAD_REQUEST',
      'Invalid emoji code.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'zulipp', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' }),
      400,
      'BAD_REQUEST',
      'Invalid emoji name.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'party', emoji_code: '12', reaction_type: 'realm_emoji' }),
      400,
      'BAD_REQUEST',
      'Invalid custom emoji.',
    );
    expectError(
      await react(bob, id, { emoji_name: 'x', emoji_code: '1f600', reaction_type: 'weird' }),
      400,
      'BAD_REQUEST',
      'Invalid emoji type.',
    );
    expectError(await react(bob, id, {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'emoji_name' argument");
    // Messages one cannot read, or that do not exist.
    expectError(await react(carol, id, { emoji_name: 'tada' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(await react(carol, 999999999, { emoji_name: 'tada' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    const secret = await stack.createStream({
      name: 'secret reactions',
      creatorId: alice.id,
      inviteOnly: true,
      subscribers: [alice.id],
    });
    const hidden = await sendMessage(alice, { type: 'stream', to: secret.id, topic: 't', content: 'hidden' });
    expectError(await react(bob, hidden, { emoji_name: 'tada' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    // Nothing was written by the failures.
    expect(await stack.db.reaction.count({ where: { message_id: id } })).toBe(1);
  });

  test('a reader of a public channel without a row gets a historical one (and so later events); guests cannot', async () => {
    const stream = await stack.createStream({ name: 'public reading', creatorId: alice.id, subscribers: [alice.id] });
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'public' });
    const captured = await captureEvents(stack, async () => {
      expect((await react(carol, id, { emoji_name: 'heart' })).status).toBe(200);
    });
    const row = await stack.db.userMessage.findUnique({
      where: { user_profile_id_message_id: { user_profile_id: carol.id, message_id: id } },
    });
    expect(row?.flags).toBe(MessageFlag.read | MessageFlag.historical);
    const [event] = ofType(captured, 'reaction');
    expect(event.recipientIds).toEqual(sorted([alice.id, carol.id]));
    expectError(await react(guest, id, { emoji_name: 'heart' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });

  test('messages of archived channels cannot be reacted to', async () => {
    const stream = await stack.createStream({
      name: 'soon archived',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id],
    });
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'old' });
    await react(bob, id, { emoji_name: 'tada' });
    await stack.db.stream.update({ where: { id: stream.id }, data: { is_archived: true } });
    expectError(await react(alice, id, { emoji_name: 'tada' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(await unreact(bob, id, { emoji_name: 'tada' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });
});

describe('removing', () => {
  test('by name, or by code and type; the remove event; errors', async () => {
    const stream = await stack.createStream({
      name: 'unreacting',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id, carol.id],
    });
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'hello' });
    await react(bob, id, { emoji_name: 'smile' });
    await react(bob, id, { emoji_name: 'zulip' });
    await react(carol, id, { emoji_name: 'smile' });
    const captured = await captureEvents(stack, async () => {
      expect((await unreact(bob, id, { emoji_name: 'smile' })).body).toEqual({ result: 'success', msg: '' });
      expect((await unreact(bob, id, { emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' })).status).toBe(200);
    });
    const [first, second] = ofType(captured, 'reaction');
    expect(first.event).toEqual({
      type: 'reaction',
      op: 'remove',
      user_id: bob.id,
      user: { user_id: bob.id, email: bob.email, full_name: 'Bob Dylan' },
      message_id: id,
      emoji_name: 'smile',
      emoji_code: '1f642',
      reaction_type: 'unicode_emoji',
    });
    expect(first.recipientIds).toEqual(sorted([alice.id, bob.id, carol.id]));
    expect(second.event).toMatchObject({ op: 'remove', emoji_name: 'zulip', reaction_type: 'zulip_extra_emoji' });
    expect(await reactionsOf(alice, id)).toEqual([
      { emoji_name: 'smile', emoji_code: '1f642', reaction_type: 'unicode_emoji', user_id: carol.id },
    ]);

    expectError(
      await unreact(bob, id, { emoji_name: 'smile' }),
      400,
      'REACTION_DOES_NOT_EXIST',
      "Reaction doesn't exist.",
    );
    expectError(
      await unreact(bob, id, {}),
      400,
      'BAD_REQUEST',
      'At least one of the following arguments must be present: emoji_name, emoji_code',
    );
    expectError(
      await unreact(bob, id, { emoji_name: 'nonexistent_emoji' }),
      400,
      'BAD_REQUEST',
      "Emoji 'nonexistent_emoji' does not exist",
    );
    expectError(await unreact(guest, id, { emoji_name: 'smile' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });
});

test('reaction events through the event tier, and the audience of protected history', async () => {
  const stream = await stack.createStream({
    name: 'protected',
    creatorId: alice.id,
    inviteOnly: true,
    historyPublicToSubscribers: false,
    subscribers: [alice.id, bob.id],
  });
  const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'before carol' });
  await stack.subscribe(stream.id, [carol.id]);
  const queue = await registerEventQueue(alice.client, { event_types: JSON.stringify(['reaction']) });
  const captured = await captureEvents(stack, async () => {
    await react(bob, id, { emoji_name: 'tada' });
    await unreact(bob, id, { emoji_name: 'tada' });
  });
  const [event, removal] = await queue.next(2);
  expect(event).toMatchObject({
    type: 'reaction',
    op: 'add',
    message_id: id,
    emoji_name: 'tada',
    emoji_code: '1f389',
    user_id: bob.id,
  });
  expect(removal).toMatchObject({
    type: 'reaction',
    op: 'remove',
    message_id: id,
    emoji_name: 'tada',
    user: { user_id: bob.id, email: bob.email, full_name: 'Bob Dylan' },
  });
  // Carol subscribed later and never received the message: not in the audience.
  const [outbox] = ofType(captured, 'reaction');
  expect(outbox.recipientIds).toEqual(sorted([alice.id, bob.id]));
});

test('concurrent identical reactions: one is added, the other is refused (no server error)', async () => {
  const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'race' });
  const responses = await Promise.all([1, 2, 3].map(() => react(bob, id, { emoji_name: 'rocket' })));
  expect(responses.map((response) => response.status).sort()).toEqual([200, 400, 400]);
  for (const response of responses.filter((r) => r.status === 400))
    expectError(response, 400, 'REACTION_ALREADY_EXISTS', 'Reaction already exists.');
  expect(await stack.db.reaction.count({ where: { message_id: id } })).toBe(1);
});
