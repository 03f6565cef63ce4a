// Who receives which channel event (Zulip's bulk_get_subscriber_peer_info and friends).
import type { Stream, TxClient } from '@teamchat/db';
import { activeRealmUserIds, activeSubscriberIds, metadataGroupMemberIds, realmAdministratorIds, sortedUnion } from '@teamchat/domain';

type Reader = Pick<TxClient, '$queryRaw'>;
type ChannelRef = Pick<Stream, 'id' | 'realm_id' | 'invite_only' | 'is_web_public'>;

/** Who sees a new channel appear without being subscribed. */
export async function creationAudience(db: Reader, stream: ChannelRef, settings: Record<string, number>): Promise<number[]> {
  if (!stream.invite_only) return activeRealmUserIds(db, stream.realm_id, { nonGuestsOnly: !stream.is_web_public });
  return sortedUnion(await realmAdministratorIds(db, stream.realm_id), await metadataGroupMemberIds(db, settings));
}

/** Who tracks the channel's subscriber list (and so gets peer_add / peer_remove). */
export async function peerAudience(db: Reader, stream: ChannelRef, settings: Record<string, number>): Promise<number[]> {
  const subscribers = (await activeSubscriberIds(db, [stream.id])).get(stream.id)!;
  if (stream.is_web_public && !stream.invite_only) return activeRealmUserIds(db, stream.realm_id);
  if (!stream.invite_only) return sortedUnion(await activeRealmUserIds(db, stream.realm_id, { nonGuestsOnly: true }), subscribers);
  return sortedUnion(subscribers, await realmAdministratorIds(db, stream.realm_id), await metadataGroupMemberIds(db, settings));
}
