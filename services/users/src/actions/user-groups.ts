// User groups (Zulip's zerver/actions/user_groups.py and the checks of zerver/views/user_groups.py):
// creating, editing members and subgroups, settings, deactivation and reactivation. Every
// change is one transaction and announces itself with user_group events to the whole realm.

import type { EventFieldsOf } from '@teamchat/bus';
import { CannotDeactivateGroupInUseError, JsonableError } from '@teamchat/core';
import { transaction, type Tx, type UserGroup, type UserProfile } from '@teamchat/db';
import {
  groupForSettingValue,
  groupSettingApiValues,
  groupSettingIds,
  hasRealmPermission,
  recursiveSubgroupIds,
  sameGroupSettingValue,
  setGroupSetting,
  systemGroupId,
  USER_GROUP_PERMISSION_SETTINGS,
  USER_GROUP_SETTING_DEFAULTS,
  userGroupDicts,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { usersByIds } from '../lib/access';
import { accessUserGroupForUpdate, checkUserGroupName, deactivationObjections } from '../lib/user-groups';
import { activeUserIds } from '../lib/users';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

function settingConstraints(name: string) {
  const config = USER_GROUP_PERMISSION_SETTINGS[name];
  return {
    allowEveryone: config.allowEveryone,
    allowNobody: config.allowNobody,
    allowOwners: config.allowOwners,
    allowInternet: false,
  };
}

async function sendGroupEvent(deps: Deps, tx: Tx, realmId: number, event: EventFieldsOf<'user_group'>): Promise<void> {
  await deps.bus.sendEventOnCommit(tx, realmId, { type: 'user_group', ...event }, await activeUserIds(tx.db, realmId));
}

async function checkNameAvailable(tx: Tx, realmId: number, name: string): Promise<void> {
  if (await tx.db.userGroup.findFirst({ where: { realm_id: realmId, name }, select: { id: true } })) {
    throw new JsonableError(`User group '${name}' already exists.`);
  }
}

/**
 * Subgroups to add below `supergroup` (Zulip's lock_subgroups_with_respect_to_supergroup
 * and its callers): each must be an active named group of the realm, not already a direct
 * subgroup, and must not contain the supergroup (no cycles).
 */
async function checkNewSubgroups(tx: Tx, supergroup: UserGroup, subgroupIds: number[]): Promise<void> {
  const found = await tx.db.userGroup.findMany({
    where: { id: { in: subgroupIds }, realm_id: supergroup.realm_id, named: true },
  });
  const missing = subgroupIds.find((id) => !found.some((group) => group.id === id));
  if (missing !== undefined) throw new JsonableError(`Invalid user group ID: ${missing}`);
  if (found.some((group) => group.deactivated)) throw new JsonableError('User group is deactivated.');
  const existing = await tx.db.groupGroupMembership.findMany({
    where: { supergroup_id: supergroup.id, subgroup_id: { in: subgroupIds } },
  });
  if (existing.length)
    throw new JsonableError(`User group ${existing[0].subgroup_id} is already a subgroup of this group.`);
  for (const subgroupId of subgroupIds) {
    if ((await recursiveSubgroupIds(tx.db, subgroupId)).includes(supergroup.id)) {
      throw new JsonableError(`User group ${supergroup.id} is already a subgroup of one of the passed subgroups.`);
    }
  }
}

export interface NewUserGroup {
  name: string;
  description: string;
  memberIds: number[];
  subgroupIds: number[];
  /** Settings given in the request; the rest take the defaults. */
  settings: Record<string, GroupSettingValue | undefined>;
}

/** POST /user_groups/create */
export async function doCreateUserGroup(deps: Deps, actor: UserProfile, input: NewUserGroup): Promise<number> {
  return transaction(deps.db, async (tx) => {
    if (!(await hasRealmPermission(tx.db, actor, 'can_create_groups')))
      throw new JsonableError('Insufficient permission');
    const members = await usersByIds(tx.db, actor.realm_id, [...new Set(input.memberIds)], { allowDeactivated: false });
    const name = checkUserGroupName(input.name);
    const holders: Record<string, number> = {};
    for (const settingName of Object.keys(USER_GROUP_PERMISSION_SETTINGS)) {
      const given = input.settings[settingName];
      if (given !== undefined)
        holders[settingName] = await groupForSettingValue(
          tx.db,
          actor.realm_id,
          settingName,
          given,
          settingConstraints(settingName),
        );
    }
    await checkNameAvailable(tx, actor.realm_id, name);
    const group = await tx.db.userGroup.create({
      data: { realm_id: actor.realm_id, name, description: input.description, named: true, creator_id: actor.id },
    });
    for (const [settingName, holder] of Object.entries(USER_GROUP_SETTING_DEFAULTS)) {
      holders[settingName] ??=
        holder === 'creator'
          ? await groupForSettingValue(tx.db, actor.realm_id, settingName, {
              direct_members: [actor.id],
              direct_subgroups: [],
            })
          : await systemGroupId(tx.db, actor.realm_id, holder);
      await setGroupSetting(tx.db, actor.realm_id, 'user_group', group.id, settingName, holders[settingName]);
    }
    await tx.db.userGroupMembership.createMany({
      data: members.map((user) => ({ user_group_id: group.id, user_profile_id: user.id })),
    });
    const subgroupIds = [...new Set(input.subgroupIds)];
    if (subgroupIds.length) {
      await checkNewSubgroups(tx, group, subgroupIds);
      await tx.db.groupGroupMembership.createMany({
        data: subgroupIds.map((id) => ({ supergroup_id: group.id, subgroup_id: id })),
      });
    }
    const [dict] = await userGroupDicts(tx.db, actor.realm_id, { includeDeactivated: true, groupIds: [group.id] });
    await sendGroupEvent(deps, tx, actor.realm_id, { op: 'add', group: dict });
    return group.id;
  });
}

export interface MembershipChange {
  add?: number[];
  delete?: number[];
  addSubgroups?: number[];
  deleteSubgroups?: number[];
}

/**
 * POST /user_groups/{id}/members: all four changes or none. Joining or leaving oneself needs
 * can_join_group / can_leave_group (or the power to add / remove anyone).
 */
export async function doUpdateUserGroupMembership(
  deps: Deps,
  actor: UserProfile,
  groupId: number,
  change: MembershipChange,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    if (change.add?.length) {
      const self = change.add.length === 1 && change.add[0] === actor.id;
      const group = await accessEither(tx, actor, groupId, self ? 'can_join_group' : null, 'can_add_members_group');
      await usersByIds(tx.db, actor.realm_id, change.add, { allowDeactivated: false });
      const existing = await tx.db.userGroupMembership.findMany({
        where: { user_group_id: group.id, user_profile_id: { in: change.add } },
      });
      for (const id of change.add) {
        if (existing.some((row) => row.user_profile_id === id))
          throw new JsonableError(`User ${id} is already a member of this group`);
      }
      const ids = [...new Set(change.add)];
      await tx.db.userGroupMembership.createMany({
        data: ids.map((id) => ({ user_group_id: group.id, user_profile_id: id })),
      });
      await sendGroupEvent(deps, tx, actor.realm_id, { op: 'add_members', group_id: group.id, user_ids: ids });
    }
    if (change.delete?.length) {
      await usersByIds(tx.db, actor.realm_id, change.delete, { allowDeactivated: false });
      const self = change.delete.length === 1 && change.delete[0] === actor.id;
      const group = await accessEither(tx, actor, groupId, self ? 'can_leave_group' : null, 'can_remove_members_group');
      const members = await tx.db.userGroupMembership.findMany({
        where: { user_group_id: group.id, user: { is_active: true } },
        select: { user_profile_id: true },
      });
      for (const id of change.delete) {
        if (!members.some((row) => row.user_profile_id === id))
          throw new JsonableError(`There is no member '${id}' in this user group`);
      }
      const ids = [...new Set(change.delete)];
      await tx.db.userGroupMembership.deleteMany({ where: { user_group_id: group.id, user_profile_id: { in: ids } } });
      await sendGroupEvent(deps, tx, actor.realm_id, { op: 'remove_members', group_id: group.id, user_ids: ids });
    }
    if (change.addSubgroups?.length) {
      const group = await accessUserGroupForUpdate(tx.db, actor, groupId, 'can_add_members_group', {
        allowDeactivated: true,
      });
      const ids = [...new Set(change.addSubgroups)];
      await checkNewSubgroups(tx, group, ids);
      await tx.db.groupGroupMembership.createMany({
        data: ids.map((id) => ({ supergroup_id: group.id, subgroup_id: id })),
      });
      await sendGroupEvent(deps, tx, actor.realm_id, {
        op: 'add_subgroups',
        group_id: group.id,
        direct_subgroup_ids: ids,
      });
    }
    if (change.deleteSubgroups?.length) {
      const group = await accessUserGroupForUpdate(tx.db, actor, groupId, 'can_manage_group', {
        allowDeactivated: true,
      });
      const ids = [...new Set(change.deleteSubgroups)];
      const found = await tx.db.userGroup.findMany({
        where: { id: { in: ids }, realm_id: actor.realm_id, named: true },
        select: { id: true },
      });
      const missing = ids.find((id) => !found.some((row) => row.id === id));
      if (missing !== undefined) throw new JsonableError(`Invalid user group ID: ${missing}`);
      const existing = await tx.db.groupGroupMembership.findMany({
        where: { supergroup_id: group.id, subgroup_id: { in: ids } },
      });
      const absent = ids.find((id) => !existing.some((row) => row.subgroup_id === id));
      if (absent !== undefined) throw new JsonableError(`User group ${absent} is not a subgroup of this group.`);
      await tx.db.groupGroupMembership.deleteMany({ where: { supergroup_id: group.id, subgroup_id: { in: ids } } });
      await sendGroupEvent(deps, tx, actor.realm_id, {
        op: 'remove_subgroups',
        group_id: group.id,
        direct_subgroup_ids: ids,
      });
    }
  });
}

/** Access through `selfPermission` when acting on oneself, falling back to `permission` (Zulip's try/except). */
async function accessEither(
  tx: Tx,
  actor: UserProfile,
  groupId: number,
  selfPermission: string | null,
  permission: string,
): Promise<UserGroup> {
  if (selfPermission) {
    try {
      return await accessUserGroupForUpdate(tx.db, actor, groupId, selfPermission, { allowDeactivated: true });
    } catch (error) {
      if (!(error instanceof JsonableError)) throw error;
    }
  }
  return accessUserGroupForUpdate(tx.db, actor, groupId, permission, { allowDeactivated: true });
}

/** POST /user_groups/{id}/deactivate: refused with every objection while anything uses the group. */
export async function doDeactivateUserGroup(deps: Deps, actor: UserProfile, groupId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const group = await accessUserGroupForUpdate(tx.db, actor, groupId, 'can_manage_group', {
      allowDeactivated: false,
    });
    const objections = await deactivationObjections(tx.db, group);
    if (objections.length) throw new CannotDeactivateGroupInUseError(objections);
    await tx.db.userGroup.update({ where: { id: group.id }, data: { deactivated: true } });
    await sendGroupEvent(deps, tx, actor.realm_id, { op: 'update', group_id: group.id, data: { deactivated: true } });
    // Clients without include_deactivated_groups drop the group instead (Zulip sends both; the
    // event tier gives each queue the one its capabilities ask for).
    await sendGroupEvent(deps, tx, actor.realm_id, { op: 'remove', group_id: group.id });
  });
}

export interface UserGroupUpdate {
  name?: string;
  description?: string;
  deactivated?: boolean;
  /** {new, old?} per permission setting. */
  settings: Record<string, GroupSettingUpdate | undefined>;
}

/** PATCH /user_groups/{id}: name, description, reactivation and permission settings (Zulip's edit_user_group). */
export async function doUpdateUserGroup(
  deps: Deps,
  actor: UserProfile,
  groupId: number,
  update: UserGroupUpdate,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const group = await accessUserGroupForUpdate(tx.db, actor, groupId, 'can_manage_group', { allowDeactivated: true });
    const realmId = actor.realm_id;
    if (update.name !== undefined && update.name !== group.name) {
      const name = checkUserGroupName(update.name);
      await checkNameAvailable(tx, realmId, name);
      await tx.db.userGroup.update({ where: { id: group.id }, data: { name } });
      await sendGroupEvent(deps, tx, realmId, { op: 'update', group_id: group.id, data: { name } });
    }
    if (update.description !== undefined && update.description !== group.description) {
      await tx.db.userGroup.update({ where: { id: group.id }, data: { description: update.description } });
      await sendGroupEvent(deps, tx, realmId, {
        op: 'update',
        group_id: group.id,
        data: { description: update.description },
      });
    }
    if (update.deactivated === false && group.deactivated) {
      await tx.db.userGroup.update({ where: { id: group.id }, data: { deactivated: false } });
      await sendGroupEvent(deps, tx, realmId, { op: 'update', group_id: group.id, data: { deactivated: false } });
    }
    const currentIds = await groupSettingIds(tx.db, 'user_group', group.id);
    const currentValues = await groupSettingApiValues(tx.db, Object.values(currentIds));
    for (const settingName of Object.keys(USER_GROUP_PERMISSION_SETTINGS)) {
      const change = update.settings[settingName];
      if (!change) continue;
      const current =
        currentIds[settingName] === undefined
          ? await systemGroupId(tx.db, realmId, 'role:nobody')
          : currentValues.get(currentIds[settingName])!;
      if (change.old !== undefined && !sameGroupSettingValue(change.old, current)) {
        throw new JsonableError("'old' value does not match the expected value.", { code: 'EXPECTATION_MISMATCH' });
      }
      if (sameGroupSettingValue(change.new, current)) continue;
      const holder = await groupForSettingValue(
        tx.db,
        realmId,
        settingName,
        change.new,
        settingConstraints(settingName),
      );
      await setGroupSetting(tx.db, realmId, 'user_group', group.id, settingName, holder);
      const value = (await groupSettingApiValues(tx.db, [holder])).get(holder)!;
      await sendGroupEvent(deps, tx, realmId, { op: 'update', group_id: group.id, data: { [settingName]: value } });
    }
  });
}
