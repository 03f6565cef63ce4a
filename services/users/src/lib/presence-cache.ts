// Each users-service process keeps a copy of the presence rows of the realms whose users ping
// it. Every ping answers with the rows changed since the client's last one, and in a big realm
// that is half the realm each minute: read from PostgreSQL at every ping it was 98 % of
// PostgreSQL's time in the load suite at 4,000 users (bench/README, stop 43). With the copy, a
// ping reads only the rows changed in the last seconds (user_presence_realm_update_time_idx),
// and the whole realm is read again every PRESENCE_RELOAD_SECONDS.
//
// Why an answer is as complete as a direct read: a read that starts at S returns every row
// committed before S. A ping's write records a time taken just before it, so a row committed
// after the previous read started (at R) records a time after R - PRESENCE_LATE_COMMIT_MS. Each
// read asks for the rows since then, so after it the copy holds every row committed before S.
// A write that commits later than that after its own time reaches the copy at the next whole
// read. Clients whose cursor has passed its time miss it either way, as with a direct read
// (until that user's next write).

import { env } from '@teamchat/core';
import { presenceUpdateId, realmPresenceRows, type PresenceRow } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';

export const presenceCacheEnvSpec = {
  PRESENCE_RELOAD_SECONDS: env.int(
    "how often a users-service process reads a realm's presence rows whole again (in between it reads the rows changed lately); until then a deactivated user can still be listed",
    60,
  ),
};

/** How long after the time it records a ping's write may commit (clocks of hosts included). */
export const PRESENCE_LATE_COMMIT_MS = 2_000;
/** A realm no one has pinged for this long is dropped from the copy. */
const IDLE_REALM_MS = 10 * 60_000;

interface RealmCopy {
  rows: Map<number, PresenceRow>;
  /** When the latest merged read started: the copy holds every row committed before then. */
  completeAt: number;
  /** When the realm was last read whole. */
  loadedAt: number;
  usedAt: number;
}

export class PresenceCache {
  private readonly realms = new Map<number, RealmCopy>();
  private sweptAt = Date.now();

  constructor(
    private readonly db: BaseDeps['db'],
    private readonly reloadMs: number,
  ) {}

  /** The realm's presence rows, including every row committed before this call. */
  async rows(realmId: number): Promise<PresenceRow[]> {
    const started = Date.now();
    this.forgetIdleRealms(started);
    const copy = this.realms.get(realmId);
    if (!copy || started - copy.loadedAt >= this.reloadMs) {
      // Pings meanwhile read the changed rows into the old copy, not the realm again.
      if (copy) copy.loadedAt = started;
      const rows = await realmPresenceRows(this.db, realmId);
      const byUser = new Map(rows.map((row) => [row.userId, row]));
      this.realms.set(realmId, { rows: byUser, completeAt: started, loadedAt: started, usedAt: started });
      return rows;
    }
    copy.usedAt = started;
    const changed = await realmPresenceRows(this.db, realmId, copy.completeAt - PRESENCE_LATE_COMMIT_MS);
    // Reads may finish out of order: a row is replaced only by one as new or newer.
    for (const row of changed) {
      const held = copy.rows.get(row.userId);
      if (!held || presenceUpdateId(row) >= presenceUpdateId(held)) copy.rows.set(row.userId, row);
    }
    copy.completeAt = Math.max(copy.completeAt, started);
    // A snapshot: a whole read finishing meanwhile may replace the copy with an older one.
    return [...copy.rows.values()];
  }

  private forgetIdleRealms(now: number): void {
    if (now - this.sweptAt < IDLE_REALM_MS) return;
    this.sweptAt = now;
    for (const [realmId, copy] of this.realms) if (now - copy.usedAt >= IDLE_REALM_MS) this.realms.delete(realmId);
  }
}
