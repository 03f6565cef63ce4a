// Unsubscribing oneself or others (Zulip's remove_subscriptions_backend, bulk_remove_subscriptions).

import { JsonableError } from '@teamchat/core';
import type { Stream, Tx, UserProfile } from '@teamchat/db';
import {
  canAdministerChannel,
  hasMetadataAccess,
  inChannelSetting,
  isAdministrator,
  isGuest,
  loadViewerContext,
  metadataAccessUserIds,
  streamSettingGroups,
  viewerOf,
} from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';
import { sendPeerEvent, sendStreamDeletionEvent } from './channel-events';
import { streamsByName } from '../lib/streams';
import { inTransaction } from '../lib/transactions';
import { usersByPrincipals } from '../lib/users';
import { checkSubscriptionChangeCount } from './subscribe';

export interface UnsubscribeResult {
  removed: string[];
  not_removed: string[];
}

export async function doRemoveSubscriptions(
  deps: ChannelsDeps,
  user: UserProfile,
  names: string[],
  principals: (string | number)[] | null,
  outer?: Tx,
): Promise<UnsubscribeResult> {
  return inTransaction(deps.db, outer, async (tx) => {
    const db = tx.db;
    const wanted = names.map((name) => name.trim());
    const found = await streamsByName(db, user.realm_id, wanted);
    const missing = wanted.filter((name) => !found.has(name.toLowerCase()));
    if (missing.length) throw new JsonableError(`Channel(s) (${missing.join(', ')}) do not exist`);
    const streams = [...new Map(wanted.map((name) => [name.toLowerCase(), found.get(name.toLowerCase())!])).values()];

    const targets = principals?.length ? await usersByPrincipals(db, user.realm_id, principals) : [user];
    checkSubscriptionChangeCount(targets.length * streams.length);
    // One's own bots count as oneself (Zulip's user_directly_controls_user).
    const unsubscribingOthers = targets.some(
      (target) => target.id !== user.id && !(target.is_bot && target.bot_owner_id === user.id),
    );
    if (unsubscribingOthers) await checkCanRemoveSubscribers(db, user, streams);
    return bulkRemoveSubscriptions(deps, tx, streams, targets);
  });
}

/**
 * Zulip's bulk_can_remove_subscribers_from_streams: administrators always; channel
 * administrators of every channel named; otherwise metadata access and membership of
 * can_remove_subscribers_group on every one of them.
 */
async function checkCanRemoveSubscribers(db: Tx['db'], user: UserProfile, streams: Stream[]): Promise<void> {
  if (isAdministrator(user.role)) return;
  if (isGuest(user.role)) throw new JsonableError('Insufficient permission');
  const viewer = await loadViewerContext(db, viewerOf(user));
  const settings = await streamSettingGroups(
    db,
    streams.map((stream) => stream.id),
  );
  if (streams.every((stream) => canAdministerChannel(viewer, settings.get(stream.id)))) return;
  for (const stream of streams) {
    const own = settings.get(stream.id);
    if (!hasMetadataAccess(viewer, stream, own) || !inChannelSetting(viewer, own, 'can_remove_subscribers_group')) {
      throw new JsonableError('Insufficient permission');
    }
  }
}

/**
 * Deactivates the subscriptions (kept, with their settings, for a later resubscribe) and sends
 * subscription remove to each user, stream delete to those who can no longer see a channel,
 * and peer_remove to everyone else tracking the subscriber lists.
 */
export async function bulkRemoveSubscriptions(
  deps: ChannelsDeps,
  tx: Tx,
  streams: Stream[],
  users: UserProfile[],
): Promise<UnsubscribeResult> {
  const db = tx.db;
  const result: UnsubscribeResult = { removed: [], not_removed: [] };
  const subs = await db.subscription.findMany({
    where: {
      user_profile_id: { in: users.map((u) => u.id) },
      stream_id: { in: streams.map((s) => s.id) },
      active: true,
    },
  });
  // "user:stream" of each active subscription: looking each pair up in the list would be
  // quadratic when many users leave at once.
  const subscribed = new Set(subs.map((sub) => `${sub.user_profile_id}:${sub.stream_id}`));
  const isSubscribed = (user: UserProfile, stream: Stream) => subscribed.has(`${user.id}:${stream.id}`);
  for (const user of users) {
    for (const stream of streams) (isSubscribed(user, stream) ? result.removed : result.not_removed).push(stream.name);
  }
  if (subs.length === 0) return result;
  await db.subscription.updateMany({ where: { id: { in: subs.map((sub) => sub.id) } }, data: { active: false } });

  const settingsByStream = await streamSettingGroups(
    db,
    streams.map((stream) => stream.id),
  );
  for (const user of users) {
    const left = streams.filter((stream) => isSubscribed(user, stream));
    if (left.length === 0) continue;
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      {
        type: 'subscription',
        op: 'remove',
        subscriptions: left.map((stream) => ({ name: stream.name, stream_id: stream.id })),
      },
      [user.id],
    );
    if (isAdministrator(user.role)) continue;
    const viewer = await loadViewerContext(db, viewerOf(user));
    const lostSight = left.filter((stream) => !hasMetadataAccess(viewer, stream, settingsByStream.get(stream.id)));
    await sendStreamDeletionEvent(deps, tx, lostSight, [user.id]);
  }
  for (const stream of streams) {
    const leavers = subs.filter((sub) => sub.stream_id === stream.id).map((sub) => sub.user_profile_id);
    if (leavers.length === 0) continue;
    const audience = await metadataAccessUserIds(db, stream, settingsByStream.get(stream.id)!);
    await sendPeerEvent(deps, tx, stream.realm_id, 'peer_remove', stream.id, leavers, audience);
  }
  return result;
}
