import { LIST_LIMITS, optional, param, pathInt, required, v, type AuthedContext, JsonableError } from '@teamchat/core';
import {
  groupSettingUpdate,
  groupSettingValue,
  hasRealmPermission,
  loadActor,
  userGroupDicts,
  USER_GROUP_PERMISSION_SETTINGS,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from '@teamchat/domain';
import {
  doCreateUserGroup,
  doDeactivateUserGroup,
  doUpdateUserGroup,
  doUpdateUserGroupMembership,
} from '../actions/user-groups';
import type { UsersDeps } from '../deps';
import { requireMemberOrAdmin } from '../lib/access';

/** Users or groups named by one request, bounded before any is looked up (LIST_LIMITS). */
const groupIds = v.list(v.id(), { maxLength: LIST_LIMITS.groupMembersPerRequest });

const SETTING_NAMES = Object.keys(USER_GROUP_PERMISSION_SETTINGS);

/** GET /user_groups (members and administrators only, as in Zulip). */
export async function getUserGroups({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { include_deactivated_groups } = params.parse({ include_deactivated_groups: optional(param.bool(), false) });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  return {
    user_groups: await userGroupDicts(deps.db, actor.realm_id, { includeDeactivated: include_deactivated_groups }),
  };
}

/** POST /user_groups/create */
export async function createUserGroup({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  if (!(await hasRealmPermission(deps.db, actor, 'can_create_groups')))
    throw new JsonableError('Insufficient permission');
  const input = params.parse({
    name: required(param.string()),
    description: required(param.string()),
    members: required(param.json(groupIds)),
    subgroups: optional(param.json(groupIds), []),
    ...Object.fromEntries(SETTING_NAMES.map((name) => [name, optional(param.json(groupSettingValue))])),
  }) as { name: string; description: string; members: number[]; subgroups: number[] } & Record<
    string,
    GroupSettingValue | undefined
  >;
  const groupId = await doCreateUserGroup(deps, actor, {
    name: input.name,
    description: input.description,
    memberIds: input.members,
    subgroupIds: input.subgroups,
    settings: Object.fromEntries(SETTING_NAMES.map((name) => [name, input[name]])),
  });
  return { group_id: groupId };
}

/** POST /user_groups/{id}/members */
export async function updateUserGroupMembers({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const groupId = pathInt(req, 'user_group_id');
  const change = params.parse({
    add: optional(param.json(groupIds)),
    delete: optional(param.json(groupIds)),
    add_subgroups: optional(param.json(groupIds)),
    delete_subgroups: optional(param.json(groupIds)),
  });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  if (
    !change.add?.length &&
    !change.delete?.length &&
    !change.add_subgroups?.length &&
    !change.delete_subgroups?.length
  ) {
    throw new JsonableError(
      'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
    );
  }
  await doUpdateUserGroupMembership(deps, actor, groupId, {
    add: change.add,
    delete: change.delete,
    addSubgroups: change.add_subgroups,
    deleteSubgroups: change.delete_subgroups,
  });
  return {};
}

/** POST /user_groups/{id}/subgroups (the older form of subgroup changes). */
export async function updateUserGroupSubgroups({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const groupId = pathInt(req, 'user_group_id');
  const change = params.parse({
    add: optional(param.json(groupIds)),
    delete: optional(param.json(groupIds)),
  });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  if (!change.add?.length && !change.delete?.length)
    throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
  await doUpdateUserGroupMembership(deps, actor, groupId, { addSubgroups: change.add, deleteSubgroups: change.delete });
  return {};
}

async function readableGroup(ctx: AuthedContext<UsersDeps>) {
  const groupId = pathInt(ctx.req, 'user_group_id');
  const { user: actor } = await loadActor(ctx.deps.db, ctx.requester.userId);
  requireMemberOrAdmin(actor);
  const group = await ctx.deps.db.userGroup.findFirst({
    where: { id: groupId, realm_id: actor.realm_id, named: true },
  });
  if (!group) throw new JsonableError('Invalid user group');
  if (group.deactivated) throw new JsonableError('User group is deactivated.');
  return { actor, group };
}

/** GET /user_groups/{id}/members: direct members, or everyone through subgroups too. */
export async function getUserGroupMembers(ctx: AuthedContext<UsersDeps>) {
  const { direct_member_only } = ctx.params.parse({ direct_member_only: optional(param.bool(), false) });
  const { group } = await readableGroup(ctx);
  const rows = direct_member_only
    ? await ctx.deps.db.$queryRaw<{ id: number }[]>`
        SELECT m.user_profile_id AS id FROM user_group_membership m JOIN user_profile u ON u.id = m.user_profile_id
        WHERE m.user_group_id = ${group.id} AND u.is_active ORDER BY 1`
    : await ctx.deps.db.$queryRaw<{ id: number }[]>`
        WITH RECURSIVE groups(id) AS (
          SELECT ${group.id}::int
          UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
        )
        SELECT DISTINCT m.user_profile_id AS id FROM user_group_membership m JOIN groups ON m.user_group_id = groups.id
        JOIN user_profile u ON u.id = m.user_profile_id AND u.is_active ORDER BY 1`;
  return { members: rows.map((row) => row.id) };
}

/** GET /user_groups/{id}/subgroups */
export async function getUserGroupSubgroups(ctx: AuthedContext<UsersDeps>) {
  const { direct_subgroup_only } = ctx.params.parse({ direct_subgroup_only: optional(param.bool(), false) });
  const { group } = await readableGroup(ctx);
  const rows = direct_subgroup_only
    ? await ctx.deps.db.$queryRaw<
        { id: number }[]
      >`SELECT subgroup_id AS id FROM group_group_membership WHERE supergroup_id = ${group.id} ORDER BY 1`
    : await ctx.deps.db.$queryRaw<{ id: number }[]>`
        WITH RECURSIVE groups(id) AS (
          SELECT subgroup_id FROM group_group_membership WHERE supergroup_id = ${group.id}
          UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
        )
        SELECT id FROM groups ORDER BY 1`;
  return { subgroups: rows.map((row) => row.id) };
}

/** GET /user_groups/{id}/members/{user_id} */
export async function getIsUserGroupMember(ctx: AuthedContext<UsersDeps>) {
  const userId = pathInt(ctx.req, 'user_id');
  const members = (await getUserGroupMembers(ctx)).members;
  const user = await ctx.deps.db.userProfile.findFirst({ where: { id: userId, realm_id: ctx.requester.realmId } });
  if (!user) throw new JsonableError('No such user');
  return { is_user_group_member: members.includes(userId) };
}

/** POST /user_groups/{id}/deactivate */
export async function deactivateUserGroup({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const groupId = pathInt(req, 'user_group_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  await doDeactivateUserGroup(deps, actor, groupId);
  return {};
}

/** PATCH /user_groups/{id} */
export async function updateUserGroup({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const groupId = pathInt(req, 'user_group_id');
  const input = params.parse({
    name: optional(param.string()),
    description: optional(param.string()),
    deactivated: optional(param.bool()),
    ...Object.fromEntries(SETTING_NAMES.map((name) => [name, optional(param.json(groupSettingUpdate))])),
  }) as { name?: string; description?: string; deactivated?: boolean } & Record<string, GroupSettingUpdate | undefined>;
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  const settings = Object.fromEntries(SETTING_NAMES.map((name) => [name, input[name]]));
  if (
    input.name === undefined &&
    input.description === undefined &&
    input.deactivated === undefined &&
    Object.values(settings).every((value) => value === undefined)
  ) {
    throw new JsonableError('No new data supplied');
  }
  await doUpdateUserGroup(deps, actor, groupId, {
    name: input.name,
    description: input.description,
    deactivated: input.deactivated,
    settings,
  });
  return {};
}
