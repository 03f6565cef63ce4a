// Editing messages: PATCH /messages/{id} (content, topic with each propagate mode, resolving,
// moving to another channel), Zulip's permission rules and errors, the update_message events and
// their recipients, and the edit history (GET /messages/{id}, GET /messages/{id}/history).
import { MessageFlag, Role, systemGroupId } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue, sendMessage } from '@teamchat/testing';
import { sorted, userMessageFlags } from './helpers';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let moderator: TestUser;
let guest: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  moderator = await stack.createUser({ fullName: 'Mod Erator', role: Role.MODERATOR });
  guest = await stack.createUser({ fullName: 'Guest Star', role: Role.GUEST });
});
afterAll(() => stack.close());

const edit = (user: TestUser, id: number, params: Record<string, unknown>) =>
  user.client.patch(`/api/v1/messages/${id}`, params as never);
const fetchOne = async (user: TestUser, id: number, params: Record<string, unknown> = {}) =>
  (await user.client.get(`/api/v1/messages/${id}`, params as never)).body.message;
const age = (id: number, seconds: number) =>
  stack.db.message.update({ where: { id }, data: { date_sent: new Date(Date.now() - seconds * 1000) } });
const setRealmSetting = async (settings: Record<string, unknown>) => {
  const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
  await stack.db.realm.update({
    where: { id: realm.id },
    data: { settings: { ...(realm.settings as object), ...settings } as never },
  });
};
const setRealmGroup = async (name: string, group: Parameters<typeof systemGroupId>[2]) => {
  const groupId = await systemGroupId(stack.db, stack.realm.id, group);
  await stack.db.groupSetting.update({
    where: { owner_kind_owner_id_name: { owner_kind: 'realm', owner_id: stack.realm.id, name } },
    data: { group_id: groupId },
  });
};

describe('content', () => {
  test('the sender edits: re-rendered, mention flags follow, the event and its recipients, the history', async () => {
    const stream = await stack.createStream({
      name: 'editing',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id, carol.id],
    });
    const id = await sendMessage(alice, {
      type: 'stream',
      to: stream.id,
      topic: 'plans',
      content: 'hi @**Bob Dylan**',
    });
    expect((await userMessageFlags(stack, id)).get(bob.id)! & MessageFlag.mentioned).toBeTruthy();
    const captured = await captureEvents(stack, async () => {
      const response = await edit(alice, id, { content: 'hi @**Carol King**, **bold**' });
      expect(response.body).toEqual({ result: 'success', msg: '', detached_uploads: [] });
    });

    const flags = await userMessageFlags(stack, id);
    expect(flags.get(bob.id)! & MessageFlag.mentioned).toBe(0);
    expect(flags.get(carol.id)! & MessageFlag.mentioned).toBeTruthy();
    const [event] = ofType(captured, 'update_message');
    expect(event.event).toEqual({
      type: 'update_message',
      user_id: alice.id,
      edit_timestamp: expect.any(Number),
      message_id: id,
      message_ids: [id],
      rendering_only: false,
      stream_name: 'editing',
      stream_id: stream.id,
      orig_content: 'hi @**Bob Dylan**',
      orig_rendered_content: `<p>hi <span class="user-mention" data-user-id="${bob.id}">@Bob Dylan</span></p>`,
      content: 'hi @**Carol King**, **bold**',
      rendered_content: `<p>hi <span class="user-mention" data-user-id="${carol.id}">@Carol King</span>, <strong>bold</strong></p>`,
      is_me_message: false,
    });
    // Each recipient with their flags after the edit.
    expect(event.recipients).toEqual(
      expect.arrayContaining([
        { id: alice.id, flags: expect.any(Array) },
        { id: bob.id, flags: [] },
        { id: carol.id, flags: ['mentioned'] },
      ]),
    );
    expect(event.recipientIds).toEqual(sorted([alice.id, bob.id, carol.id]));

    const message = await fetchOne(bob, id);
    expect(message.content).toBe(event.event.rendered_content);
    expect(message.last_edit_timestamp).toBe(event.event.edit_timestamp);
    expect(message).not.toHaveProperty('last_moved_timestamp');
    expect(message.edit_history).toEqual([
      {
        user_id: alice.id,
        timestamp: event.event.edit_timestamp,
        prev_content: 'hi @**Bob Dylan**',
        prev_rendered_content: event.event.orig_rendered_content,
      },
    ]);
    const raw = await bob.client.get(`/api/v1/messages/${id}`, { apply_markdown: false });
    expect(raw.body.raw_content).toBe('hi @**Carol King**, **bold**');

    const history = await bob.client.get(`/api/v1/messages/${id}/history`);
    expect(history.body.message_history).toEqual([
      {
        topic: 'plans',
        content: 'hi @**Bob Dylan**',
        rendered_content: event.event.orig_rendered_content,
        timestamp: expect.any(Number),
        user_id: alice.id,
      },
      {
        topic: 'plans',
        content: 'hi @**Carol King**, **bold**',
        rendered_content: event.event.rendered_content,
        prev_content: 'hi @**Bob Dylan**',
        prev_rendered_content: event.event.orig_rendered_content,
        content_html_diff: expect.stringContaining('<strong>bold</strong>'),
        timestamp: event.event.edit_timestamp,
        user_id: alice.id,
      },
    ]);
  });

  test('a direct message; empty content becomes "(deleted)"; the event goes to the participants', async () => {
    const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'secret' });
    const captured = await captureEvents(stack, async () => {
      expect((await edit(alice, id, { content: '   ' })).status).toBe(200);
    });
    const [event] = ofType(captured, 'update_message');
    expect(event.event).toMatchObject({ content: '(deleted)', message_ids: [id] });
    expect(event.event).not.toHaveProperty('stream_id');
    expect(event.recipientIds).toEqual(sorted([alice.id, bob.id]));
  });

  test("Zulip's errors, and nothing changes when they occur", async () => {
    const stream = await stack.createStream({
      name: 'edit errors',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id],
    });
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'original' });
    const dm = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'dm' });
    expectError(
      await edit(bob, id, { content: 'hijack' }),
      400,
      'BAD_REQUEST',
      "You don't have permission to edit this message",
    );
    expectError(await edit(alice, id, {}), 400, 'BAD_REQUEST', 'Nothing to change');
    expectError(await edit(alice, id, { topic: 't' }), 400, 'BAD_REQUEST', 'Nothing to change');
    expectError(await edit(alice, dm, { topic: 'x' }), 400, 'BAD_REQUEST', 'Direct messages cannot have topics.');
    expectError(
      await edit(alice, dm, { stream_id: stream.id }),
      400,
      'BAD_REQUEST',
      'Direct messages cannot be moved to channels.',
    );
    expectError(
      await edit(alice, id, { content: 'x', propagate_mode: 'change_all' }),
      400,
      'BAD_REQUEST',
      'Invalid propagate_mode without topic edit',
    );
    expectError(
      await edit(alice, id, { content: 'x', stream_id: stream.id + 1000 }),
      400,
      'BAD_REQUEST',
      'Cannot change message content while changing channel',
    );
    expectError(await edit(alice, id, { stream_id: stream.id + 1000 }), 400, 'BAD_REQUEST', 'Invalid channel ID');
    expect((await edit(alice, id, { stream_id: 2 ** 40 })).status).toBe(400);
    expectError(await edit(alice, id, { topic: '✔' }), 400, 'BAD_REQUEST', 'General chat cannot be marked as resolved');
    expectError(
      await edit(alice, id, { topic: 'bad\u0001topic' }),
      400,
      'BAD_REQUEST',
      'Invalid character in topic, at position 4!',
    );
    expectError(
      await edit(alice, id, { content: 'nul\u0000' }),
      400,
      'BAD_REQUEST',
      'Message must not contain null bytes',
    );
    expectError(
      await edit(alice, id, { propagate_mode: 'sideways', topic: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid propagate_mode',
    );
    expectError(await edit(carol, dm, { content: 'x' }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(await edit(alice, 999999999, { content: 'x' }), 400, 'BAD_REQUEST', 'Invalid message(s)');

    await age(id, 700);
    expectError(
      await edit(alice, id, { content: 'late' }),
      400,
      'BAD_REQUEST',
      'The time limit for editing this message has passed',
    );
    await setRealmSetting({ realm_message_content_edit_limit_seconds: null });
    expect((await edit(alice, id, { content: 'no limit now' })).status).toBe(200);
    await setRealmSetting({ realm_allow_message_editing: false });
    expectError(
      await edit(alice, id, { content: 'off' }),
      400,
      'BAD_REQUEST',
      'Your organization has turned off message editing',
    );
    await setRealmSetting({ realm_allow_message_editing: true, realm_message_content_edit_limit_seconds: 600 });
    expect((await stack.db.message.findUniqueOrThrow({ where: { id } })).content).toBe('no limit now');
  });
});

describe('topic', () => {
  async function topicWith(name: string, count: number) {
    const stream = await stack.createStream({ name, creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const ids: number[] = [];
    for (let i = 0; i < count; i++)
      ids.push(await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'old', content: `m${i}` }));
    return { stream, ids };
  }
  const topicsOf = async (ids: number[]) =>
    (await stack.db.message.findMany({ where: { id: { in: ids } }, orderBy: { id: 'asc' } })).map((m) => m.topic);

  test('change_one, change_later, change_all; anyone may move (the realm default); the event', async () => {
    const { stream, ids } = await topicWith('moving', 4);
    const captured = await captureEvents(stack, async () => {
      expect((await edit(bob, ids[1], { topic: 'one' })).status).toBe(200);
    });
    expect(await topicsOf(ids)).toEqual(['old', 'one', 'old', 'old']);
    const [event] = ofType(captured, 'update_message');
    expect(event.event).toEqual({
      type: 'update_message',
      user_id: bob.id,
      edit_timestamp: expect.any(Number),
      message_id: ids[1],
      message_ids: [ids[1]],
      rendering_only: false,
      stream_name: 'moving',
      stream_id: stream.id,
      propagate_mode: 'change_one',
      orig_subject: 'old',
      subject: 'one',
      topic_links: [],
    });
    expect(await fetchOne(alice, ids[1])).toMatchObject({
      subject: 'one',
      last_moved_timestamp: event.event.edit_timestamp,
    });
    expect(await fetchOne(alice, ids[1])).not.toHaveProperty('last_edit_timestamp');

    const later = await captureEvents(stack, async () => {
      expect((await edit(alice, ids[2], { topic: 'Later', propagate_mode: 'change_later' })).status).toBe(200);
    });
    expect(await topicsOf(ids)).toEqual(['old', 'one', 'Later', 'Later']);
    const [laterEvent] = ofType(later, 'update_message');
    expect(laterEvent.event).toMatchObject({
      message_ids: [ids[2], ids[3]],
      propagate_mode: 'change_later',
      orig_subject: 'old',
      subject: 'Later',
    });

    // change_all matches the topic case-insensitively.
    expect((await edit(alice, ids[3], { topic: 'all', propagate_mode: 'change_all' })).status).toBe(200);
    expect(await topicsOf(ids)).toEqual(['old', 'one', 'all', 'all']);
    expect((await stack.db.message.findUniqueOrThrow({ where: { id: ids[2] } })).edit_history).toEqual([
      { user_id: alice.id, timestamp: expect.any(Number), prev_topic: 'Later', topic: 'all' },
      { user_id: alice.id, timestamp: expect.any(Number), prev_topic: 'old', topic: 'Later' },
    ]);
  });

  test('topic rules: truncation, the empty topic and its display name, the channel topics policy', async () => {
    const { stream, ids } = await topicWith('topic rules', 1);
    expect((await edit(alice, ids[0], { topic: 'x'.repeat(70) })).status).toBe(200);
    expect(await topicsOf(ids)).toEqual(['x'.repeat(57) + '...']);
    expect((await edit(alice, ids[0], { topic: 'general chat' })).status).toBe(200);
    expect(await topicsOf(ids)).toEqual(['']);
    const history = await alice.client.get(`/api/v1/messages/${ids[0]}/history`, { allow_empty_topic_name: true });
    expect(history.body.message_history.at(-1)).toMatchObject({ topic: '', prev_topic: 'x'.repeat(57) + '...' });
    await stack.db.stream.update({ where: { id: stream.id }, data: { topics_policy: 'disable_empty_topic' } });
    expect((await edit(alice, ids[0], { topic: 'named' })).status).toBe(200);
    expectError(
      await edit(alice, ids[0], { topic: '(no topic)' }),
      400,
      'BAD_REQUEST',
      'Sending messages to the general chat topic is not allowed in this channel.',
    );
  });

  test('permissions: the realm group, time limits for members, and change_all beyond the limit', async () => {
    const { ids } = await topicWith('topic permissions', 3);
    await setRealmGroup('can_move_messages_between_topics_group', 'role:moderators');
    expectError(
      await edit(bob, ids[0], { topic: 'no' }),
      400,
      'BAD_REQUEST',
      "You don't have permission to edit this message",
    );
    // Without the notification bot's breadcrumbs: the topic keeps only its own three messages.
    expect((await edit(moderator, ids[0], { topic: 'yes', send_notification_to_new_thread: false })).status).toBe(200);
    await setRealmGroup('can_move_messages_between_topics_group', 'role:everyone');

    await age(ids[0], 8 * 86400);
    expectError(
      await edit(bob, ids[0], { topic: 'too late' }),
      400,
      'BAD_REQUEST',
      "The time limit for editing this message's topic has passed.",
    );
    expect((await edit(moderator, ids[0], { topic: 'old', send_notification_to_new_thread: false })).status).toBe(200);
    const refused = await edit(bob, ids[2], { topic: 'everything', propagate_mode: 'change_all' });
    expectError(
      refused,
      400,
      'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
      'You only have permission to move the 2/3 most recent messages in this topic.',
    );
    expect(refused.body).toMatchObject({
      first_message_id_allowed_to_move: ids[1],
      total_messages_in_topic: 3,
      total_messages_allowed_to_move: 2,
    });
    expect(await topicsOf(ids)).toEqual(['old', 'old', 'old']);
  });

  test('resolving needs can_resolve_topics_group and does not count as a move', async () => {
    const { ids } = await topicWith('resolving', 2);
    expect((await edit(bob, ids[0], { topic: '✔ old', propagate_mode: 'change_all' })).status).toBe(200);
    expect(await topicsOf(ids)).toEqual(['✔ old', '✔ old']);
    expect(await fetchOne(alice, ids[1])).not.toHaveProperty('last_moved_timestamp');
    await setRealmGroup('can_resolve_topics_group', 'role:nobody');
    expectError(
      await edit(bob, ids[0], { topic: 'old', propagate_mode: 'change_all' }),
      400,
      'BAD_REQUEST',
      "You don't have permission to resolve topics in this channel.",
    );
    await setRealmGroup('can_resolve_topics_group', 'role:everyone');
  });

  test('the resolved mark as Zulip strips it: "✔ ✔ old" resolves "old"; marking a resolved topic again is a move', async () => {
    const { ids } = await topicWith('resolving twice', 1);
    expect((await edit(bob, ids[0], { topic: '✔ ✔ old', propagate_mode: 'change_all' })).status).toBe(200);
    expect(await fetchOne(alice, ids[0])).not.toHaveProperty('last_moved_timestamp');
    expect((await edit(bob, ids[0], { topic: '✔ ✔ ✔ old', propagate_mode: 'change_all' })).status).toBe(200);
    expect(await fetchOne(alice, ids[0])).toHaveProperty('last_moved_timestamp');
  });
});

describe('moving to another channel', () => {
  test('public to private: rows follow the subscribers, guests and others lose access with delete_message, first_message_id moves', async () => {
    const from = await stack.createStream({
      name: 'move from',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id, guest.id],
    });
    const to = await stack.createStream({
      name: 'move to',
      creatorId: alice.id,
      inviteOnly: true,
      historyPublicToSubscribers: false,
      subscribers: [alice.id, carol.id],
    });
    const first = await sendMessage(alice, { type: 'stream', to: from.id, topic: 'topic', content: 'one' });
    const second = await sendMessage(alice, { type: 'stream', to: from.id, topic: 'topic', content: 'two' });
    const events = await captureEvents(stack, async () => {
      const response = await edit(alice, first, { stream_id: to.id, propagate_mode: 'change_all' });
      expect(response.body).toEqual({ result: 'success', msg: '', detached_uploads: [] });
    });

    const moved = await stack.db.message.findMany({ where: { id: { in: [first, second] } } });
    expect(moved.every((message) => message.stream_id === to.id)).toBe(true);
    const rows = await stack.db.userMessage.findMany({ where: { message_id: first } });
    expect(sorted(rows.map((row) => row.user_profile_id))).toEqual(sorted([alice.id, carol.id]));

    const deletion = events.find((entry) => entry.event.type === 'delete_message')!;
    expect(deletion.event).toEqual({
      type: 'delete_message',
      message_ids: [first, second],
      message_type: 'stream',
      stream_id: from.id,
      topic: 'topic',
    });
    expect(deletion.recipientIds).toEqual(sorted([bob.id, guest.id]));
    const update = events.find((entry) => entry.event.type === 'update_message')!;
    expect(update.event).toMatchObject({
      message_ids: [first, second],
      stream_id: from.id,
      new_stream_id: to.id,
      orig_subject: 'topic',
      propagate_mode: 'change_all',
    });
    expect(update.event).not.toHaveProperty('subject');
    expect(update.recipientIds).toEqual(sorted([alice.id, carol.id]));
    const firstIds = events.filter((entry) => entry.event.type === 'stream').map((entry) => entry.event);
    expect(firstIds).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ property: 'first_message_id', stream_id: from.id, value: null }),
        expect.objectContaining({ property: 'first_message_id', stream_id: to.id, value: first }),
      ]),
    );
    expect((await fetchOne(carol, second)).last_moved_timestamp).toBe(update.event.edit_timestamp);
  });

  test('needs can_move_messages_between_channels_group and posting rights in the target', async () => {
    const from = await stack.createStream({ name: 'stay here', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const to = await stack.createStream({ name: 'not there', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const id = await sendMessage(alice, { type: 'stream', to: from.id, topic: 't', content: 'x' });
    expectError(await edit(guest, id, { stream_id: to.id }), 400, 'BAD_REQUEST', 'Invalid message(s)');
    await setRealmGroup('can_move_messages_between_channels_group', 'role:administrators');
    expectError(
      await edit(bob, id, { stream_id: to.id }),
      400,
      'BAD_REQUEST',
      "You don't have permission to move this message",
    );
    await setRealmGroup('can_move_messages_between_channels_group', 'role:members');
    expect((await edit(bob, id, { stream_id: to.id, topic: 'renamed' })).status).toBe(200);
    expect(await stack.db.message.findUniqueOrThrow({ where: { id } })).toMatchObject({
      stream_id: to.id,
      topic: 'renamed',
    });
  });
});

test('update_message through the event tier: the empty topic shown to clients without the capability', async () => {
  const stream = await stack.createStream({ name: 'tier edits', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'named', content: 'x' });
  const queue = await registerEventQueue(bob.client, { event_types: JSON.stringify(['update_message']) });
  await edit(alice, id, { topic: '' });
  await edit(alice, id, { content: '@**Bob Dylan** look' });
  const other = await stack.createStream({
    name: 'tier edits 2',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  await edit(alice, id, { stream_id: other.id });
  const [topicEvent, contentEvent, moveEvent] = await queue.next(3);
  expect(topicEvent).toMatchObject({
    type: 'update_message',
    message_id: id,
    orig_subject: 'named',
    subject: 'general chat',
    flags: [],
  });
  expect(contentEvent).toMatchObject({
    type: 'update_message',
    content: '@**Bob Dylan** look',
    flags: ['mentioned'],
    is_me_message: false,
  });
  expect(moveEvent).toMatchObject({
    type: 'update_message',
    stream_id: stream.id,
    new_stream_id: other.id,
    orig_subject: 'general chat',
    propagate_mode: 'change_one',
  });
});

test("the realm's edit history visibility: moves only, or none", async () => {
  const stream = await stack.createStream({
    name: 'history policy',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'first', content: 'v1' });
  await edit(alice, id, { content: 'v2' });
  await edit(alice, id, { topic: 'second' });

  await setRealmSetting({ realm_message_edit_history_visibility_policy: 'moves' });
  const message = await fetchOne(bob, id);
  expect(message.edit_history).toEqual([
    { user_id: alice.id, timestamp: expect.any(Number), prev_topic: 'first', topic: 'second' },
  ]);
  const moves = (await bob.client.get(`/api/v1/messages/${id}/history`)).body.message_history;
  expect(
    moves.map((snapshot: Record<string, unknown>) => [snapshot.topic, snapshot.content, 'prev_content' in snapshot]),
  ).toEqual([
    ['first', 'v2', false],
    ['second', 'v2', false],
  ]);

  await setRealmSetting({ realm_message_edit_history_visibility_policy: 'all', realm_allow_edit_history: false });
  expect(await fetchOne(bob, id)).not.toHaveProperty('edit_history');
  expectError(
    await bob.client.get(`/api/v1/messages/${id}/history`),
    400,
    'BAD_REQUEST',
    'Message edit history is disabled in this organization',
  );
  await setRealmSetting({ realm_allow_edit_history: true });
  expect((await fetchOne(bob, id)).edit_history).toHaveLength(2);
});
