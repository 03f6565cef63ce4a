// Presence (Zulip's zerver/lib/presence.py): the realm's presence as a viewer may see it, in the
// modern or the legacy form. The rows come from PostgreSQL (realmPresenceRows) or from a
// process's copy of them (the users service's PresenceCache); presenceAnswer is the one rule for
// what a viewer is told either way.
import { queryRows, type TxClient } from '@teamchat/db';
import { accessibleUserIds, type UserReader, type UserViewer } from './users';

/** Zulip's OFFLINE_THRESHOLD_SECS. */
export const PRESENCE_OFFLINE_THRESHOLD_SECONDS = 140;
const DEFAULT_PRESENCE_HISTORY_DAYS = 14;
/** Presence rows are never older than this (a century): a longer history asks for all of them. */
const MAX_PRESENCE_HISTORY_DAYS = 36_500;
/** Year 9999 in ms, a time PostgreSQL holds: a later last_update_id asks for nothing anyway. */
const LATEST_UPDATE_MS = 253_402_300_799_000;

/**
 * One active user's stored presence, times in ms since the epoch. Its update id (Zulip's
 * last_update_id) is its later time in whole milliseconds: see presenceUpdateId.
 */
export interface PresenceRow {
  userId: number;
  activeMs: number | null;
  connectedMs: number | null;
  email: string;
  isBot: boolean;
}

export const presenceUpdateId = (row: Pick<PresenceRow, 'activeMs' | 'connectedMs'>) =>
  Math.max(row.activeMs ?? -1, row.connectedMs ?? -1);

/**
 * The presence rows of the realm's active users, only those whose later time is at or after
 * `changedSinceMs` when given (found through user_presence_realm_update_time_idx). One JSON array
 * from a named statement: for thousands of rows, pg's per-field row parsing costs several times
 * what JSON.parse does; date_part (float8) is used because extract's numeric costs more still.
 */
export async function realmPresenceRows(
  db: Pick<TxClient, '$queryRawUnsafe'>,
  realmId: number,
  changedSinceMs?: number,
): Promise<PresenceRow[]> {
  const select = `SELECT coalesce(json_agg(json_build_array(
                           u.id,
                           floor(date_part('epoch', p.last_active_time) * 1000),
                           floor(date_part('epoch', p.last_connected_time) * 1000),
                           u.email, u.is_bot)), '[]') AS rows
                    FROM user_presence p JOIN user_profile u ON u.id = p.user_profile_id
                   WHERE p.realm_id = $1 AND u.is_active`;
  type Rows = { rows: [number, number | null, number | null, string, boolean][] };
  // Two statements, not one with "$2 IS NULL OR": a generic plan of that could not use the index.
  const [{ rows }] =
    changedSinceMs === undefined
      ? await queryRows<Rows>(db, 'realm-presence-rows', select, [realmId])
      : await queryRows<Rows>(
          db,
          'realm-presence-rows-changed',
          `${select} AND greatest(p.last_connected_time, p.last_active_time) >= $2::timestamptz`,
          [realmId, new Date(Math.min(Math.max(changedSinceMs, 0), LATEST_UPDATE_MS))],
        );
  return rows.map(([userId, activeMs, connectedMs, email, isBot]) => ({ userId, activeMs, connectedMs, email, isBot }));
}

export interface PresenceQuery {
  slim: boolean;
  lastUpdateId?: number;
  historyDays?: number | null;
  now?: Date;
}

/**
 * What `viewer` is told of `rows` (Zulip's get_presence_response): the modern
 * {user_id: {active_timestamp, idle_timestamp}} form or the legacy per-email form; only users
 * connected within the history window and, with lastUpdateId, changed since then; the cursor
 * (presence_last_update_id) is the latest update told.
 */
export async function presenceAnswer(
  db: UserReader,
  viewer: UserViewer & { realm_id: number },
  rows: Iterable<PresenceRow>,
  query: PresenceQuery,
) {
  const now = query.now ?? new Date();
  // Clamped: 2^31 days back is no date at all.
  const days = Math.min(query.historyDays ?? DEFAULT_PRESENCE_HISTORY_DAYS, MAX_PRESENCE_HISTORY_DAYS);
  const connectedSince = now.getTime() - days * 86_400_000;
  const after = query.lastUpdateId ?? -1;
  const visibleTo = await accessibleUserIds(db, viewer);
  const told = [];
  let latest = after;
  for (const row of rows) {
    const updateId = presenceUpdateId(row);
    if (updateId <= after || row.connectedMs === null || row.connectedMs < connectedSince) continue;
    if (visibleTo && !row.isBot && !visibleTo.has(row.userId)) continue;
    told.push(row);
    latest = Math.max(latest, updateId);
  }
  told.sort((a, b) => a.userId - b.userId);
  const presences = Object.fromEntries(
    told.map(({ userId, activeMs, connectedMs, email }) => {
      if (query.slim) {
        const slim = { active_timestamp: wholeSeconds(activeMs), idle_timestamp: wholeSeconds(connectedMs) };
        return [String(userId), slim];
      }
      const legacy = legacyPresence(activeMs, connectedMs, now);
      const aggregated = { client: 'website', ...legacy };
      return [email, { aggregated, website: { client: 'website', ...legacy, pushable: false } }];
    }),
  );
  return { presences, server_timestamp: now.getTime() / 1000, presence_last_update_id: latest };
}

/** The realm's presence as `viewer` may see it, read from PostgreSQL (see presenceAnswer). */
export async function realmPresence(
  db: UserReader & Pick<TxClient, '$queryRawUnsafe'>,
  viewer: UserViewer & { realm_id: number },
  query: PresenceQuery,
) {
  // A row changed after lastUpdateId (whole ms) has a later time at or after lastUpdateId + 1.
  const changedSinceMs = query.lastUpdateId === undefined ? undefined : query.lastUpdateId + 1;
  return presenceAnswer(db, viewer, await realmPresenceRows(db, viewer.realm_id, changedSinceMs), query);
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
