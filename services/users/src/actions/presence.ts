// Presence (Zulip's zerver/actions/presence.py, kept minimal): each ping records when the
// user was last connected and, if active, last active, at most once a minute; a presence
// event goes out only when the user comes back after being offline or turns active after
// being idle, so a steady stream of pings costs at most one statement each.

import { queryRows, transaction } from '@teamchat/db';
import { PRESENCE_OFFLINE_THRESHOLD_SECONDS, userIdsWhoCanAccessUser } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import type { PresenceActor, StoredPresence } from '../lib/presence';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

export type PresenceStatus = 'active' | 'idle';

/**
 * Zulip's USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS: in a realm of more active users, no
 * immediate presence event is sent (clients learn presence from their periodic pings). Each
 * user coming online would otherwise cost an event to every user: quadratic work in a big realm.
 */
export const USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS = 100;

/**
 * Whether the realm has more active users than the limit, counted no further than that. As
 * Zulip by default (CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE off), the realm's size decides,
 * not who may see the user: reading every user who may would cost each login of a big realm a
 * read of the whole realm (a login storm after a restart: quadratic).
 */
async function tooManyForPresenceEvents(deps: Deps, realmId: number): Promise<boolean> {
  const [{ too_many }] = await queryRows<{ too_many: boolean }>(
    deps.db,
    'too-many-for-presence-events',
    'SELECT count(*)::int > $2 AS too_many FROM (SELECT 1 FROM user_profile WHERE realm_id = $1 AND is_active LIMIT $2 + 1) active',
    [realmId, USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS],
  );
  return too_many;
}

/** How stale user_profile.last_active_at may get before a ping rewrites it (keeps that hot row quiet). */
const LAST_ACTIVE_PRECISION_MS = 60_000;

/**
 * Zulip's PRESENCE_UPDATE_MIN_FREQ_SECONDS: a ping rewrites the stored times only when they are
 * older than this, so a user connected from several windows or devices (each pinging once a
 * minute) costs one write a minute, not one per ping.
 */
export const PRESENCE_UPDATE_MIN_FREQ_MS = 55_000;

/**
 * The ping's whole write, atomic as one statement: the presence row, and last_active_at when
 * $4 says it is stale. ($1 user, $2 now, $3 active, $5 the user's realm.)
 */
const RECORD_PING = `
  WITH last_active AS (UPDATE user_profile SET last_active_at = $2::timestamptz WHERE id = $1 AND $4::boolean)
  INSERT INTO user_presence (user_profile_id, realm_id, last_connected_time, last_active_time)
  VALUES ($1, $5, $2::timestamptz, CASE WHEN $3::boolean THEN $2::timestamptz END)
  ON CONFLICT (user_profile_id) DO UPDATE
    SET last_connected_time = excluded.last_connected_time,
        last_active_time = coalesce(excluded.last_active_time, user_presence.last_active_time)`;

/**
 * Records a ping of `user`, whose stored presence was `user.presence` when the request read it.
 * A ping within PRESENCE_UPDATE_MIN_FREQ_MS of the stored times writes nothing. Most other
 * pings are no news, or news no one is told of in a big realm: they are one named statement on
 * the pool (through Prisma's client engine the old transaction of three statements cost ~3 ms
 * of CPU). News to tell goes through a transaction with its event.
 */
export async function doUpdatePresence(
  deps: Deps,
  user: PresenceActor,
  status: PresenceStatus,
  now = new Date(),
): Promise<void> {
  const active = status === 'active';
  const lastActiveStale =
    active && (!user.last_active_at || now.getTime() - user.last_active_at.getTime() >= LAST_ACTIVE_PRECISION_MS);
  const recordPing = (db: Parameters<typeof queryRows>[0]) =>
    queryRows(db, 'record-presence-ping', RECORD_PING, [user.id, now, active, lastActiveStale, user.realm_id]);
  const news = isNews(user.presence, status, now);
  if (!news && !isStale(user.presence, status, now)) return;
  if (!news || (await tooManyForPresenceEvents(deps, user.realm_id))) {
    await recordPing(deps.db);
    return;
  }
  await transaction(deps.db, async (tx) => {
    await recordPing(tx.db);
    const recipients = await userIdsWhoCanAccessUser(tx.db, user);
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

/** Whether the ping has a stored time to move forward: connected, or active when it says so. */
function isStale(before: StoredPresence | null, status: PresenceStatus, now: Date): boolean {
  const olderThanMinFreq = (time: Date | null | undefined) =>
    !time || now.getTime() - time.getTime() > PRESENCE_UPDATE_MIN_FREQ_MS;
  return (
    olderThanMinFreq(before?.last_connected_time) || (status === 'active' && olderThanMinFreq(before?.last_active_time))
  );
}

/**
 * Others need telling when the user was offline, or was idle and is now active. (Read before
 * the write, unlocked: a concurrent ping of the same user can at worst make both announce.)
 */
function isNews(before: StoredPresence | null, status: PresenceStatus, now: Date): boolean {
  const threshold = now.getTime() - PRESENCE_OFFLINE_THRESHOLD_SECONDS * 1000;
  if (!before?.last_connected_time || before.last_connected_time.getTime() < threshold) return true;
  return status === 'active' && (!before.last_active_time || before.last_active_time.getTime() < threshold);
}
