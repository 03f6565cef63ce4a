// Channel group settings: which values each accepts, {new, old} updates, and the groups holding them.
import { JsonableError, LIST_LIMITS, v } from '@teamchat/core';
import type { TxClient } from '@teamchat/db';
import {
  grantsMetadataAccess,
  groupForSettingValue,
  sameGroupSettingValue,
  setGroupSetting,
  SystemGroup,
  systemGroupId,
  type GroupSettingValue,
} from '@teamchat/domain';

/** Channel-level delete permissions: changing them needs can_set_delete_message_policy_group (rule 7). */
export const DELETE_PERMISSION_SETTINGS = new Set(['can_delete_any_message_group', 'can_delete_own_message_group']);

export const groupSettingValue: v.Validator<GroupSettingValue> = v.union(
  v.id(),
  v.object({
    direct_members: v.list(v.id(), { maxLength: LIST_LIMITS.groupMembersPerRequest }),
    direct_subgroups: v.list(v.id(), { maxLength: LIST_LIMITS.groupMembersPerRequest }),
  }),
);

export const groupSettingUpdate = v.object({ new: groupSettingValue }, { old: groupSettingValue });
export type GroupSettingUpdate = v.Infer<typeof groupSettingUpdate>;

/**
 * Zulip's parse_group_setting_value: an anonymous value naming just one group is that group,
 * and one naming nobody is role:nobody.
 */
export function normaliseSettingValue(value: GroupSettingValue, nobodyGroupId: number): GroupSettingValue {
  if (typeof value === 'number') return value;
  if (value.direct_members.length === 0 && value.direct_subgroups.length === 1) return value.direct_subgroups[0];
  if (value.direct_members.length === 0 && value.direct_subgroups.length === 0) return nobodyGroupId;
  return value;
}

export async function nobodyGroupId(db: Parameters<typeof systemGroupId>[0], realmId: number): Promise<number> {
  return systemGroupId(db, realmId, SystemGroup.NOBODY);
}

/**
 * The value a {new, old} update asks for, or null when it changes nothing. A given `old` must
 * match the current value (Zulip's validate_group_setting_value_change).
 */
export function requestedSettingValue(
  current: GroupSettingValue,
  update: GroupSettingUpdate,
  nobodyId: number,
): GroupSettingValue | null {
  if (update.old !== undefined && !sameGroupSettingValue(normaliseSettingValue(update.old, nobodyId), current)) {
    throw new JsonableError("'old' value does not match the expected value.");
  }
  const wanted = normaliseSettingValue(update.new, nobodyId);
  return sameGroupSettingValue(wanted, current) ? null : wanted;
}

/**
 * Checks `value` for `settingName` and returns the group that will hold it (new anonymous groups
 * are created). Settings whose holders see the channel may not be role:everyone: guests must not
 * get in through them (Zulip's allow_everyone_group=False).
 */
export async function holderGroupFor(
  tx: TxClient,
  realmId: number,
  settingName: string,
  value: GroupSettingValue,
): Promise<number> {
  const allowEveryone = !grantsMetadataAccess(settingName);
  return groupForSettingValue(tx, realmId, settingName, value, { allowEveryone, allowInternet: false });
}

/**
 * Points the channel's setting at `groupId`; an anonymous group it no longer uses is deleted
 * (anonymous groups back exactly one setting).
 */
export async function replaceStreamSetting(
  tx: TxClient,
  realmId: number,
  streamId: number,
  settingName: string,
  groupId: number,
  previousGroupId: number | undefined,
): Promise<void> {
  await setGroupSetting(tx, realmId, 'stream', streamId, settingName, groupId);
  if (previousGroupId === undefined || previousGroupId === groupId) return;
  const previous = await tx.userGroup.findUnique({ where: { id: previousGroupId }, select: { named: true } });
  if (previous && !previous.named && (await tx.groupSetting.count({ where: { group_id: previousGroupId } })) === 0) {
    await tx.userGroup.delete({ where: { id: previousGroupId } });
  }
}
