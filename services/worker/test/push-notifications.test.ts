// Mobile push notifications end to end: the stack (users, messages, events, worker in process)
// talks to a stand-in of Zulip's push notification service (test/support/bouncer.ts). Device
// tokens are registered with it; a direct message to a user whose only client is their phone
// produces exactly one notify request with the payload the app parses, and reading the
// message produces its removal; settings, activity, retries and the test notification.
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, waitFor } from '@teamchat/testing';
import { Role } from '@teamchat/domain';
import { fcmData } from '@teamchat/notifications';
import { BouncerStandIn } from './support/bouncer';

jest.setTimeout(120_000);

const ORG_ID = '6cde5f7a-1f7e-4978-9716-49f69746f9ce';
const ORG_KEY = 'a'.repeat(64);
const DELAY_MS = 300;

let stack: Stack;
let bouncer: BouncerStandIn;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;

/** The worker's queues hold nothing for these messages any more (what was going to happen has happened). */
async function settled(): Promise<void> {
  const names = ['message-notifications', 'push-notification', 'push-removal', 'push-device'] as const;
  await waitFor(async () => {
    const counts = await Promise.all(
      names.map((name) => stack.deps.jobs.queue(name).getJobCounts('waiting', 'delayed', 'active', 'prioritized')),
    );
    return counts.every((count) => Object.values(count).every((n) => n === 0));
  });
}

async function sendDm(from: TestUser, to: TestUser[], content: string): Promise<number> {
  const response = await from.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify(to.map((user) => user.id)),
    content,
  });
  expect(response.status).toBe(200);
  return response.body.id;
}

async function sendToChannel(from: TestUser, channelId: number, topic: string, content: string): Promise<number> {
  const response = await from.client.post('/api/v1/messages', {
    type: 'stream',
    to: String(channelId),
    topic,
    content,
  });
  expect(response.status).toBe(200);
  return response.body.id;
}

const notifiesFor = (userId: number) => bouncer.notifies().filter((request) => request.body.user_id === userId);

beforeAll(async () => {
  bouncer = await new BouncerStandIn(ORG_ID, ORG_KEY).start();
  stack = await startStack({
    services: ['messages', 'channels', 'events', 'worker'],
    env: {
      PUSH_NOTIFICATION_BOUNCER_URL: bouncer.url,
      ZULIP_ORG_ID: ORG_ID,
      ZULIP_ORG_KEY: ORG_KEY,
      PUSH_NOTIFICATION_DELAY_MS: String(DELAY_MS),
    },
  });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
});
afterAll(async () => {
  await stack?.close();
  await bouncer?.close();
});
afterEach(() => {
  expect(bouncer.violations).toEqual([]);
});

test('registering a device token registers it with the bouncer; removing it unregisters it', async () => {
  expect((await bob.client.post('/api/v1/users/me/android_gcm_reg_id', { token: 'bob-phone' })).status).toBe(200);
  const register = await waitFor(() => bouncer.requests.find((request) => request.endpoint === 'push/register'));
  expect(register.body).toMatchObject({
    server_uuid: ORG_ID,
    user_id: String(bob.id),
    token: 'bob-phone',
    token_kind: '2',
    user_uuid: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
  });

  expect(
    (await carol.client.post('/api/v1/users/me/apns_device_token', { token: 'c0ffee00', appid: 'org.zulip.Zulip' }))
      .status,
  ).toBe(200);
  expect((await carol.client.delete('/api/v1/users/me/apns_device_token', { token: 'c0ffee00' })).status).toBe(200);
  const unregister = await waitFor(() => bouncer.requests.find((request) => request.endpoint === 'push/unregister'));
  expect(unregister.body).toMatchObject({
    token: 'c0ffee00',
    token_kind: '1',
    user_id: String(carol.id),
    server_uuid: ORG_ID,
  });
  const carolRegister = bouncer.requests.find((r) => r.endpoint === 'push/register' && r.body.token === 'c0ffee00');
  expect(carolRegister?.body.ios_app_id).toBe('org.zulip.Zulip');
  expect(carolRegister?.body.user_uuid).toBe(unregister.body.user_uuid);
});

test('a direct message to a user whose only device is their phone: one notify request; reading it removes it', async () => {
  const before = notifiesFor(bob.id).length;
  const messageId = await sendDm(alice, [bob], 'Hello **Bob**, lunch?');
  const notify = await waitFor(() => notifiesFor(bob.id)[before]);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before + 1);

  expect(notify.body.android_devices).toEqual(['bob-phone']);
  expect(notify.body.apple_devices).toEqual([]);
  expect(notify.body.gcm_options).toEqual({ priority: 'high' });
  expect(fcmData(notify.body.gcm_payload)).toMatchObject({
    event: 'message',
    user_id: String(bob.id),
    sender_id: String(alice.id),
    sender_full_name: 'Alice Liddell',
    zulip_message_id: String(messageId),
    content: 'Hello Bob, lunch?',
    recipient_type: 'private',
    realm_url: stack.gatewayUrl,
    realm_name: 'Test Organization',
  });
  expect(notify.body.gcm_payload.sender_avatar_url).toMatch(/^https:\/\//);
  expect(notify.body.apns_payload).toMatchObject({
    alert: { title: 'Alice Liddell', subtitle: '', body: 'Hello Bob, lunch?' },
    custom: { zulip: { message_ids: [messageId], sender_id: alice.id } },
  });
  const row = await stack.db.userMessage.findFirstOrThrow({
    where: { user_profile_id: bob.id, message_id: messageId },
  });
  expect(row.flags & 4096).toBe(4096);

  // Bob reads it on another device: the phone is told to remove the notification.
  const read = await bob.client.post('/api/v1/messages/flags', {
    messages: JSON.stringify([messageId]),
    op: 'add',
    flag: 'read',
  });
  expect(read.status).toBe(200);
  const removal = await waitFor(() =>
    bouncer
      .notifies()
      .find((request) => request.body.gcm_payload.event === 'remove' && request.body.user_id === bob.id),
  );
  expect(removal.body.gcm_options).toEqual({ priority: 'normal' });
  expect(fcmData(removal.body.gcm_payload)).toMatchObject({
    event: 'remove',
    zulip_message_ids: String(messageId),
    user_id: String(bob.id),
  });
  expect(removal.body.apns_payload.custom.zulip).toMatchObject({
    event: 'remove',
    zulip_message_ids: String(messageId),
  });
  await waitFor(async () => {
    const after = await stack.db.userMessage.findFirstOrThrow({
      where: { user_profile_id: bob.id, message_id: messageId },
    });
    return (after.flags & 4096) === 0;
  });
  // The message's flags as clients see them never show the internal flag.
  const fetched = await bob.client.get(`/api/v1/messages/${messageId}`);
  expect(fetched.body.message.flags).toEqual(['read']);
});

test('mark all as read removes the notifications the phone shows', async () => {
  const before = notifiesFor(bob.id).length;
  const first = await sendDm(alice, [bob], 'one');
  const second = await sendDm(alice, [bob], 'two');
  await waitFor(() => notifiesFor(bob.id).length === before + 2);
  expect((await bob.client.post('/api/v1/mark_all_as_read')).status).toBe(200);
  const removal = await waitFor(() =>
    notifiesFor(bob.id)
      .slice(before)
      .find((request) => request.body.gcm_payload.event === 'remove'),
  );
  expect(removal.body.gcm_payload.zulip_message_ids).toBe(`${first},${second}`);
});

test('a deleted message is removed from the phone', async () => {
  const before = notifiesFor(bob.id).length;
  const messageId = await sendDm(alice, [bob], 'oops, wrong person');
  await waitFor(() => notifiesFor(bob.id)[before]);
  expect((await alice.client.delete(`/api/v1/messages/${messageId}`)).status).toBe(200);
  const removal = await waitFor(() => notifiesFor(bob.id)[before + 1]);
  expect(removal.body.gcm_payload).toMatchObject({ event: 'remove', zulip_message_ids: String(messageId) });
});

test('a deleted topic is removed from the phones that show its messages', async () => {
  const admin = await stack.createUser({ fullName: 'Dora Admin', role: Role.ADMINISTRATOR });
  const channel = await stack.createStream({ name: 'doomed', creatorId: admin.id, subscribers: [admin.id, bob.id] });
  const before = notifiesFor(bob.id).length;
  const ids: number[] = [];
  for (const content of ['@**Bob Dylan** one', '@**Bob Dylan** two'])
    ids.push(await sendToChannel(admin, channel.id, 'to delete', content));
  await waitFor(() => notifiesFor(bob.id).length === before + 2);
  const deleted = await admin.client.post(`/api/v1/streams/${channel.id}/delete_topic`, { topic_name: 'to delete' });
  expect(deleted.status).toBe(200);
  const removal = await waitFor(() => notifiesFor(bob.id)[before + 2]);
  expect(removal.body.gcm_payload).toMatchObject({ event: 'remove', zulip_message_ids: ids.join(',') });
});

test('an edit that mentions a user for the first time notifies them, once', async () => {
  const channel = await stack.createStream({ name: 'edits', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  const before = notifiesFor(bob.id).length;
  const messageId = await sendToChannel(alice, channel.id, 'draft', 'no mention yet');
  await sleep(DELAY_MS);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before);
  const edit = (content: string) => alice.client.patch(`/api/v1/messages/${messageId}`, { content });
  expect((await edit('now for @**Bob Dylan**')).status).toBe(200);
  const notify = await waitFor(() => notifiesFor(bob.id)[before]);
  expect(fcmData(notify.body.gcm_payload)).toMatchObject({ zulip_message_id: String(messageId), topic: 'draft' });
  // Still mentioned after a second edit: no second notification.
  expect((await edit('now for @**Bob Dylan**, fixed a typo')).status).toBe(200);
  await sleep(DELAY_MS);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before + 1);
});

test('a message read within the delay is not pushed', async () => {
  const before = notifiesFor(bob.id).length;
  const messageId = await sendDm(alice, [bob], 'read at once');
  await bob.client.post('/api/v1/messages/flags', { messages: JSON.stringify([messageId]), op: 'add', flag: 'read' });
  await sleep(DELAY_MS);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before);
});

test('settings off: no push; online push off: none while a client is active, one once idle', async () => {
  const before = notifiesFor(bob.id).length;
  await bob.client.patch('/api/v1/settings', {
    enable_offline_push_notifications: false,
    enable_online_push_notifications: false,
  });
  await sendDm(alice, [bob], 'settings off');
  await sleep(DELAY_MS);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before);

  // Offline pushes on, online off: Bob polls (a parked poll) and is present → not buzzed.
  await bob.client.patch('/api/v1/settings', { enable_offline_push_notifications: true });
  const queue = await registerEventQueue(bob.client, { event_types: JSON.stringify(['message']) });
  expect((await bob.client.post('/api/v1/users/me/presence', { status: 'active' })).status).toBe(200);
  const polling = queue.next(1);
  await sleep(200);
  await sendDm(alice, [bob], 'while reading');
  await polling;
  await sleep(DELAY_MS);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before);

  // The client goes away (its queue is deleted): the next message is pushed.
  await queue.delete();
  const messageId = await sendDm(alice, [bob], 'after leaving');
  const notify = await waitFor(() => notifiesFor(bob.id)[before]);
  expect(notify.body.gcm_payload.zulip_message_id).toBe(messageId);
  await bob.client.patch('/api/v1/settings', { enable_online_push_notifications: true });
});

test('a muted sender, a user without devices and the sender get nothing', async () => {
  const before = bouncer.notifies().length;
  expect((await bob.client.post(`/api/v1/users/me/muted_users/${carol.id}`)).status).toBe(200);
  await sendDm(carol, [bob], 'from someone Bob muted');
  await sendDm(bob, [alice], 'Alice has no device');
  await sleep(DELAY_MS);
  await settled();
  expect(bouncer.notifies()).toHaveLength(before);
  await bob.client.delete(`/api/v1/users/me/muted_users/${carol.id}`);
});

test('the bouncer failing: retried with backoff, sent once', async () => {
  const before = notifiesFor(bob.id).length;
  bouncer.failNext = 2;
  bouncer.failWhen = (endpoint, body) =>
    endpoint === 'push/notify' && body.gcm_payload.content === 'through a flaky bouncer';
  const messageId = await sendDm(alice, [bob], 'through a flaky bouncer');
  await waitFor(() => notifiesFor(bob.id)[before]);
  await settled();
  const attempts = bouncer.requests.filter(
    (request) => request.endpoint === 'push/notify' && request.body.gcm_payload.zulip_message_id === messageId,
  );
  expect(attempts.map((attempt) => attempt.status)).toEqual([500, 500, 200]);

  // The job run again (a duplicate, a stalled retry) sends nothing.
  const jobs = stack.deps.jobs.queue('push-notification');
  const again = await jobs.add(
    'push-notification',
    { realmId: stack.realm.id, userId: bob.id, messageId, trigger: 'direct_message' },
    { jobId: `again-${messageId}` },
  );
  // Read once completed: a job read before it finished keeps a null returnvalue.
  const done = await waitFor(async () =>
    (await jobs.getJobState(again.id!)) === 'completed' ? jobs.getJob(again.id!) : undefined,
  );
  expect(done.returnvalue).toBe('skipped');
  expect(notifiesFor(bob.id)).toHaveLength(before + 1);
});

test('a channel mention is pushed with the channel and topic; a token the bouncer drops is forgotten', async () => {
  const general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  await bob.client.post('/api/v1/users/me/android_gcm_reg_id', { token: 'bob-old-phone' });
  bouncer.deletedTokens.add('bob-old-phone');
  const before = notifiesFor(bob.id).length;
  await sendToChannel(alice, general.id, 'plans', '@**Bob Dylan** see this');
  const notify = await waitFor(() => notifiesFor(bob.id)[before]);
  expect(notify.body.android_devices.sort()).toEqual(['bob-old-phone', 'bob-phone']);
  expect(fcmData(notify.body.gcm_payload)).toMatchObject({
    recipient_type: 'stream',
    stream: 'general',
    stream_id: String(general.id),
    topic: 'plans',
  });
  expect(notify.body.apns_payload.alert).toMatchObject({
    title: '#general > plans',
    subtitle: 'Alice Liddell mentioned you:',
  });
  await waitFor(async () => (await stack.db.pushDeviceToken.count({ where: { token: 'bob-old-phone' } })) === 0);
  // A plain channel message (no mention, channel push off by default) is not pushed.
  await sendToChannel(alice, general.id, 'plans', 'no mention');
  await sleep(DELAY_MS);
  await settled();
  expect(notifiesFor(bob.id)).toHaveLength(before + 1);
});

test('a mention through a user group names the group', async () => {
  const created = await alice.client.post('/api/v1/user_groups/create', {
    name: 'backend',
    description: 'Backend people',
    members: JSON.stringify([bob.id]),
  });
  expect(created.status).toBe(200);
  const group = await stack.db.userGroup.findFirstOrThrow({ where: { name: 'backend', realm_id: stack.realm.id } });
  const general = await stack.db.stream.findFirstOrThrow({ where: { name: 'general' } });
  const before = notifiesFor(bob.id).length;
  const messageId = await sendToChannel(alice, general.id, 'deploys', '@*backend* deploy today?');
  const notify = await waitFor(() => notifiesFor(bob.id)[before]);
  expect(notify.body.gcm_payload).toMatchObject({
    zulip_message_id: messageId,
    mentioned_user_group_id: group.id,
    mentioned_user_group_name: 'backend',
  });
  expect(notify.body.apns_payload.alert.subtitle).toBe('Alice Liddell mentioned @backend:');
});

test('a channel with push notifications on, and a followed topic, notify without a mention; a muted topic does not', async () => {
  const general = await stack.db.stream.findFirstOrThrow({ where: { name: 'general' } });
  const post = (topic: string, content: string) => sendToChannel(alice, general.id, topic, content);
  // Fixtures: the channels service (not in this stack) writes these.
  await stack.db.subscription.updateMany({
    where: { stream_id: general.id, user_profile_id: bob.id },
    data: { push_notifications: true },
  });
  await stack.db.userTopic.create({
    data: { user_profile_id: bob.id, stream_id: general.id, topic_name: 'Quiet', visibility_policy: 1 },
  });
  const before = notifiesFor(bob.id).length;
  const loud = await post('news', 'channel push on');
  await waitFor(() => notifiesFor(bob.id)[before]);
  await post('quiet', 'in a muted topic');
  await stack.db.subscription.updateMany({
    where: { stream_id: general.id, user_profile_id: bob.id },
    data: { push_notifications: null },
  });
  await stack.db.userTopic.create({
    data: { user_profile_id: bob.id, stream_id: general.id, topic_name: 'followed', visibility_policy: 3 },
  });
  const followed = await post('Followed', 'in a followed topic');
  await waitFor(() => notifiesFor(bob.id)[before + 1]);
  await post('other', 'neither');
  await sleep(DELAY_MS);
  await settled();
  expect(
    notifiesFor(bob.id)
      .slice(before)
      .map((request) => request.body.gcm_payload.zulip_message_id),
  ).toEqual([loud, followed]);
});

test('GET /server_settings says push notifications are enabled', async () => {
  const response = await stack.anonymous().get('/api/v1/server_settings');
  expect(response.status).toBe(200);
  expect(response.body.push_notifications_enabled).toBe(true);
});

test('POST /mobile_push/test_notification', async () => {
  const response = await bob.client.post('/api/v1/mobile_push/test_notification', { token: 'bob-phone' });
  expect(response.status).toBe(200);
  const request = bouncer.requests.find((r) => r.endpoint === 'push/test_notification');
  expect(request?.body).toMatchObject({
    token: 'bob-phone',
    token_kind: 2,
    user_id: bob.id,
    base_payload: { user_id: bob.id, realm_name: 'Test Organization', realm_url: stack.gatewayUrl },
  });

  const unknown = await bob.client.post('/api/v1/mobile_push/test_notification', { token: 'not-mine' });
  expect(unknown.status).toBe(400);
  expect(unknown.body).toMatchObject({
    result: 'error',
    code: 'INVALID_PUSH_DEVICE_TOKEN',
    msg: 'Device not recognized',
  });

  bouncer.deletedTokens.add('bob-phone');
  const refused = await bob.client.post('/api/v1/mobile_push/test_notification');
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({
    code: 'INVALID_REMOTE_PUSH_DEVICE_TOKEN',
    msg: 'Device not recognized by the push bouncer',
  });
  bouncer.deletedTokens.delete('bob-phone');
});
