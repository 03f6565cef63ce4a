// Access to user groups for changes (Zulip's zerver/lib/user_groups.py): who may manage,
// join, leave or add to a group, and what still uses a group that someone wants to deactivate.

import { appendTo, JsonableError, type GroupObjection } from '@teamchat/core';
import type { TxClient, UserGroup, UserProfile } from '@teamchat/db';
import {
  hasRealmPermission,
  hasUserGroupPermission,
  USER_GROUP_INVALID_NAME_PREFIXES,
  USER_GROUP_NAME_MAX_LENGTH,
} from '@teamchat/domain';

type Reader = TxClient;

/** A named group of the realm, locked for the rest of the transaction. */
export async function lockUserGroup(
  db: Reader,
  realmId: number,
  groupId: number,
  options: { allowDeactivated: boolean },
): Promise<UserGroup> {
  const [row] = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM user_group WHERE id = ${groupId} AND realm_id = ${realmId} AND named FOR UPDATE`;
  if (!row) throw new JsonableError('Invalid user group');
  const group = await db.userGroup.findUniqueOrThrow({ where: { id: row.id } });
  if (group.deactivated && !options.allowDeactivated) throw new JsonableError('User group is deactivated.');
  return group;
}

/**
 * Zulip's access_user_group_for_update: system groups change only with roles; otherwise
 * can_manage_all_groups or the group's can_manage_group grant everything, and
 * `permission` (e.g. can_join_group) grants that one thing.
 */
export async function accessUserGroupForUpdate(
  db: Reader,
  actor: UserProfile,
  groupId: number,
  permission: string,
  options: { allowDeactivated: boolean },
): Promise<UserGroup> {
  const group = await lockUserGroup(db, actor.realm_id, groupId, options);
  if (group.is_system_group) throw new JsonableError('Insufficient permission');
  if (await hasRealmPermission(db, actor, 'can_manage_all_groups')) return group;
  if (await hasUserGroupPermission(db, actor, group.id, 'can_manage_group')) return group;
  if (permission !== 'can_manage_group' && (await hasUserGroupPermission(db, actor, group.id, permission)))
    return group;
  throw new JsonableError('Insufficient permission');
}

/** Zulip's check_user_group_name. */
export function checkUserGroupName(name: string): string {
  if (name.trim() === '') throw new JsonableError("User group name can't be empty!");
  if ([...name].length > USER_GROUP_NAME_MAX_LENGTH) {
    throw new JsonableError(`User group name cannot exceed ${USER_GROUP_NAME_MAX_LENGTH} characters.`);
  }
  for (const prefix of USER_GROUP_INVALID_NAME_PREFIXES) {
    if (name.startsWith(prefix)) throw new JsonableError(`User group name cannot start with '${prefix}'.`);
  }
  return name;
}

/**
 * Everything that still uses the group (Zulip's access_user_group_for_deactivation):
 * active named supergroups, and settings of active channels, active groups and the realm that
 * hold it directly or through an anonymous group that has it as a subgroup.
 */
export async function deactivationObjections(db: Reader, group: UserGroup): Promise<GroupObjection[]> {
  const objections: GroupObjection[] = [];
  const supergroups = await db.groupGroupMembership.findMany({
    where: { subgroup_id: group.id },
    select: { supergroup: { select: { id: true, named: true, deactivated: true } } },
    orderBy: { supergroup_id: 'asc' },
  });
  const namedSupergroups = supergroups
    .filter((row) => row.supergroup.named && !row.supergroup.deactivated)
    .map((row) => row.supergroup.id);
  if (namedSupergroups.length) objections.push({ type: 'subgroup', supergroup_ids: namedSupergroups });

  const holders = [group.id, ...supergroups.filter((row) => !row.supergroup.named).map((row) => row.supergroup.id)];
  const settings = await db.groupSetting.findMany({
    where: { realm_id: group.realm_id, group_id: { in: holders } },
    select: { owner_kind: true, owner_id: true, name: true },
    orderBy: [{ owner_id: 'asc' }, { name: 'asc' }],
  });
  const byOwner = (kind: string) => {
    const owners = new Map<number, string[]>();
    for (const setting of settings.filter((row) => row.owner_kind === kind)) {
      appendTo(owners, setting.owner_id, setting.name);
    }
    return owners;
  };
  const channels = byOwner('stream');
  if (channels.size) {
    const active = await db.stream.findMany({
      where: { id: { in: [...channels.keys()] }, is_archived: false },
      select: { id: true },
    });
    for (const { id } of active.sort((a, b) => a.id - b.id))
      objections.push({ type: 'channel', channel_id: id, settings: channels.get(id)! });
  }
  const groups = byOwner('user_group');
  if (groups.size) {
    const active = await db.userGroup.findMany({
      where: { id: { in: [...groups.keys()] }, named: true, deactivated: false },
      select: { id: true },
    });
    for (const { id } of active.sort((a, b) => a.id - b.id))
      objections.push({ type: 'user_group', group_id: id, settings: groups.get(id)! });
  }
  const realmSettings = byOwner('realm').get(group.realm_id);
  if (realmSettings) objections.push({ type: 'realm', settings: realmSettings });
  return objections;
}
