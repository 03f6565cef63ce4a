// Channel group settings: which values each accepts, {new, old} updates, and the groups holding them.
import type { TxClient } from '@teamchat/db';
import {
  grantsMetadataAccess,
  groupForSettingValue,
  replaceGroupSetting,
  SystemGroup,
  systemGroupId,
  type GroupSettingValue,
} from '@teamchat/domain';

/** Channel-level delete permissions: changing them needs can_set_delete_message_policy_group (rule 7). */
export const DELETE_PERMISSION_SETTINGS = new Set(['can_delete_any_message_group', 'can_delete_own_message_group']);

// The request forms and {new, old} rules are shared with the realm's settings (@teamchat/domain).
export {
  groupSettingUpdate,
  groupSettingValue,
  normaliseSettingValue,
  requestedSettingValue,
  type GroupSettingUpdate,
} from '@teamchat/domain';

export async function nobodyGroupId(db: Parameters<typeof systemGroupId>[0], realmId: number): Promise<number> {
  return systemGroupId(db, realmId, SystemGroup.NOBODY);
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

/** Points the channel's setting at `groupId` (the anonymous group it no longer uses goes). */
export async function replaceStreamSetting(
  tx: TxClient,
  realmId: number,
  streamId: number,
  settingName: string,
  groupId: number,
  previousGroupId: number | undefined,
): Promise<void> {
  await replaceGroupSetting(tx, realmId, 'stream', streamId, settingName, groupId, previousGroupId);
}
