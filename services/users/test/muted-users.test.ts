// Muted users: POST/DELETE /users/me/muted_users/{id}, the muted_users event and register
// section, and the muted user's messages arriving (and already there) read for the muter.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
});
afterAll(() => stack.close());

async function sendDirect(from: TestUser, to: TestUser, content: string): Promise<number> {
  const response = await from.client.post('/api/v1/messages', { type: 'direct', to: [to.id], content });
  expect(response.status).toBe(200);
  return response.body.id;
}

async function isRead(user: TestUser, messageId: number): Promise<boolean> {
  const row = await stack.db.userMessage.findUniqueOrThrow({
    where: { user_profile_id_message_id: { user_profile_id: user.id, message_id: messageId } },
  });
  return (row.flags & 1) === 1;
}

test('muting: listed to the muter only, older unread messages marked read, new ones arrive read', async () => {
  const muter = await stack.createUser();
  const muted = await stack.createUser();
  const bystander = await stack.createUser();
  const before = [await sendDirect(muted, muter, 'one'), await sendDirect(muted, muter, 'two')];
  const other = await sendDirect(bystander, muter, 'not muted');

  const captured = await captureEvents(stack, async () => {
    const response = await muter.client.post(`/api/v1/users/me/muted_users/${muted.id}`);
    expect(response.body).toEqual({ result: 'success', msg: '' });
  });
  const [event] = ofType(captured, 'muted_users');
  expect(event.event).toEqual({
    type: 'muted_users',
    muted_users: [{ id: muted.id, timestamp: expect.any(Number) }],
  });
  expect(event.recipientIds).toEqual([muter.id]);
  expect(Math.abs(event.event.muted_users[0].timestamp - Date.now() / 1000)).toBeLessThan(60);
  const [read] = ofType(captured, 'update_message_flags', 'add');
  expect(read.event).toMatchObject({ flag: 'read', messages: before, all: false });
  expect(read.recipientIds).toEqual([muter.id]);

  for (const id of before) expect(await isRead(muter, id)).toBe(true);
  expect(await isRead(muter, other)).toBe(false);
  const later = await sendDirect(muted, muter, 'three');
  expect(await isRead(muter, later)).toBe(true);
  expect(await isRead(bystander, await sendDirect(muted, bystander, 'hi'))).toBe(false);

  const state = (await registerEventQueue(muter.client, { fetch_event_types: ['muted_users'] })).registration;
  expect(state.muted_users).toEqual([{ id: muted.id, timestamp: event.event.muted_users[0].timestamp }]);
  const theirs = (await registerEventQueue(muted.client, { fetch_event_types: ['muted_users'] })).registration;
  expect(theirs.muted_users).toEqual([]);
});

test('unmuting: the list shrinks; new messages arrive unread again', async () => {
  const muter = await stack.createUser();
  const muted = await stack.createUser();
  await muter.client.post(`/api/v1/users/me/muted_users/${muted.id}`);
  const captured = await captureEvents(stack, async () => {
    expect((await muter.client.delete(`/api/v1/users/me/muted_users/${muted.id}`)).status).toBe(200);
  });
  expect(ofType(captured, 'muted_users')[0].event).toEqual({ type: 'muted_users', muted_users: [] });
  expect(await stack.db.mutedUser.count({ where: { user_profile_id: muter.id } })).toBe(0);
  expect(await isRead(muter, await sendDirect(muted, muter, 'back'))).toBe(false);
});

test('bots and deactivated users may be muted', async () => {
  const muter = await stack.createUser();
  const bot = await stack.createUser({ botType: 1, botOwnerId: muter.id });
  const gone = await stack.createUser();
  await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
  expect((await muter.client.post(`/api/v1/users/me/muted_users/${bot.id}`)).status).toBe(200);
  expect((await muter.client.post(`/api/v1/users/me/muted_users/${gone.id}`)).status).toBe(200);
  const state = (await registerEventQueue(muter.client, { fetch_event_types: ['muted_users'] })).registration;
  expect(state.muted_users.map((mute: { id: number }) => mute.id)).toEqual([bot.id, gone.id]);
});

test("Zulip's errors", async () => {
  const muter = await stack.createUser();
  const muted = await stack.createUser();
  const path = (id: number | string) => `/api/v1/users/me/muted_users/${id}`;
  expectError(await muter.client.post(path(muter.id)), 400, 'BAD_REQUEST', 'Cannot mute self');
  expectError(await muter.client.post(path(999999)), 400, 'BAD_REQUEST', 'No such user');
  expectError(await muter.client.delete(path(999999)), 400, 'BAD_REQUEST', 'No such user');
  expectError(await muter.client.delete(path(muted.id)), 400, 'BAD_REQUEST', 'User is not muted');
  await muter.client.post(path(muted.id));
  expectError(await muter.client.post(path(muted.id)), 400, 'BAD_REQUEST', 'User already muted');
  expect((await muter.client.post(path('abc'))).status).toBe(404);
});
