// Read routing between the primary and one streaming standby (DATABASE_REPLICA_URL).
//
// Causal consistency within an organisation, by WAL position: after any write request of a
// realm's user, the primary's pg_current_wal_lsn() (at or past that write's commit record) is
// remembered for the realm (in Redis, shared by every process, never lowered, for a bounded
// time); each process polls the standby's pg_last_wal_replay_lsn() every few tens of
// milliseconds. A realm's heavy read goes to the standby only once its replay has passed the
// realm's remembered position, waiting a little for that (woken by the poller, no loop per
// request), else it reads the primary. So nobody reads state older than a write of their
// organisation that was answered, and whose event they may have been shown (per-user positions
// were not enough: B fetched the message of A's event from a standby that had not replayed it).
// A standby further behind than maxLagMs, or one that does not answer (within pollTimeoutMs:
// a frozen one too), serves nobody; a read that fails on it for either reason is run again on
// the primary.

import type pg from 'pg';
import { sqlPool, type Db } from './client';

/** Where each realm's last write left the primary's WAL (shared by every process). */
export interface WritePositions {
  /** Keeps the higher of `lsn` and the position already kept (writes of one realm finish in any order). */
  record(realmId: number, lsn: string, ttlMs: number): Promise<void>;
  lookup(realmId: number): Promise<string | null>;
}

export type ReadSource = 'primary' | 'replica';

export interface ReadRouterOptions {
  /** The standby; undefined: every read goes to the primary and nothing is recorded. */
  replica?: Db;
  positions: WritePositions;
  /** How often the standby's replay position (and the primary's, for the lag) is sampled. */
  pollIntervalMs?: number;
  /** A standby that has not replayed what the primary had written this long ago serves nobody. */
  maxLagMs?: number;
  /** How long a read waits for the standby to replay its realm's last write before reading the primary. */
  readWaitMs?: number;
  /** A standby that does not answer a poll within this serves nobody (a frozen one never answers). */
  pollTimeoutMs?: number;
  /** Errors that mean a server is unreachable (the standby is then left until it answers a poll). */
  isUnavailable(error: unknown): boolean;
  /** Told of every read sent to the primary although a standby is configured, and why. */
  onRouted?(source: ReadSource, reason: string): void;
}

/** "16/B374D848" as a number, to compare WAL positions. */
export function lsnValue(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** SQLSTATEs of a standby cancelling a query whose rows replay must remove (conflict with recovery). */
function isRecoveryConflict(error: unknown): boolean {
  let current = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; current && typeof current === 'object' && depth < 6; depth++) {
    if (typeof current.message === 'string' && /conflict with recovery/.test(current.message)) return true;
    current = current.cause as typeof current;
  }
  return false;
}

const ABANDONED = Symbol('abandoned');

/** Thrown by a read that finds the standby unfit for it (the register snapshot); the read is run on the primary. */
export class UseThePrimary extends Error {}

interface PrimarySample {
  at: number;
  lsn: bigint;
}

export class ReadRouter {
  private replayed: bigint | null = null;
  private healthy = false;
  private samples: PrimarySample[] = [];
  private waiters = new Set<() => void>();
  /** Reads in flight on the standby, told when a poll finds it not answering (they run again on the primary). */
  private inFlight = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The poller's own connection to the standby, dropped when it does not answer in time. */
  private pollClient: pg.PoolClient | undefined;
  private readonly pollIntervalMs: number;
  private readonly maxLagMs: number;
  private readonly readWaitMs: number;
  private readonly pollTimeoutMs: number;

  constructor(
    readonly primary: Db,
    private readonly options: ReadRouterOptions,
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? 20;
    this.maxLagMs = options.maxLagMs ?? 10_000;
    this.readWaitMs = options.readWaitMs ?? 50;
    this.pollTimeoutMs = options.pollTimeoutMs ?? 1000;
    if (options.replica) void this.poll();
  }

  get replica(): Db | undefined {
    return this.options.replica;
  }

  /** The standby may serve reads now: it answered the last poll and is within maxLagMs. */
  get replicaUsable(): boolean {
    return this.options.replica !== undefined && this.healthy && this.withinLag();
  }

  /**
   * Remembers where the primary's WAL is now, after a write of `realmId` committed (a user's
   * request, or a test's fixture written straight to the database). Kept 2 × maxLagMs plus two
   * polls: past that, a standby that has not replayed it is beyond maxLagMs and serves nobody.
   */
  async recordWrite(realmId: number): Promise<void> {
    if (!this.options.replica) return;
    const { rows } = await sqlPool(this.primary).query<{ lsn: string }>({
      name: 'replica_write_position',
      text: 'SELECT pg_current_wal_lsn()::text AS lsn',
    });
    await this.options.positions.record(realmId, rows[0].lsn, 2 * this.maxLagMs + 2 * this.pollIntervalMs + 1000);
  }

  /**
   * The server a read in `realmId` may use: the standby once it has replayed the realm's last
   * recorded write, waiting up to readWaitMs for that, else the primary.
   */
  async forRealm(realmId: number): Promise<{ db: Db; source: ReadSource }> {
    const replica = this.options.replica;
    if (!replica) return { db: this.primary, source: 'primary' };
    if (!this.replicaUsable) return this.toPrimary(this.healthy ? 'lagging' : 'unavailable');
    let position: string | null;
    try {
      position = await this.options.positions.lookup(realmId);
    } catch {
      return this.toPrimary('position unknown');
    }
    if (position !== null && !(await this.waitForReplay(lsnValue(position), this.readWaitMs))) {
      return this.toPrimary('realm write not replayed');
    }
    this.options.onRouted?.('replica', 'replayed');
    return { db: replica, source: 'replica' };
  }

  /**
   * The server a read that must include everything committed on the primary until now may use
   * (register: its queue misses events published before it existed): the standby once its replay
   * passes the primary's current position, waiting up to `waitMs` for that.
   */
  async upToNow(waitMs: number): Promise<{ db: Db; source: ReadSource }> {
    const replica = this.options.replica;
    if (!replica) return { db: this.primary, source: 'primary' };
    if (!this.replicaUsable) return this.toPrimary(this.healthy ? 'lagging' : 'unavailable');
    const { rows } = await sqlPool(this.primary).query<{ lsn: string }>({
      name: 'replica_write_position',
      text: 'SELECT pg_current_wal_lsn()::text AS lsn',
    });
    if (!(await this.waitForReplay(lsnValue(rows[0].lsn), waitMs))) return this.toPrimary('not caught up');
    this.options.onRouted?.('replica', 'replayed');
    return { db: replica, source: 'replica' };
  }

  /**
   * Runs `read` on the server `pick` chooses; when the standby fails it (unreachable, found frozen
   * by a poll meanwhile, a recovery conflict, or UseThePrimary), runs it again on the primary.
   * Reads only: it may run twice.
   */
  async run<T>(
    pick: Promise<{ db: Db; source: ReadSource }>,
    read: (db: Db, source: ReadSource) => Promise<T>,
  ): Promise<T> {
    const { db, source } = await pick;
    if (source === 'primary') return read(db, source);
    let abandon!: () => void;
    const abandoned = new Promise<typeof ABANDONED>((resolve) => (abandon = () => resolve(ABANDONED)));
    this.inFlight.add(abandon);
    try {
      // A standby frozen mid-read never answers it: the poller's timeout gives the read up.
      const result = await Promise.race([read(db, source), abandoned]);
      if (result !== ABANDONED) return result;
      this.options.onRouted?.('primary', 'replica failed');
    } catch (error) {
      if (error instanceof UseThePrimary) {
        this.options.onRouted?.('primary', error.message);
      } else if (this.options.isUnavailable(error)) {
        this.healthy = false;
        this.options.onRouted?.('primary', 'replica failed');
      } else if (isRecoveryConflict(error)) {
        this.options.onRouted?.('primary', 'recovery conflict');
      } else {
        throw error;
      }
    } finally {
      this.inFlight.delete(abandon);
    }
    return read(this.primary, 'primary');
  }

  /** A read in `realmId`, on the standby when it has replayed the realm's last write. */
  readFor<T>(realmId: number, read: (db: Db, source: ReadSource) => Promise<T>): Promise<T> {
    return this.run(this.forRealm(realmId), read);
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const wake of this.waiters) wake();
    this.pollClient?.release();
    this.pollClient = undefined;
  }

  private toPrimary(reason: string): { db: Db; source: ReadSource } {
    this.options.onRouted?.('primary', reason);
    return { db: this.primary, source: 'primary' };
  }

  /** The standby has replayed what the primary had written maxLagMs ago (the newest sample it passed is that recent). */
  private withinLag(): boolean {
    if (this.replayed === null) return false;
    const horizon = Date.now() - this.maxLagMs;
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i];
      if (sample.at < horizon) return false;
      if (sample.lsn <= this.replayed) return true;
    }
    return false;
  }

  private waitForReplay(lsn: bigint, waitMs: number): Promise<boolean> {
    const reached = () => this.healthy && this.replayed !== null && this.replayed >= lsn;
    if (reached() || waitMs <= 0) return Promise.resolve(reached());
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timeout);
        this.waiters.delete(check);
        resolve(reached());
      };
      const check = () => {
        if (reached() || this.stopped) done();
      };
      const timeout = setTimeout(done, waitMs);
      this.waiters.add(check);
    });
  }

  private async poll(): Promise<void> {
    const replica = this.options.replica;
    if (!replica || this.stopped) return;
    try {
      // The primary first: the standby's answer, read after it, is compared with a position it can have reached.
      const primary = await sqlPool(this.primary).query<{ lsn: string }>({
        name: 'replica_primary_position',
        text: 'SELECT pg_current_wal_lsn()::text AS lsn',
      });
      const now = Date.now();
      this.samples.push({ at: now, lsn: lsnValue(primary.rows[0].lsn) });
      while (this.samples.length > 1 && this.samples[0].at < now - 2 * this.maxLagMs) this.samples.shift();
    } catch {
      // The primary is down: reads fail there whatever this router decides.
    }
    try {
      const lsn = await this.replayPosition(replica);
      // NULL: not a standby (nothing replayed); it cannot say how far it is, so it serves nobody.
      this.replayed = lsn === null ? null : lsnValue(lsn);
      this.healthy = lsn !== null;
    } catch {
      this.healthy = false;
      for (const abandon of this.inFlight) abandon();
    }
    for (const wake of this.waiters) wake();
    if (!this.stopped) {
      this.timer = setTimeout(() => void this.poll(), this.pollIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * The standby's replay position, on the poller's own connection, given up after pollTimeoutMs:
   * a frozen standby (SIGSTOP, a stalled VM) accepts the TCP connection and never answers, and no
   * server-side statement_timeout runs there. The connection is then dropped, not reused.
   */
  private async replayPosition(replica: Db): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the standby did not answer in time')), this.pollTimeoutMs);
    });
    const connecting = this.pollClient ? Promise.resolve(this.pollClient) : sqlPool(replica).connect();
    try {
      const client = await Promise.race([connecting, timeout]);
      if (client !== this.pollClient) {
        // Checked out, the pool no longer listens to it: its server's death is this poller's to hear.
        client.on('error', () => undefined);
        this.pollClient = client;
      }
      const { rows } = await Promise.race([
        client.query<{ lsn: string | null }>({
          name: 'replica_replay_position',
          text: 'SELECT pg_last_wal_replay_lsn()::text AS lsn',
        }),
        timeout,
      ]);
      return rows[0].lsn;
    } catch (error) {
      const client = this.pollClient;
      this.pollClient = undefined;
      if (client) client.release(true);
      // A connection that arrives after the timeout is closed as soon as it does.
      else void connecting.then((late) => late.release(true)).catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}
