// The notification bot when a person joins (Zulip 10.2's process_new_human_user and
// notify_new_user): the inviter who asked (notify_referrer_on_join) gets "accepted your
// invitation" in a direct message; the signup announcements channel, when the organisation has
// one, gets "joined this organization." in the topic "signups".
import { NOTIFICATION_BOT, Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, ofType, type Params } from '@teamchat/testing';
import { runCommand } from '../src/manage';

let stack: Stack;
let admin: TestUser;
let member: TestUser;
let botId: number;
let signupsId: number;

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR, fullName: 'Ada Admin' });
  member = await stack.createUser({ fullName: 'Mem Ber' });
  botId = (await stack.db.userProfile.findFirstOrThrow({ where: { delivery_email: NOTIFICATION_BOT } })).id;
  signupsId = (await stack.createStream({ name: 'welcome', subscribers: [admin.id, member.id] })).id;
});
afterAll(() => stack.close());

const invite = (by: TestUser, params: Params) => by.client.post('/api/v1/invites', { stream_ids: '[]', ...params });

async function join(email: string, fullName: string): Promise<number> {
  const invitation = await stack.db.preregistrationUser.findFirstOrThrow({ where: { email }, orderBy: { id: 'desc' } });
  const response = await stack
    .anonymous()
    .post(`/join/${invitation.confirmation_key}/`, { full_name: fullName, password: 'a good password' });
  expect(response.status).toBe(200);
  return response.body.user_id as number;
}

async function setSignupsChannel(id: number) {
  const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
  await stack.db.realm.update({
    where: { id: realm.id },
    data: { settings: { ...(realm.settings as object), realm_signup_announcements_stream_id: id } },
  });
}

const botMessages = () =>
  stack.db.message.findMany({ where: { sender_id: botId, realm_id: stack.realm.id }, orderBy: { id: 'asc' } });

test('an email invitation with notify_referrer_on_join: the inviter is told, in a direct message from the bot', async () => {
  await setSignupsChannel(-1);
  expect((await invite(member, { invitee_emails: 'joiner@example.org', notify_referrer_on_join: true })).status).toBe(
    200,
  );
  const before = (await botMessages()).length;
  let newId = 0;
  const captured = await captureEvents(stack, async () => {
    newId = await join('joiner@example.org', 'Jo Iner');
  });
  const messages = (await botMessages()).slice(before);
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({
    stream_id: null,
    dm_key: [member.id, botId].sort((a, b) => a - b).join(','),
    content: `@_**Jo Iner|${newId}** accepted your invitation to join Zulip!`,
  });
  const [event] = ofType(captured, 'message');
  expect(event.recipientIds).toEqual([member.id, botId].sort((a, b) => a - b));
  expect(event.event).toMatchObject({
    message: {
      sender_email: NOTIFICATION_BOT,
      type: 'private',
      content: expect.stringContaining('accepted your invitation'),
    },
  });
  // The inviter reads it through the API, unread.
  const fetched = await member.client.get(`/api/v1/messages/${messages[0].id}`, {});
  expect(fetched.body.message).toMatchObject({ sender_id: botId, sender_full_name: 'Notification Bot', flags: [] });
});

test('notify_referrer_on_join false: the inviter is not told', async () => {
  await setSignupsChannel(-1);
  await invite(member, { invitee_emails: 'quiet@example.org', notify_referrer_on_join: false });
  const before = (await botMessages()).length;
  await join('quiet@example.org', 'Qui Et');
  expect(await botMessages()).toHaveLength(before);
});

test('with a signup announcements channel: "joined this organization." in the topic "signups"', async () => {
  await setSignupsChannel(signupsId);
  await invite(admin, { invitee_emails: 'announced@example.org', notify_referrer_on_join: false });
  const newId = await join('announced@example.org', 'An Nounced');
  const [message] = (await botMessages()).slice(-1);
  expect(message).toMatchObject({
    stream_id: signupsId,
    topic: 'signups',
    content: `@_**An Nounced|${newId}** joined this organization.`,
  });
  // Any way a person is made: an administrator's POST /users too; never a bot.
  await runCommand(
    stack.deps,
    [
      'change-user-role',
      '--realm',
      stack.realm.host,
      '--email',
      admin.deliveryEmail,
      '--permission',
      'can_create_users',
    ],
    () => {},
  );
  const created = await admin.client.post('/api/v1/users', {
    email: 'made@example.org',
    full_name: 'Ma De',
    password: 'a good password',
  });
  expect(created.status).toBe(200);
  expect((await botMessages()).slice(-1)[0].content).toBe(
    `@_**Ma De|${created.body.user_id}** joined this organization.`,
  );
  const before = (await botMessages()).length;
  await admin.client.post('/api/v1/bots', { full_name: 'Some Bot', short_name: 'somebot' });
  expect(await botMessages()).toHaveLength(before);

  // Archived, or unset: nothing.
  await stack.db.stream.update({ where: { id: signupsId }, data: { is_archived: true } });
  await admin.client.post('/api/v1/users', {
    email: 'x1@example.org',
    full_name: 'X One',
    password: 'a good password',
  });
  await stack.db.stream.update({ where: { id: signupsId }, data: { is_archived: false } });
  await setSignupsChannel(-1);
  await admin.client.post('/api/v1/users', {
    email: 'x2@example.org',
    full_name: 'X Two',
    password: 'a good password',
  });
  expect(await botMessages()).toHaveLength(before);
});
