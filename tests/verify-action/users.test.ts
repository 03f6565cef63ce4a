// verify_action for users: accounts created, renamed, given another role or avatar, deactivated
// and reactivated; custom profile fields and their values; user groups (created, renamed,
// members, subgroups, group settings, deactivated); bots; user status; muted users; presence.
import { Role } from '@teamchat/domain';
import type { Stack, TestUser } from '@teamchat/stack';
import { verifyAction } from '@teamchat/testing';
import { CAPABILITY_SETS, ok, postImage, startSuiteStack, WITH_SUBSCRIBERS } from './support';

let stack: Stack;
let me: TestUser;
let other: TestUser;
let counter = 0;

beforeAll(async () => {
  ({ stack, me, other } = await startSuiteStack(['messages', 'channels', 'events', 'uploads']));
});

afterAll(() => stack?.close());

async function newMember(): Promise<TestUser> {
  const user = await stack.createUser({ fullName: `Member ${++counter}` });
  ok(
    await me.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [user.id],
    }),
  );
  return user;
}

describe.each([...CAPABILITY_SETS, WITH_SUBSCRIBERS])('users, %s', (_name, register) => {
  // (POST /users needs the server's can_create_users permission: the account is made by the users
  // service's own action, as an invitation's acceptance or `manage create-user` makes it.)
  test('a user created', async () => {
    await verifyAction(stack, me, register, () => stack.createUser({ fullName: `Created ${++counter}` }));
  });

  test("another user's name changed", async () => {
    const user = await newMember();
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/users/${user.id}`, { full_name: `Renamed ${++counter}` }).then(ok),
    );
  });

  test('the user renames themselves', async () => {
    await verifyAction(stack, me, register, () =>
      me.client.patch('/api/v1/settings', { full_name: `Me Myself ${++counter}` }).then(ok),
    );
  });

  test.each([Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.GUEST])(
    "another user's role set to %s and back",
    async (role) => {
      const user = await newMember();
      await verifyAction(stack, me, register, () => me.client.patch(`/api/v1/users/${user.id}`, { role }).then(ok));
      await verifyAction(stack, me, register, () =>
        me.client.patch(`/api/v1/users/${user.id}`, { role: Role.MEMBER }).then(ok),
      );
    },
  );

  test("the user's own role changed (member, administrator, guest, member)", async () => {
    const user = await newMember();
    for (const role of [Role.ADMINISTRATOR, Role.GUEST, Role.MEMBER]) {
      await verifyAction(stack, user, register, () => me.client.patch(`/api/v1/users/${user.id}`, { role }).then(ok));
    }
  });

  test('the user uploads an avatar, then removes it', async () => {
    const user = await newMember();
    await verifyAction(stack, user, register, () => postImage(user.client, '/api/v1/users/me/avatar').then(ok));
    await verifyAction(stack, me, register, () => postImage(user.client, '/api/v1/users/me/avatar').then(ok));
    await verifyAction(stack, user, register, () => user.client.delete('/api/v1/users/me/avatar').then(ok));
  });

  test('a user deactivated and reactivated', async () => {
    const user = await newMember();
    ok(
      await me.client.post(`/api/v1/user_groups/create`, {
        name: `with ${user.id}`,
        description: 'd',
        members: [user.id],
      }),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/users/${user.id}`).then(ok));
    await verifyAction(stack, me, register, () => me.client.post(`/api/v1/users/${user.id}/reactivate`).then(ok));
  });

  test('a custom profile field created, reordered, and a value set and cleared', async () => {
    const { id } = await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/realm/profile_fields', { name: `Field ${++counter}`, field_type: 1, hint: 'h' }).then(ok),
    ).then(({ events }) =>
      (events.find((event) => event.type === 'custom_profile_fields')!.fields as { id: number }[]).at(-1)!,
    );
    const fields = ok(await me.client.get('/api/v1/realm/profile_fields')).custom_fields as { id: number }[];
    await verifyAction(stack, me, register, () =>
      me.client.patch('/api/v1/realm/profile_fields', { order: fields.map((field) => field.id).reverse() }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      other.client.patch('/api/v1/users/me/profile_data', { data: [{ id, value: 'some **value**' }] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      other.client.delete('/api/v1/users/me/profile_data', { data: [id] }).then(ok),
    );
  });

  test('a user group created, renamed, its members and subgroups changed, deactivated', async () => {
    const user = await newMember();
    const name = `group ${++counter}`;
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/user_groups/create', { name, description: 'a group', members: [me.id] }).then(ok),
    );
    const groups = ok(await me.client.get('/api/v1/user_groups')).user_groups as { id: number; name: string }[];
    const groupId = groups.find((group) => group.name === name)!.id;
    const subgroupId = groups.find((group) => group.name === 'role:moderators')!.id;
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/user_groups/${groupId}`, { name: `${name} renamed`, description: 'other' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post(`/api/v1/user_groups/${groupId}/members`, { add: [user.id] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post(`/api/v1/user_groups/${groupId}/members`, { delete: [user.id] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post(`/api/v1/user_groups/${groupId}/subgroups`, { add: [subgroupId] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post(`/api/v1/user_groups/${groupId}/subgroups`, { delete: [subgroupId] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client
        .patch(`/api/v1/user_groups/${groupId}`, {
          can_mention_group: { new: { direct_members: [user.id], direct_subgroups: [] } },
        })
        .then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.post(`/api/v1/user_groups/${groupId}/deactivate`).then(ok));
  });

  test('a bot created, updated, deactivated', async () => {
    const n = ++counter;
    const { user_id: botId } = ok(
      await me.client.post('/api/v1/bots', { full_name: `Bot ${n}`, short_name: `bot${n}`, bot_type: 1 }),
    );
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/bots/${botId}`, { full_name: `Bot ${n} renamed` }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/bots/${botId}`, { bot_owner_id: other.id }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/bots/${botId}`).then(ok));
  });

  test('a bot created (the events of its creation)', async () => {
    const n = ++counter;
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/bots', { full_name: `Made ${n}`, short_name: `made${n}`, bot_type: 1 }).then(ok),
    );
  });

  test('user status set and cleared', async () => {
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/users/me/status', { status_text: 'at lunch', emoji_name: 'car' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/users/me/status', { away: true }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/users/me/status', { status_text: '', emoji_name: '', away: false }).then(ok),
    );
  });

  test('a user muted and unmuted', async () => {
    const user = await newMember();
    await verifyAction(stack, me, register, () => me.client.post(`/api/v1/users/me/muted_users/${user.id}`).then(ok));
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/users/me/muted_users/${user.id}`).then(ok));
  });

  test('presence of another user', async () => {
    const user = await newMember();
    await verifyAction(stack, me, register, () =>
      user.client.post('/api/v1/users/me/presence', { status: 'active', new_user_input: true }).then(ok),
    );
  });
});
