// Organisation-level permissions that channel actions consult (Zulip's UserProfile.can_* helpers).
import type { TxClient, UserProfile } from '@teamchat/db';
import { hasRealmPermission, isAdministrator } from '@teamchat/domain';

type Reader = Parameters<typeof hasRealmPermission>[0];

/** Realm settings are checked with Zulip's guest rule (hasRealmPermission). */
const realmPermission = (db: Reader, user: Pick<UserProfile, 'id' | 'realm_id' | 'role'>, setting: string) =>
  hasRealmPermission(db, user, setting);

export const canCreatePublicChannels = (db: Reader, user: UserProfile) =>
  realmPermission(db, user, 'can_create_public_channel_group');
export const canCreatePrivateChannels = (db: Reader, user: UserProfile) =>
  realmPermission(db, user, 'can_create_private_channel_group');
export const canCreateWebPublicChannels = (db: Reader, user: UserProfile) =>
  realmPermission(db, user, 'can_create_web_public_channel_group');
export const canSetDeleteMessagePolicy = (db: Reader, user: UserProfile) =>
  realmPermission(db, user, 'can_set_delete_message_policy_group');

/** Administrators can always set a channel's topics policy. */
export async function canSetTopicsPolicy(db: Reader, user: UserProfile): Promise<boolean> {
  return isAdministrator(user.role) || realmPermission(db, user, 'can_set_topics_policy_group');
}

/** Web-public channels need the server setting and the organisation's spectator access. */
export async function webPublicChannelsEnabled(
  db: Pick<TxClient, 'realm'>,
  realmId: number,
  serverEnabled: boolean,
): Promise<boolean> {
  if (!serverEnabled) return false;
  const realm = await db.realm.findUniqueOrThrow({ where: { id: realmId }, select: { enable_spectator_access: true } });
  return realm.enable_spectator_access;
}
