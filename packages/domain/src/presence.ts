// Presence (Zulip's zerver/lib/presence.py): the realm's presence as a viewer may see it, in the
// modern or the legacy form.
import { queryRows, type TxClient } from '@teamchat/db';
import { accessibleUserIds, type UserReader, type UserViewer } from './users';

/** Zulip's OFFLINE_THRESHOLD_SECS. */
export const PRESENCE_OFFLINE_THRESHOLD_SECONDS = 140;
const DEFAULT_PRESENCE_HISTORY_DAYS = 14;
/** Presence rows are never older than this (a century): a longer history asks for all of them. */
const MAX_PRESENCE_HISTORY_DAYS = 36_500;

/**
 * The realm's presence as `viewer` may see it (Zulip's get_presence_response): the modern
 * {user_id: {active_timestamp, idle_timestamp}} form, or the legacy per-email form; only users
 * connected within the history window and, with lastUpdateId, changed since then.
 */
export async function realmPresence(
  db: UserReader & Pick<TxClient, '$queryRawUnsafe'>,
  viewer: UserViewer & { realm_id: number },
  options: { slim: boolean; lastUpdateId?: number; historyDays?: number | null; now?: Date },
) {
  const now = options.now ?? new Date();
  // Clamped: 2^31 days back is no date at all (PostgreSQL would refuse the query).
  const days = Math.min(options.historyDays ?? DEFAULT_PRESENCE_HISTORY_DAYS, MAX_PRESENCE_HISTORY_DAYS);
  const since = new Date(now.getTime() - days * 86_400_000);
  // Every connected user of a big realm comes back on each ping (all changed since the caller's
  // previous one), so the rows come as one JSON array of [id, active ms, connected ms, email]
  // from a named statement: for 2,000 rows, pg's per-field row parsing (and before it Prisma's
  // decoding and Dates) cost several times what JSON.parse does. A row's update id: its later
  // time, in whole milliseconds.
  const visibleTo = await accessibleUserIds(db, viewer);
  type PresenceRows = { rows: [number, number | null, number | null, string][]; last_update_id: number | null };
  const [result] = await queryRows<PresenceRows>(
    db,
    'realm-presence',
    `SELECT coalesce(json_agg(json_build_array(user_profile_id, active_ms, connected_ms, email)
                          ORDER BY user_profile_id), '[]') AS rows,
            max(update_id) AS last_update_id
       FROM (
         SELECT p.user_profile_id, u.email,
                floor(extract(epoch FROM p.last_active_time) * 1000)::float8 AS active_ms,
                floor(extract(epoch FROM p.last_connected_time) * 1000)::float8 AS connected_ms,
                floor(extract(epoch FROM greatest(p.last_connected_time, p.last_active_time)) * 1000)::float8
                  AS update_id
           FROM user_presence p JOIN user_profile u ON u.id = p.user_profile_id
          WHERE u.realm_id = $1 AND u.is_active AND p.last_connected_time >= $2::timestamptz
            AND ($4::int[] IS NULL OR u.is_bot OR u.id = ANY($4::int[]))
       ) presence
      WHERE update_id > $3::float8`,
    [viewer.realm_id, since, options.lastUpdateId ?? -1, visibleTo && [...visibleTo]],
  );
  const presences = Object.fromEntries(
    result.rows.map(([userId, activeMs, connectedMs, email]) => {
      if (options.slim) {
        const slim = { active_timestamp: wholeSeconds(activeMs), idle_timestamp: wholeSeconds(connectedMs) };
        return [String(userId), slim];
      }
      const legacy = legacyPresence(activeMs, connectedMs, now);
      const aggregated = { client: 'website', ...legacy };
      return [email, { aggregated, website: { client: 'website', ...legacy, pushable: false } }];
    }),
  );
  return {
    presences,
    server_timestamp: now.getTime() / 1000,
    presence_last_update_id: Math.max(options.lastUpdateId ?? -1, result.last_update_id ?? -1),
  };
}

const wholeSeconds = (ms: number | null) => (ms === null ? 0 : Math.floor(ms / 1000));

/**
 * A user's presence in Zulip's legacy form (times in ms since the epoch): "active" with the
 * last active time while that is within the offline threshold, else "idle" with the last
 * connected time.
 */
export function legacyPresence(
  activeMs: number | null,
  connectedMs: number | null,
  now: Date,
): { status: 'active' | 'idle'; timestamp: number } {
  const activeRecently = activeMs !== null && now.getTime() - activeMs < PRESENCE_OFFLINE_THRESHOLD_SECONDS * 1000;
  const status = activeRecently ? 'active' : 'idle';
  return { status, timestamp: wholeSeconds(activeRecently ? activeMs : connectedMs) };
}
