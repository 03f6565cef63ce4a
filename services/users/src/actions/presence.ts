// Presence (Zulip's zerver/actions/presence.py, kept minimal): each ping records when the
// user was last connected and, if active, last active; a presence event goes out only when
// the user comes back after being offline or turns active after being idle, so a steady
// stream of pings costs one upsert each.

import { transaction, type UserPresence } from '@teamchat/db';
import { PRESENCE_OFFLINE_THRESHOLD_SECONDS, userIdsWhoCanAccessUser } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

export type PresenceStatus = 'active' | 'idle';

/**
 * Zulip's USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS: above this many users who would get it,
 * no immediate presence event is sent (clients learn presence from their periodic pings). Each
 * user coming online would otherwise cost an event to every user: quadratic work in a big realm.
 */
export const USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS = 100;

/** How stale user_profile.last_active_at may get before a ping rewrites it (keeps that hot row quiet). */
const LAST_ACTIVE_PRECISION_MS = 60_000;

export async function doUpdatePresence(
  deps: Deps,
  user: { id: number; realm_id: number; email: string; last_active_at: Date | null },
  status: PresenceStatus,
  now = new Date(),
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const before = await tx.db.userPresence.findUnique({ where: { user_profile_id: user.id } });
    const active = status === 'active';
    await tx.db.userPresence.upsert({
      where: { user_profile_id: user.id },
      create: { user_profile_id: user.id, last_connected_time: now, last_active_time: active ? now : null },
      update: { last_connected_time: now, ...(active ? { last_active_time: now } : {}) },
    });
    if (active && (!user.last_active_at || now.getTime() - user.last_active_at.getTime() >= LAST_ACTIVE_PRECISION_MS)) {
      await tx.db.userProfile.update({ where: { id: user.id }, data: { last_active_at: now } });
    }
    if (!isNews(before, status, now)) return;
    const target = await tx.db.userProfile.findUniqueOrThrow({ where: { id: user.id } });
    const recipients = await userIdsWhoCanAccessUser(tx.db, target);
    if (recipients.length > USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS) return;
    const timestamp = Math.floor(now.getTime() / 1000);
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      {
        type: 'presence',
        user_id: user.id,
        email: user.email,
        server_timestamp: now.getTime() / 1000,
        presence: { website: { client: 'website', status, timestamp, pushable: false } },
      },
      recipients,
    );
  });
}

/** Others need telling when the user was offline, or was idle and is now active. */
function isNews(before: UserPresence | null, status: PresenceStatus, now: Date): boolean {
  const threshold = now.getTime() - PRESENCE_OFFLINE_THRESHOLD_SECONDS * 1000;
  if (!before?.last_connected_time || before.last_connected_time.getTime() < threshold) return true;
  return status === 'active' && (!before.last_active_time || before.last_active_time.getTime() < threshold);
}
