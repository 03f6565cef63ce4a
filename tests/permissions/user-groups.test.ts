// Permission matrix: user groups and their group-setting permissions (can_create_groups,
// can_manage_all_groups, and a group's can_manage_group, can_add_members_group, can_join_group,
// can_leave_group, can_remove_members_group). Guests and bots are refused by every group
// endpoint as by Zulip's @require_member_or_admin.

import { systemGroupId } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { createCast, INSUFFICIENT, matrix, only, refused, type Cast, type RoleName } from './matrix';

let stack: Stack;
let cast: Cast;
const theCast = () => cast;

beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const GUEST = refused('Not allowed for guest users');
const BOT = refused('This endpoint does not accept bot requests.');
/** The decorator's refusals for guests and bots, `otherwise` for the rest. */
const humans = (allowed: RoleName[], otherwise = INSUFFICIENT) => only(allowed, otherwise, { guest: GUEST, bot: BOT });

let counter = 0;
const uniqueName = (prefix: string) => `${prefix} ${++counter}`;

/** A group created through the API by `creator` (who holds its can_manage_group by default). */
async function createGroup(
  creator: TestUser,
  extra: Record<string, unknown> = {},
  members: number[] = [],
): Promise<number> {
  const response = await creator.client.post('/api/v1/user_groups/create', {
    name: uniqueName('group'),
    description: 'd',
    members,
    ...extra,
  });
  if (response.status !== 200) throw new Error(`group creation failed: ${JSON.stringify(response.body)}`);
  return response.body.group_id;
}

async function directMembers(groupId: number): Promise<number[]> {
  const rows = await stack.db.userGroupMembership.findMany({
    where: { user_group_id: groupId },
    select: { user_profile_id: true },
  });
  return rows.map((row) => row.user_profile_id);
}

const anonymous = (...users: TestUser[]) => ({ direct_members: users.map((user) => user.id), direct_subgroups: [] });

describe('reading groups', () => {
  matrix('GET /user_groups', theCast, {
    act: (actor) => actor.client.get('/api/v1/user_groups'),
    expect: humans(['owner', 'administrator', 'moderator', 'member']),
  });
  matrix('GET /user_groups/{id}/members', theCast, {
    setup: () => createGroup(cast.owner),
    act: (actor, groupId) => actor.client.get(`/api/v1/user_groups/${groupId}/members`),
    expect: humans(['owner', 'administrator', 'moderator', 'member']),
  });
});

describe('POST /user_groups/create', () => {
  const create = {
    setup: async () => uniqueName('created'),
    act: (actor: TestUser, name: string) =>
      actor.client.post('/api/v1/user_groups/create', { name, description: 'd', members: [] }),
    verify: async (name: string, allowed: boolean) =>
      expect(await stack.db.userGroup.count({ where: { realm_id: stack.realm.id, name } })).toBe(allowed ? 1 : 0),
  };
  // can_create_groups defaults to role:members.
  matrix('with the default can_create_groups (members)', theCast, {
    ...create,
    expect: humans(['owner', 'administrator', 'moderator', 'member']),
  });

  describe('with can_create_groups = moderators', () => {
    beforeAll(() => stack.setRealmGroupSetting('can_create_groups', 'role:moderators'));
    afterAll(() => stack.setRealmGroupSetting('can_create_groups', 'role:members'));
    matrix('a group', theCast, { ...create, expect: humans(['owner', 'administrator', 'moderator']) });
  });

  // can_manage_group cannot be role:everyone / role:internet (spec), whoever asks.
  matrix('with can_manage_group = role:everyone', theCast, {
    setup: async () => uniqueName('everyone'),
    act: async (actor, name) =>
      actor.client.post('/api/v1/user_groups/create', {
        name,
        description: 'd',
        members: [],
        can_manage_group: await systemGroupId(stack.db, stack.realm.id, 'role:everyone'),
      }),
    expect: humans([], refused("'can_manage_group' setting cannot be set to 'role:everyone' group.")),
  });
});

describe('PATCH /user_groups/{id}', () => {
  const describeAs = (actor: TestUser, groupId: number) =>
    actor.client.patch(`/api/v1/user_groups/${groupId}`, { description: 'changed' });
  const description = async (groupId: number) =>
    (await stack.db.userGroup.findUniqueOrThrow({ where: { id: groupId } })).description;

  // can_manage_all_groups defaults to role:owners; the creator holds can_manage_group.
  matrix('description of a group the owner created', theCast, {
    setup: () => createGroup(cast.owner),
    act: describeAs,
    verify: async (groupId, allowed) => expect(await description(groupId)).toBe(allowed ? 'changed' : 'd'),
    expect: humans(['owner']),
  });

  matrix('description of a group the member created', theCast, {
    setup: () => createGroup(cast.member),
    act: describeAs,
    verify: async (groupId, allowed) => expect(await description(groupId)).toBe(allowed ? 'changed' : 'd'),
    expect: humans(['owner', 'member']),
  });

  matrix('description of a group whose can_manage_group is role:moderators', theCast, {
    setup: async () =>
      createGroup(cast.owner, { can_manage_group: await systemGroupId(stack.db, stack.realm.id, 'role:moderators') }),
    act: describeAs,
    expect: humans(['owner', 'administrator', 'moderator']),
  });

  // Guests and bots are refused even when a group setting names them.
  matrix('description of a group whose can_manage_group names the member, the guest and the bot', theCast, {
    setup: () => createGroup(cast.owner, { can_manage_group: anonymous(cast.member, cast.guest, cast.bot) }),
    act: describeAs,
    verify: async (groupId, allowed) => expect(await description(groupId)).toBe(allowed ? 'changed' : 'd'),
    expect: humans(['owner', 'member']),
  });

  matrix('can_manage_all_groups = administrators: any group', theCast, {
    setup: async () => {
      await stack.setRealmGroupSetting('can_manage_all_groups', 'role:administrators');
      return createGroup(cast.member);
    },
    act: describeAs,
    verify: async () => stack.setRealmGroupSetting('can_manage_all_groups', 'role:owners'),
    expect: humans(['owner', 'administrator', 'member']),
  });

  matrix('a system group (role:members): nobody', theCast, {
    setup: () => systemGroupId(stack.db, stack.realm.id, 'role:members'),
    act: describeAs,
    expect: humans([]),
  });

  matrix('can_join_group of a group the member created', theCast, {
    setup: () => createGroup(cast.member),
    act: async (actor, groupId) =>
      actor.client.patch(`/api/v1/user_groups/${groupId}`, {
        can_join_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:members') },
      }),
    expect: humans(['owner', 'member']),
  });
});

describe('POST /user_groups/{id}/members', () => {
  let target: TestUser;
  beforeAll(async () => {
    target = await stack.createUser({ email: 'group-target@example.com', fullName: 'Group target' });
  });

  // can_add_members_group defaults to the creator.
  matrix('add another user to a group the owner created', theCast, {
    setup: () => createGroup(cast.owner),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { add: [target.id] }),
    verify: async (groupId, allowed) => expect((await directMembers(groupId)).includes(target.id)).toBe(allowed),
    expect: humans(['owner']),
  });

  matrix('add another user, can_add_members_group = role:moderators', theCast, {
    setup: async () =>
      createGroup(cast.owner, {
        can_add_members_group: await systemGroupId(stack.db, stack.realm.id, 'role:moderators'),
      }),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { add: [target.id] }),
    verify: async (groupId, allowed) => expect((await directMembers(groupId)).includes(target.id)).toBe(allowed),
    expect: humans(['owner', 'administrator', 'moderator']),
  });

  // can_join_group lets one add oneself, and nobody else.
  matrix('join (add oneself), can_join_group = role:members', theCast, {
    setup: async () =>
      createGroup(cast.owner, { can_join_group: await systemGroupId(stack.db, stack.realm.id, 'role:members') }),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { add: [actor.id] }),
    verify: async (groupId, allowed, actor) => expect((await directMembers(groupId)).includes(actor.id)).toBe(allowed),
    expect: humans(['owner', 'administrator', 'moderator', 'member']),
  });

  matrix('join (add oneself), can_join_group = role:nobody (default)', theCast, {
    setup: () => createGroup(cast.owner),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { add: [actor.id] }),
    verify: async (groupId, allowed, actor) => expect((await directMembers(groupId)).includes(actor.id)).toBe(allowed),
    expect: humans(['owner']),
  });

  matrix('add another user, can_join_group = role:members (joining is not adding)', theCast, {
    setup: async () =>
      createGroup(cast.owner, { can_join_group: await systemGroupId(stack.db, stack.realm.id, 'role:members') }),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { add: [target.id] }),
    expect: humans(['owner']),
  });

  // can_leave_group defaults to role:everyone.
  matrix('leave (remove oneself)', theCast, {
    setup: () =>
      createGroup(
        cast.owner,
        {},
        Object.values(cast).map((user) => user.id),
      ),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { delete: [actor.id] }),
    verify: async (groupId, allowed, actor) => expect((await directMembers(groupId)).includes(actor.id)).toBe(!allowed),
    expect: humans(['owner', 'administrator', 'moderator', 'member']),
  });

  matrix('leave (remove oneself), can_leave_group = role:nobody', theCast, {
    setup: async () =>
      createGroup(
        cast.owner,
        { can_leave_group: await systemGroupId(stack.db, stack.realm.id, 'role:nobody') },
        Object.values(cast).map((user) => user.id),
      ),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { delete: [actor.id] }),
    expect: humans(['owner']),
  });

  // can_remove_members_group defaults to the creator.
  matrix('remove another user from a group the member created', theCast, {
    setup: () => createGroup(cast.member, {}, [target.id]),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/members`, { delete: [target.id] }),
    verify: async (groupId, allowed) => expect((await directMembers(groupId)).includes(target.id)).toBe(!allowed),
    expect: humans(['owner', 'member']),
  });
});

// Zulip's deactivate_user_group has no @require_member_or_admin: it is access_user_group_for_
// deactivation alone, where a guest never holds can_manage_group (it does not allow
// role:everyone) but a bot named in it does.
describe('POST /user_groups/{id}/deactivate', () => {
  const deactivated = async (groupId: number) =>
    (await stack.db.userGroup.findUniqueOrThrow({ where: { id: groupId } })).deactivated;

  matrix('a group the owner created', theCast, {
    setup: () => createGroup(cast.owner),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/deactivate`),
    verify: async (groupId, allowed) => expect(await deactivated(groupId)).toBe(allowed),
    expect: only(['owner'], INSUFFICIENT),
  });

  matrix('a group the member created', theCast, {
    setup: () => createGroup(cast.member),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/deactivate`),
    verify: async (groupId, allowed) => expect(await deactivated(groupId)).toBe(allowed),
    expect: only(['owner', 'member'], INSUFFICIENT),
  });

  matrix('a group whose can_manage_group names the member, the guest and the bot', theCast, {
    setup: () => createGroup(cast.owner, { can_manage_group: anonymous(cast.member, cast.guest, cast.bot) }),
    act: (actor, groupId) => actor.client.post(`/api/v1/user_groups/${groupId}/deactivate`),
    verify: async (groupId, allowed) => expect(await deactivated(groupId)).toBe(allowed),
    expect: only(['owner', 'member', 'bot'], INSUFFICIENT),
  });
});
