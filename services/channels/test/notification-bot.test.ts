// The notification bot in the channels service: register lists Zulip's system bots in
// cross_realm_bots, and a request with `announce` that creates channels is announced in the
// organisation's new-channel announcements channel, in Zulip 10.2's words, as the bot.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, ofType, registerEventQueue } from '@teamchat/testing';
import { NOTIFICATION_BOT, Role } from '@teamchat/domain';
import { uniqueName } from './helpers';

let stack: Stack;
let admin: TestUser;
let member: TestUser;
let announcementsId: number;
let botId: number;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'messages', 'events'] });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR, fullName: 'Ada Admin' });
  member = await stack.createUser({ role: Role.MEMBER });
  const announcements = await stack.createStream({ name: 'announce', subscribers: [admin.id, member.id] });
  announcementsId = announcements.id;
  botId = (await stack.db.userProfile.findFirstOrThrow({ where: { delivery_email: NOTIFICATION_BOT } })).id;
});
afterAll(async () => {
  await stack?.close();
});

async function setAnnouncementsChannel(id: number) {
  const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
  await stack.db.realm.update({
    where: { id: realm.id },
    data: { settings: { ...(realm.settings as object), realm_new_stream_announcements_stream_id: id } },
  });
}

async function announcementsMessages() {
  return stack.db.message.findMany({ where: { stream_id: announcementsId }, orderBy: { id: 'asc' } });
}

test('register lists the system bots in cross_realm_bots, as Zulip does', async () => {
  const queue = await registerEventQueue(member.client, { fetch_event_types: ['realm_user'] });
  const bots = queue.registration.cross_realm_bots as Record<string, unknown>[];
  expect(bots.map((bot) => bot.email)).toEqual([
    'emailgateway@zulip.com',
    'nagios-receive-bot@zulip.com',
    'nagios-send-bot@zulip.com',
    'notification-bot@zulip.com',
    'welcome-bot@zulip.com',
  ]);
  const notificationBot = bots.find((bot) => bot.email === NOTIFICATION_BOT)!;
  expect(notificationBot).toMatchObject({
    user_id: botId,
    full_name: 'Notification Bot',
    is_bot: true,
    bot_type: 1,
    bot_owner_id: null,
    is_system_bot: true,
    is_active: true,
  });
  // Not a user of the organisation.
  const realmUsers = queue.registration.realm_users as { user_id: number }[];
  expect(realmUsers.some((user) => user.user_id === botId)).toBe(false);
  await queue.delete();
});

test('a new channel with announce: the bot announces it in the announcements channel', async () => {
  await setAnnouncementsChannel(announcementsId);
  const name = uniqueName('fresh');
  const events = await captureEvents(stack, async () => {
    await admin.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name, description: 'Things' }],
      announce: true,
    });
  });
  const [message] = (await announcementsMessages()).slice(-1);
  expect(message).toMatchObject({
    sender_id: botId,
    realm_id: stack.realm.id,
    topic: 'new channels',
    content: `@_**Ada Admin|${admin.id}** created a new channel #**${name}**.`,
  });
  const created = await stack.db.stream.findFirstOrThrow({ where: { name } });
  expect(message.rendered_content).toContain(`data-stream-id="${created.id}"`);
  expect(message.rendered_content).toContain('class="user-mention silent"');

  // The message event goes to the channel's subscribers; the creator has it already read.
  const [event] = ofType(events, 'message');
  expect(event.recipientIds).toEqual([admin.id, member.id].sort((a, b) => a - b));
  expect(event.recipients).toEqual(expect.arrayContaining([{ id: admin.id, flags: ['read'] }, member.id]));
  expect(event.event).toMatchObject({
    message: { sender_email: NOTIFICATION_BOT, sender_full_name: 'Notification Bot', subject: 'new channels' },
  });

  // Through the API, as a client reads it.
  const fetched = await member.client.get('/api/v1/messages', {
    anchor: 'newest',
    num_before: 1,
    num_after: 0,
    narrow: JSON.stringify([{ operator: 'channel', operand: announcementsId }]),
  });
  expect(fetched.status).toBe(200);
  expect(fetched.body.messages[0]).toMatchObject({ sender_id: botId, sender_email: NOTIFICATION_BOT, flags: [] });
});

test('several channels at once: "created the following channels"', async () => {
  await setAnnouncementsChannel(announcementsId);
  const [a, b] = [uniqueName('one'), uniqueName('two')];
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: a }, { name: b }],
    announce: true,
  });
  const [message] = (await announcementsMessages()).slice(-1);
  expect(message.content).toBe(`@_**Ada Admin|${admin.id}** created the following channels: #**${a}**, #**${b}**.`);
  expect(message.sender_id).toBe(botId);
});

test('gates: no announce, no announcements channel, an archived one, or no channel created: nothing sent', async () => {
  await setAnnouncementsChannel(announcementsId);
  const before = (await announcementsMessages()).length;
  // Without announce (its default is false).
  await admin.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: uniqueName('quiet') }] });
  // Subscribing to an existing channel creates none.
  await member.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'announce' }], announce: true });
  // No announcements channel.
  await setAnnouncementsChannel(-1);
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: uniqueName('unset') }],
    announce: true,
  });
  // An archived announcements channel.
  await setAnnouncementsChannel(announcementsId);
  await stack.db.stream.update({ where: { id: announcementsId }, data: { is_archived: true } });
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: uniqueName('archived') }],
    announce: true,
  });
  await stack.db.stream.update({ where: { id: announcementsId }, data: { is_archived: false } });
  expect(await announcementsMessages()).toHaveLength(before);
});
