// Deleting messages: DELETE /messages/{id} with Zulip's permission rules, the delete_message
// events (bulk and legacy forms through the event tier), first_message_id, and uploads left
// unlinked (the uploads clean-up job); and uploads an edit detaches (detached_uploads).
import { JOB_QUEUES } from '@teamchat/bus';
import { Role, systemGroupId } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue, sendMessage } from '@teamchat/testing';
import { sorted } from './helpers';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let admin: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  admin = await stack.createUser({ fullName: 'Ada Admin', role: Role.ADMINISTRATOR });
});
afterAll(() => stack.close());

const remove = (user: TestUser, id: number) => user.client.delete(`/api/v1/messages/${id}`);
const exists = async (id: number) => (await stack.db.message.findUnique({ where: { id } })) !== null;
const setRealmGroup = async (name: string, group: Parameters<typeof systemGroupId>[2]) => {
  const groupId = await systemGroupId(stack.db, stack.realm.id, group);
  await stack.db.groupSetting.update({
    where: { owner_kind_owner_id_name: { owner_kind: 'realm', owner_id: stack.realm.id, name } },
    data: { group_id: groupId },
  });
};
const cleanupJobs = async () =>
  (
    await stack.deps.jobs
      .queue(JOB_QUEUES.uploadsCleanup)
      .getJobs(['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized', 'paused'])
  ).map((job) => job.data);

async function upload(owner: TestUser, name: string) {
  const pathId = `${stack.realm.id}/${name}abcdefghijklmnopqrstuvwx/${name}.txt`;
  const attachment = await stack.db.attachment.create({
    data: { realm_id: stack.realm.id, owner_id: owner.id, path_id: pathId, file_name: `${name}.txt`, size: 12n },
  });
  return { attachment, link: `[${name}](/user_uploads/${pathId})` };
}

test('own message: the event to everyone who had it and the deleter; reactions and rows go with it', async () => {
  const stream = await stack.createStream({ name: 'deleting', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'gone soon', content: 'oops' });
  await bob.client.post(`/api/v1/messages/${id}/reactions`, { emoji_name: 'tada' });
  const captured = await captureEvents(stack, async () => {
    expect((await remove(alice, id)).body).toEqual({ result: 'success', msg: '' });
  });
  expect(await exists(id)).toBe(false);
  expect(await stack.db.userMessage.count({ where: { message_id: id } })).toBe(0);
  expect(await stack.db.reaction.count({ where: { message_id: id } })).toBe(0);
  const [event] = ofType(captured, 'delete_message');
  expect(event.event).toEqual({
    type: 'delete_message',
    message_ids: [id],
    message_type: 'stream',
    stream_id: stream.id,
    topic: 'gone soon',
  });
  expect(event.recipientIds).toEqual(sorted([alice.id, bob.id]));
  expectError(await remove(alice, id), 400, 'BAD_REQUEST', 'Invalid message(s)');
});

test('a direct message; an administrator deleting in a channel they are not in gets the event too', async () => {
  const dm = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'dm' });
  const captured = await captureEvents(stack, async () => {
    expect((await remove(alice, dm)).status).toBe(200);
  });
  const [event] = ofType(captured, 'delete_message');
  expect(event.event).toEqual({ type: 'delete_message', message_ids: [dm], message_type: 'private' });
  expect(event.recipientIds).toEqual(sorted([alice.id, bob.id]));

  const stream = await stack.createStream({
    name: 'admin deletes',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  const id = await sendMessage(bob, { type: 'stream', to: stream.id, topic: 't', content: 'spam' });
  const second = await captureEvents(stack, async () => {
    expect((await remove(admin, id)).status).toBe(200);
  });
  const [adminEvent] = ofType(second, 'delete_message');
  expect(adminEvent.recipientIds).toEqual(sorted([alice.id, bob.id, admin.id]));
});

test("permissions: others' messages, the realm's groups, the time limit, bots' owners", async () => {
  const stream = await stack.createStream({
    name: 'delete rules',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id, carol.id],
  });
  const mine = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'mine' });
  expectError(await remove(bob, mine), 400, 'BAD_REQUEST', "You don't have permission to delete this message");
  const dm = await sendMessage(alice, { type: 'direct', to: [carol.id], content: 'dm' });
  expectError(await remove(bob, dm), 400, 'BAD_REQUEST', 'Invalid message(s)');

  // Direct messages follow the realm's group; channel messages the realm's or the channel's.
  await setRealmGroup('can_delete_own_message_group', 'role:administrators');
  expectError(await remove(alice, dm), 400, 'BAD_REQUEST', "You don't have permission to delete this message");
  const nobody = await systemGroupId(stack.db, stack.realm.id, 'role:nobody');
  const channelSetting = {
    owner_kind_owner_id_name: { owner_kind: 'stream', owner_id: stream.id, name: 'can_delete_own_message_group' },
  };
  const { group_id: channelGroup } = await stack.db.groupSetting.findUniqueOrThrow({ where: channelSetting });
  await stack.db.groupSetting.update({ where: channelSetting, data: { group_id: nobody } });
  expectError(await remove(alice, mine), 400, 'BAD_REQUEST', "You don't have permission to delete this message");
  await stack.db.groupSetting.update({ where: channelSetting, data: { group_id: channelGroup } });
  await setRealmGroup('can_delete_own_message_group', 'role:everyone');

  const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
  await stack.db.realm.update({
    where: { id: realm.id },
    data: { settings: { ...(realm.settings as object), realm_message_content_delete_limit_seconds: 60 } as never },
  });
  await stack.db.message.update({ where: { id: mine }, data: { date_sent: new Date(Date.now() - 120_000) } });
  expectError(await remove(alice, mine), 400, 'BAD_REQUEST', 'The time limit for deleting this message has passed');
  await stack.db.realm.update({ where: { id: realm.id }, data: { settings: realm.settings as never } });

  await setRealmGroup('can_delete_any_message_group', 'role:members');
  expect((await remove(carol, mine)).status).toBe(200);
  await setRealmGroup('can_delete_any_message_group', 'role:administrators');

  const bot = await stack.createUser({ fullName: 'Carol Bot', email: 'carol-bot@example.com' });
  await stack.db.userProfile.update({
    where: { id: bot.id },
    data: { is_bot: true, bot_type: 1, bot_owner_id: carol.id },
  });
  await stack.subscribe(stream.id, [bot.id]);
  const fromBot = await sendMessage(bot, { type: 'stream', to: stream.id, topic: 't', content: 'beep' });
  expect((await remove(carol, fromBot)).status).toBe(200);
});

test("the channel's oldest message: first_message_id moves, with a stream event", async () => {
  const stream = await stack.createStream({
    name: 'first message',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  const first = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'first' });
  const second = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 't', content: 'second' });
  const captured = await captureEvents(stack, () => remove(alice, first));
  const [event] = ofType(captured, 'stream');
  expect(event.event).toEqual({
    type: 'stream',
    op: 'update',
    property: 'first_message_id',
    value: second,
    stream_id: stream.id,
    name: 'first message',
  });
  // To those told about the deletion (Zulip's check_update_first_message_id; the worker's delete-topic job too).
  const [deletion] = ofType(captured, 'delete_message');
  expect(event.recipientIds).toEqual(deletion.recipientIds);
  expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).first_message_id).toBe(second);
  await remove(alice, second);
  expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).first_message_id).toBeNull();
});

test('uploads only the deleted message linked go to the clean-up job; shared ones stay', async () => {
  const own = await upload(alice, 'alone');
  const shared = await upload(alice, 'shared');
  const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: `${own.link} ${shared.link}` });
  await sendMessage(alice, { type: 'direct', to: [carol.id], content: shared.link });
  expect(await stack.db.attachmentMessage.count({ where: { message_id: id } })).toBe(2);
  expect((await remove(alice, id)).status).toBe(200);
  expect(await cleanupJobs()).toContainEqual({ attachmentIds: [own.attachment.id] });
  expect(await stack.db.attachmentMessage.count({ where: { attachment_id: shared.attachment.id } })).toBe(1);
});

test('editing away an upload link unlinks it and reports it in detached_uploads', async () => {
  const file = await upload(alice, 'detach');
  const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: `see ${file.link}` });
  expect((await stack.db.message.findUniqueOrThrow({ where: { id } })).has_attachment).toBe(true);
  const response = await alice.client.patch(`/api/v1/messages/${id}`, { content: 'nothing attached' });
  expect(response.body.detached_uploads).toEqual([
    {
      id: file.attachment.id,
      name: 'detach.txt',
      path_id: file.attachment.path_id,
      size: 12,
      create_time: file.attachment.create_time.getTime(),
      messages: [],
    },
  ]);
  expect((await stack.db.message.findUniqueOrThrow({ where: { id } })).has_attachment).toBe(false);
  // Linking it again claims it again.
  expect(
    (await alice.client.patch(`/api/v1/messages/${id}`, { content: `back: ${file.link}` })).body.detached_uploads,
  ).toEqual([]);
  expect(await stack.db.attachmentMessage.count({ where: { message_id: id } })).toBe(1);
});

test('through the event tier: bulk_message_deletion clients get message_ids, others one event per message', async () => {
  const stream = await stack.createStream({
    name: 'tier deletes',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
  });
  const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: '', content: 'x' });
  const bulk = await registerEventQueue(bob.client, {
    event_types: JSON.stringify(['delete_message']),
    client_capabilities: JSON.stringify({ bulk_message_deletion: true }),
  });
  const legacy = await registerEventQueue(alice.client, { event_types: JSON.stringify(['delete_message']) });
  await remove(alice, id);
  expect((await bulk.next())[0]).toMatchObject({
    type: 'delete_message',
    message_ids: [id],
    message_type: 'stream',
    stream_id: stream.id,
    topic: 'general chat',
  });
  const [single] = await legacy.next();
  expect(single).toMatchObject({ type: 'delete_message', message_id: id, message_type: 'stream' });
  expect(single).not.toHaveProperty('message_ids');
});
