// Administrative deactivation and reactivation of another user (DELETE /users/{id},
// POST /users/{id}/reactivate), and own-account deactivation on the same code path: who may,
// the last-owner rule, keys stopping at once, and the events clients get.
import { Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents, type EventQueue, type ReceivedEvent } from '@teamchat/testing';
import { createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  cast = await createCast(stack, 'deact');
});
afterAll(() => stack.close());

const strip = (events: ReceivedEvent[]) => events.map(({ id: _id, ...event }) => event);

/** Everything the queue got once the event tier has fanned out what was published. */
async function settled(queue: EventQueue): Promise<Record<string, any>[]> {
  await settleEvents(stack);
  return strip(await queue.drain());
}

describe('DELETE /users/{user_id}', () => {
  test('an administrator deactivates a member: their bots too, keys stop at once, events to everyone', async () => {
    const target = await stack.createUser({ email: 'deact-target@example.com' });
    const bot = await stack.createUser({ email: 'deact-target-bot@example.com', botType: 1, botOwnerId: target.id });
    const channel = await stack.createStream({
      name: 'deact channel',
      subscribers: [target.id, bot.id, cast.member.id],
    });
    // Warm the gateway's auth cache: deactivation must invalidate it.
    expect((await target.client.get('/api/v1/users/me')).status).toBe(200);
    expect((await bot.client.get('/api/v1/users/me')).status).toBe(200);
    const observer = await registerEventQueue(cast.member.client, {
      event_types: ['realm_user', 'realm_bot', 'subscription', 'user_group'],
    });
    const admin = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot'] });

    const response = await cast.admin.client.delete(`/api/v1/users/${target.id}`);
    expect(response.body).toEqual({ result: 'success', msg: '' });
    expectError(await target.client.get('/api/v1/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    expectError(await bot.client.get('/api/v1/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    const rows = await stack.db.userProfile.findMany({ where: { id: { in: [target.id, bot.id] } } });
    expect(rows.every((row) => !row.is_active)).toBe(true);

    const events = await settled(observer);
    expect(events).toEqual([
      { type: 'subscription', op: 'peer_remove', stream_ids: [channel.id], user_ids: [target.id] },
      { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: false } },
      { type: 'subscription', op: 'peer_remove', stream_ids: [channel.id], user_ids: [bot.id] },
      { type: 'realm_user', op: 'update', person: { user_id: bot.id, is_active: false } },
    ]);
    expect(await settled(admin)).toEqual([
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, is_active: false } },
    ]);

    // GET /users shows them deactivated; register lists them among the non-active users.
    const { body } = await cast.member.client.get(`/api/v1/users/${target.id}`);
    expect(body.user.is_active).toBe(false);
    const state = (await registerEventQueue(cast.member.client, { fetch_event_types: ['realm_user'] })).registration;
    expect(state.realm_non_active_users.map((u: { user_id: number }) => u.user_id)).toEqual(
      expect.arrayContaining([target.id, bot.id]),
    );
  });

  test('only owners deactivate owners; the only human owner cannot be deactivated', async () => {
    const realm = await stack.createRealm('deactowners', 'deactowners.example.test');
    const owner = await stack.createUser({ realm, email: 'owner@deactowners.test', role: Role.OWNER });
    const admin = await stack.createUser({ realm, email: 'admin@deactowners.test', role: Role.ADMINISTRATOR });
    const second = await stack.createUser({ realm, email: 'second@deactowners.test', role: Role.OWNER });

    expectError(
      await admin.client.delete(`/api/v1/users/${second.id}`),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expect((await owner.client.delete(`/api/v1/users/${second.id}`)).status).toBe(200);
    // Now the only owner, even deactivating themselves through this endpoint.
    expectError(
      await owner.client.delete(`/api/v1/users/${owner.id}`),
      400,
      'BAD_REQUEST',
      'Cannot deactivate the only organization owner',
    );
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: owner.id } })).is_active).toBe(true);
    // An administrator may deactivate themselves or another administrator.
    expect((await admin.client.delete(`/api/v1/users/${admin.id}`)).status).toBe(200);
  });

  test.each(['moderator', 'member', 'guest', 'bot'] as const)('a %s may not deactivate others', async (role) => {
    const target = await stack.createUser();
    expectError(
      await cast[role].client.delete(`/api/v1/users/${target.id}`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: target.id } })).is_active).toBe(true);
  });

  test('bots, unknown ids, other realms and deactivated users are refused', async () => {
    expectError(await cast.admin.client.delete(`/api/v1/users/${cast.bot.id}`), 400, 'BAD_REQUEST', 'No such user');
    expectError(await cast.admin.client.delete('/api/v1/users/987654'), 400, 'BAD_REQUEST', 'No such user');
    const realm = await stack.createRealm('deactother', 'deactother.example.test');
    const stranger = await stack.createUser({ realm, email: 'stranger@deactother.test' });
    expectError(await cast.admin.client.delete(`/api/v1/users/${stranger.id}`), 400, 'BAD_REQUEST', 'No such user');
    const gone = await stack.createUser();
    expect((await cast.admin.client.delete(`/api/v1/users/${gone.id}`)).status).toBe(200);
    expectError(await cast.admin.client.delete(`/api/v1/users/${gone.id}`), 400, 'BAD_REQUEST', 'User is deactivated');
  });

  test('deactivation_notification_comment (an email this server does not send) is reported as ignored', async () => {
    const target = await stack.createUser();
    const response = await cast.admin.client.delete(`/api/v1/users/${target.id}`, {
      deactivation_notification_comment: 'Farewell!',
    });
    expect(response.status).toBe(200);
    expect(response.body.ignored_parameters_unsupported).toEqual(['deactivation_notification_comment']);
  });

  test('own deactivation takes the same path: peer_remove for their channels', async () => {
    const leaver = await stack.createUser();
    const channel = await stack.createStream({ name: 'leaver channel', subscribers: [leaver.id, cast.member.id] });
    const observer = await registerEventQueue(cast.member.client, { event_types: ['realm_user', 'subscription'] });
    expect((await leaver.client.delete('/api/v1/users/me')).status).toBe(200);
    expect(await settled(observer)).toEqual([
      { type: 'subscription', op: 'peer_remove', stream_ids: [channel.id], user_ids: [leaver.id] },
      { type: 'realm_user', op: 'update', person: { user_id: leaver.id, is_active: false } },
    ]);
  });

  test('a private channel: only those who track its subscribers get peer_remove', async () => {
    const target = await stack.createUser();
    const channel = await stack.createStream({
      name: 'deact private',
      inviteOnly: true,
      subscribers: [target.id, cast.moderator.id],
    });
    const outsider = await registerEventQueue(cast.member.client, { event_types: ['subscription'] });
    const subscriber = await registerEventQueue(cast.moderator.client, { event_types: ['subscription'] });
    const admin = await registerEventQueue(cast.owner.client, { event_types: ['subscription'] });
    expect((await cast.admin.client.delete(`/api/v1/users/${target.id}`)).status).toBe(200);
    const peerRemove = { type: 'subscription', op: 'peer_remove', stream_ids: [channel.id], user_ids: [target.id] };
    expect(await settled(subscriber)).toEqual([peerRemove]);
    expect(await settled(admin)).toEqual([peerRemove]);
    expect(await settled(outsider)).toEqual([]);
  });
});

describe('POST /users/{user_id}/reactivate', () => {
  test('an administrator reactivates a user: key works again, groups and channels announced again', async () => {
    const target = await stack.createUser({ email: 'react-target@example.com' });
    const channel = await stack.createStream({ name: 'react channel', subscribers: [target.id, cast.member.id] });
    expect((await cast.admin.client.delete(`/api/v1/users/${target.id}`)).status).toBe(200);
    expectError(await target.client.get('/api/v1/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    const observer = await registerEventQueue(cast.member.client, {
      event_types: ['realm_user', 'subscription', 'user_group'],
    });

    expect((await cast.admin.client.post(`/api/v1/users/${target.id}/reactivate`)).body).toEqual({
      result: 'success',
      msg: '',
    });
    expect((await target.client.get('/api/v1/users/me')).status).toBe(200);

    const members = await systemGroupId(stack, 'role:members');
    const fullMembers = await systemGroupId(stack, 'role:fullmembers');
    expect(await settled(observer)).toEqual([
      { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: true } },
      { type: 'subscription', op: 'peer_add', stream_ids: [channel.id], user_ids: [target.id] },
      ...[members, fullMembers]
        .sort((a, b) => a - b)
        .map((groupId) => ({ type: 'user_group', op: 'add_members', group_id: groupId, user_ids: [target.id] })),
    ]);
    // The system groups of their role kept them throughout.
    const groupMembers = await cast.member.client.get(`/api/v1/user_groups/${members}/members`);
    expect(groupMembers.body.members).toContain(target.id);
    const state = (await registerEventQueue(cast.member.client, { fetch_event_types: ['realm_user'] })).registration;
    expect(state.realm_users.map((u: { user_id: number }) => u.user_id)).toContain(target.id);
  });

  test('reactivating an active user changes nothing', async () => {
    const target = await stack.createUser();
    const observer = await registerEventQueue(cast.member.client, { event_types: ['realm_user'] });
    expect((await cast.admin.client.post(`/api/v1/users/${target.id}/reactivate`)).status).toBe(200);
    expect(await settled(observer)).toEqual([]);
  });

  test('a bot whose owner is deactivated passes to the administrator reactivating it', async () => {
    const owner = await stack.createUser({ email: 'react-owner@example.com' });
    const bot = await stack.createUser({ email: 'react-bot@example.com', botType: 1, botOwnerId: owner.id });
    expect((await cast.admin.client.delete(`/api/v1/users/${owner.id}`)).status).toBe(200);
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: bot.id } })).is_active).toBe(false);
    const admin = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot'] });
    expect((await cast.admin.client.post(`/api/v1/users/${bot.id}/reactivate`)).status).toBe(200);
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: bot.id } })).bot_owner_id).toBe(cast.admin.id);
    expect(await settled(admin)).toEqual([
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, is_active: true } },
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, owner_id: cast.admin.id } },
    ]);
    expect((await bot.client.get('/api/v1/users/me')).status).toBe(200);
  });

  test.each(['moderator', 'member', 'guest'] as const)('a %s may not reactivate users', async (role) => {
    const target = await stack.createUser();
    expect((await cast.admin.client.delete(`/api/v1/users/${target.id}`)).status).toBe(200);
    expectError(
      await cast[role].client.post(`/api/v1/users/${target.id}/reactivate`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: target.id } })).is_active).toBe(false);
  });

  test('unknown ids: No such user', async () => {
    expectError(await cast.admin.client.post('/api/v1/users/987654/reactivate'), 400, 'BAD_REQUEST', 'No such user');
  });
});
