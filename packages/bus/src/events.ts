// Publishing events: the producer half of the event tier (docs/events.md, docs/adr/0002).
//
// Every event that changes stored state leaves its change through the outbox: its row is
// written inside the change's transaction (sendEventOnCommit, or outboxWrite's INSERT inside a
// hot-path statement), published to Redis right after COMMIT, and deleted by the producer once
// the publish has had time to become durable. Only a row whose publish failed (Redis down, the
// process killed) is left for the relay (relayOutbox), which publishes it later; a dedup marker,
// kept for a bounded window, makes sure nothing is published twice within it.

import type { Logger } from '@teamchat/core';
import type { Db, Prisma, Tx } from '@teamchat/db';
import type { ZulipEvent } from './event-types';
import {
  outboxInsertSql,
  PublishedRowDeleter,
  type LocalEcho,
  type OutboxInsert,
  type OutboxPayload,
  type OutboxRow,
  type Recipient,
} from './outbox';
import type { Redis } from './redis';
import { confirmReplicated, isCluster, RedisKeys, type Durability } from './redis';

/** What travels on the intake stream. */
export interface IntakeEntry {
  /** event_outbox id; absent for transient events (typing). */
  outboxId?: string;
  /** Id of the transaction that produced the event (pg xid8, as text). */
  xid?: string;
  realmId: number;
  event: ZulipEvent;
  users: Recipient[];
  /** Local echo of a message event, for the event tier only (never shown to clients as such). */
  echo?: LocalEcho;
  /** A channel message's: whether its channel is private (OutboxPayload.inviteOnly). */
  inviteOnly?: boolean;
  /**
   * With recipient shards (EVENT_RECIPIENT_SHARDS > 1): the shard this entry serves, of how many.
   * `users` then lists only that shard's users, and realm-wide queues take the entry only when
   * their user is in it. Absent: one shard.
   */
  shard?: { index: number; of: number };
}

/** The recipient shard of a user (EVENT_RECIPIENT_SHARDS): all of a user's events go through one partition. */
export function recipientShard(userId: number, shards: number): number {
  return userId % shards;
}

/**
 * Channel messages may reach realm-wide queues (all_public_streams) of any user, so every shard
 * gets them, even with no recipient of its own.
 */
function reachesRealmWideQueues(event: ZulipEvent): boolean {
  return event.type === 'message' && event.message.type === 'stream';
}

export const DEFAULT_EVENT_PARTITIONS = 8;
export const DEFAULT_RECIPIENT_SHARDS = 1;
export const DEFAULT_OUTBOX_HOLD_MS = 1500;
export const DEFAULT_RELAY_GRACE_MS = 5000;
export const DEFAULT_DEDUP_WINDOW_SECS = 600;
/** In a Cluster, how long an after-commit append that failed is tried again in its partition's order. */
export const DEFAULT_PUBLISH_RETRY_MS = 30_000;
const PUBLISH_RETRY_DELAYS_MS = [100, 200, 500, 1000];

// The marker and the entry in one script: one AOF record, so a Redis that loses its last
// writes loses both or neither (never a marker without its entry). A publish the marker finds
// done still writes (the marker's expiry): WAIT after it then also covers the entry written
// before, by whichever connection wrote it, as replicas apply writes in order.
const PUBLISH_ONCE = `
if ARGV[2] == '' or redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[3]) then
  return redis.call('XADD', KEYS[1], '*', 'e', ARGV[1])
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return false
`;

interface PublishOnce {
  teamchatPublishOnce(
    stream: string,
    marker: string,
    payload: string,
    outboxId: string,
    ttl: number,
  ): Promise<string | null>;
}

export interface EventBusOptions {
  /** The database producers write the outbox to: with it, published rows are deleted by the producer (else left to the relay). */
  db?: Db;
  /** EVENT_OUTBOX_HOLD_MS: how long a published row is kept before its delete. */
  holdMs?: number;
  /** EVENT_DEDUP_WINDOW_SECS: how long the intake remembers a published row. */
  dedupWindowSecs?: number;
  logger?: Pick<Logger, 'warn'>;
  /** Called for each failed after-commit publish (the process's metric). */
  onPublishFailure?: () => void;
  /**
   * EVENT_RECIPIENT_SHARDS: each realm's events are split by recipient (user id modulo this) over
   * as many intake partitions, so one organisation's fan-out can use that many event replicas.
   * At most the number of partitions; producers and event replicas must agree.
   */
  recipientShards?: number;
  /**
   * Runs before a committed event is published (never fails it): with a read replica, it records
   * the realm's write position, so a user who gets the event reads the write it announces.
   */
  beforePublish?: (realmId: number) => Promise<void>;
  /** REDIS_WAIT_REPLICAS: a publish counts once this many replicas hold its intake entry. */
  durability?: Durability;
  /** In a Cluster, how long a failed after-commit append is tried again before it is left to the relay. */
  publishRetryMs?: number;
}

/**
 * The outbox row of a hot-path statement: `sql` is its INSERT (a CTE of the statement, or the
 * statement), and once the statement has committed `publish` sends the row it returned.
 */
export class OutboxWrite {
  constructor(
    private readonly bus: EventBus,
    readonly realmId: number,
    readonly sql: Prisma.Sql,
    private readonly payload: OutboxPayload | null,
  ) {}

  /** Publishes the committed row (`payload` comes from the statement when SQL computed it). Never rejects. */
  publish(row: OutboxRow): Promise<void> {
    const payload = row.payload ?? this.payload;
    if (payload === null)
      throw new Error('outbox row without its payload: the INSERT returns it, pass the row as returned');
    return this.bus.publishCommitted({ outboxId: row.id, xid: row.xid, realmId: this.realmId, ...payload });
  }
}

export class EventBus {
  readonly keys: RedisKeys;
  private readonly deleter: PublishedRowDeleter | null;
  private readonly dedupWindowSecs: number;
  /** After-commit publishes not yet answered, awaited by close(). */
  private readonly inFlight = new Set<Promise<void>>();
  /** The last beforePublish in line (see afterRecording). */
  private recordedTail: Promise<void> = Promise.resolve();
  /** In a Cluster, the last publish sent to each partition (see inPartitionOrder). */
  private readonly partitionTails = new Map<number, Promise<void>>();
  /** Set by close(): failed appends are no longer tried again. */
  private closing = false;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly partitions: number = DEFAULT_EVENT_PARTITIONS,
    private readonly options: EventBusOptions = {},
  ) {
    this.keys = new RedisKeys(prefix);
    this.dedupWindowSecs = options.dedupWindowSecs ?? DEFAULT_DEDUP_WINDOW_SECS;
    this.deleter = options.db
      ? new PublishedRowDeleter(options.db, options.holdMs ?? DEFAULT_OUTBOX_HOLD_MS, options.logger)
      : null;
    if (!('teamchatPublishOnce' in redis)) {
      redis.defineCommand('teamchatPublishOnce', { numberOfKeys: 2, lua: PUBLISH_ONCE });
    }
  }

  /** The recipient shards of a realm (EVENT_RECIPIENT_SHARDS). */
  get recipientShards(): number {
    return this.options.recipientShards ?? DEFAULT_RECIPIENT_SHARDS;
  }

  /**
   * The intake partition of a realm's recipient shard. A realm's shards take consecutive
   * partitions (distinct, as shards <= partitions); with one shard, the realm's partition.
   */
  partitionOf(realmId: number, shard = 0): number {
    return (realmId * this.recipientShards + shard) % this.partitions;
  }

  /**
   * The entry as its shards' entries (one, unchanged, without sharding): each shard's entry lists
   * that shard's recipients, and a shard with none gets the entry only if realm-wide queues may want it.
   */
  private splitByShard(entry: IntakeEntry): { partition: number; entry: IntakeEntry }[] {
    const shards = this.recipientShards;
    if (shards === 1) return [{ partition: this.partitionOf(entry.realmId), entry }];
    const users: Recipient[][] = Array.from({ length: shards }, () => []);
    for (const recipient of entry.users)
      users[recipientShard(typeof recipient === 'number' ? recipient : recipient.id, shards)].push(recipient);
    const everyShard = reachesRealmWideQueues(entry.event);
    return users.flatMap((shardUsers, index) =>
      shardUsers.length === 0 && !everyShard
        ? []
        : [
            {
              partition: this.partitionOf(entry.realmId, index),
              entry: { ...entry, users: shardUsers, shard: { index, of: shards } },
            },
          ],
    );
  }

  /**
   * Sends `event` to `users` once the transaction `tx` commits (Zulip's send_event_on_commit).
   * The event is stored in the outbox inside the transaction, so it is never lost.
   */
  async sendEventOnCommit(tx: Tx, realmId: number, event: ZulipEvent, users: Recipient[]): Promise<void> {
    if (users.length === 0) return;
    const write = this.write({ realmId, event, users });
    const [row] = await tx.db.$queryRaw<OutboxRow[]>(write.sql);
    tx.onCommit(() => write.publish(row));
  }

  /**
   * The outbox row of a statement that writes its change and its event in one round trip:
   * fields the statement computes are given as SQL expressions of it (`event.messages:
   * Prisma.sql\`jsonb_agg(...)\``), `users` may be one too, and `from` says which rows the
   * event is written for (none: no event). Put `.sql` in the statement, then `.publish(row)`
   * with the row it returned once it has committed.
   */
  outboxWrite(insert: OutboxInsert): OutboxWrite {
    return this.write(insert);
  }

  private write(insert: OutboxInsert): OutboxWrite {
    const { sql, payload } = outboxInsertSql(insert);
    return new OutboxWrite(this, insert.realmId, sql, payload);
  }

  /** Sends an event that changes no stored state (typing): no transaction, no outbox. */
  async sendTransientEvent(realmId: number, event: ZulipEvent, users: Recipient[]): Promise<void> {
    if (users.length === 0) return;
    await this.publish({ realmId, event, users });
  }

  /** The after-commit publish: counted and logged when it fails (the relay sends the row later), never rejects. */
  publishCommitted(entry: IntakeEntry): Promise<void> {
    const send = () => this.publish(entry, { retryInOrder: true });
    const sending = this.options.beforePublish
      ? this.afterRecording(this.options.beforePublish, entry.realmId).then(send)
      : send();
    const publishing = sending.catch((error) => {
      this.options.onPublishFailure?.();
      this.options.logger?.warn(
        { err: error, outbox_id: entry.outboxId },
        'event publish failed; the outbox relay will send it',
      );
    });
    this.inFlight.add(publishing);
    void publishing.finally(() => this.inFlight.delete(publishing));
    return publishing;
  }

  /**
   * Resolves once `record` has run for this publish and every earlier one: publishes still leave
   * in the order they were asked for, whichever record is slower.
   */
  private afterRecording(record: (realmId: number) => Promise<void>, realmId: number): Promise<void> {
    const recorded = record(realmId).catch((error) => {
      this.options.logger?.warn({ err: error, realm_id: realmId }, 'recording the write position failed');
    });
    this.recordedTail = Promise.all([this.recordedTail, recorded]).then(() => undefined);
    return this.recordedTail;
  }

  /** Appends the entry to its realm's intake stream, at most once per outbox row; the row is then deleted after the hold. */
  async publish(entry: IntakeEntry, options: { retryInOrder?: boolean } = {}): Promise<void> {
    await this.publishOnce(entry, options);
    if (entry.outboxId !== undefined) this.deleter?.add(entry.outboxId);
  }

  /**
   * Appends the entry unless its outbox row was published within the dedup window; answers
   * whether it appended. Leaves the row where it is (the relay deletes the rows it handles).
   * `retryInOrder` (the after-commit publish): see retriedInOrder.
   */
  async publishOnce(entry: IntakeEntry, options: { retryInOrder?: boolean } = {}): Promise<boolean> {
    // One entry per shard, each deduplicated in its own partition: a publish that failed half-way
    // is completed by the relay without sending the other half twice.
    const appended = await Promise.all(
      this.splitByShard(entry).map(async ({ partition, entry: shardEntry }) => {
        const stream = this.keys.intakeStream(partition);
        let appended = false;
        // The entry counts once its replicas hold it (REDIS_WAIT_REPLICAS), so in a Cluster the
        // partition's next publish waits for that too: a master killed before replicating an
        // entry must not have been handed the entries after it.
        const append = async () => {
          const id = await (this.redis as unknown as PublishOnce).teamchatPublishOnce(
            stream,
            this.keys.intakeSent(partition, entry.outboxId ?? 'none'),
            JSON.stringify(shardEntry),
            entry.outboxId ?? '',
            this.dedupWindowSecs,
          );
          if (id !== null) appended = true;
          await confirmReplicated(this.redis, stream, this.options.durability);
        };
        // Only in a Cluster, where publishes to a partition wait for each other: elsewhere a
        // retry would come after later publishes.
        const retry = options.retryInOrder === true && entry.outboxId !== undefined && isCluster(this.redis);
        await this.inPartitionOrder(partition, retry ? this.retriedInOrder(append, entry) : append);
        return appended;
      }),
    );
    return appended.some(Boolean);
  }

  /**
   * Sends a partition's publishes in the order they were asked for. Producers answer before their
   * publish is done, so the intake's order is the commit order only if publishes arrive as sent:
   * one server's connection keeps them in order, but a Cluster re-sends the commands a master's
   * failover caught from several retry queues (connection closed, CLUSTERDOWN, MOVED), not in
   * their order. There each publish to a partition waits for the one before it.
   */
  private inPartitionOrder<T>(partition: number, send: () => Promise<T>): Promise<T> {
    if (!isCluster(this.redis)) return send();
    const previous = this.partitionTails.get(partition);
    const sent = previous ? previous.then(send) : send();
    const settled = sent.then(
      () => undefined,
      () => undefined,
    );
    this.partitionTails.set(partition, settled);
    void settled.then(() => {
      if (this.partitionTails.get(partition) === settled) this.partitionTails.delete(partition);
    });
    return sent;
  }

  /**
   * The append, tried again if it fails, before the partition's next publish, until publishRetryMs
   * after it was asked for (now, not when its turn comes: appends queued behind a failing one do
   * not each wait that long again). In a Cluster a master's failover fails appends ioredis does not
   * retry ("Connection is closed." while the cluster refreshes its slots; the master killed
   * before its replicas confirmed the entry), and the appends queued behind then succeed: left to
   * the relay, this one would reach its queues seconds after events committed later. Trying it
   * again is safe: its dedup marker keeps it from being appended twice (an entry already there is
   * only confirmed again). Only outbox rows are retried (a transient event has no marker).
   */
  private retriedInOrder(append: () => Promise<void>, entry: IntakeEntry): () => Promise<void> {
    const giveUpAt = Date.now() + (this.options.publishRetryMs ?? DEFAULT_PUBLISH_RETRY_MS);
    return () => this.appendUntil(append, entry, giveUpAt);
  }

  private async appendUntil(append: () => Promise<void>, entry: IntakeEntry, giveUpAt: number): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await append();
      } catch (error) {
        const delay = PUBLISH_RETRY_DELAYS_MS[Math.min(attempt, PUBLISH_RETRY_DELAYS_MS.length - 1)];
        if (this.closing || Date.now() + delay > giveUpAt) throw error;
        if (attempt === 0)
          this.options.logger?.warn(
            { err: error, outbox_id: entry.outboxId },
            'event publish failed; trying it again before later publishes',
          );
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /** Waits for the publishes under way, then deletes the rows they published (after their hold). */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.inFlight);
    await this.deleter?.close();
  }
}

/**
 * Publishes outbox rows older than `graceMs` (their after-commit publish failed: a published
 * row is deleted by its producer well within the grace) and deletes them, oldest first. Safe to
 * run in several processes at once and repeatedly (publishing is idempotent within the dedup
 * window): one relay runs at a time (a transaction-level advisory lock; the others skip the
 * round), since two would publish in two orders — while one waited on the oldest rows (Redis
 * failing over), another skipping the rows it holds published newer ones first. SKIP LOCKED
 * still passes over rows their producer is deleting (published already). Answers how many rows
 * it handled and how many of them it actually appended.
 */
export async function relayOutbox(
  db: Db,
  bus: EventBus,
  options: { graceMs?: number; batchSize?: number } = {},
): Promise<{ rows: number; published: number }> {
  const graceMs = options.graceMs ?? DEFAULT_RELAY_GRACE_MS;
  const batchSize = options.batchSize ?? 500;
  return db.$transaction(async (client) => {
    const [{ relaying }] = await client.$queryRaw<{ relaying: boolean }[]>`
      SELECT pg_try_advisory_xact_lock(hashtext('teamchat:event-outbox-relay'), 0) AS relaying`;
    if (!relaying) return { rows: 0, published: 0 };
    const rows = await client.$queryRaw<{ id: string; xid: string; realm_id: number; payload: OutboxPayload }[]>`
      SELECT id::text AS id, xid::text AS xid, realm_id, payload FROM event_outbox
      WHERE created_at < now() - make_interval(secs => ${graceMs / 1000})
      ORDER BY id LIMIT ${batchSize} FOR UPDATE SKIP LOCKED`;
    let published = 0;
    for (const row of rows) {
      if (await bus.publishOnce({ outboxId: row.id, xid: row.xid, realmId: row.realm_id, ...row.payload })) published++;
    }
    if (rows.length)
      await client.$executeRaw`DELETE FROM event_outbox WHERE id = ANY(${rows.map((row) => row.id)}::bigint[])`;
    return { rows: rows.length, published };
  });
}

/**
 * The relay's view of the outbox, in one cheap query (an index range and an index end):
 * rows past the grace (waiting for the relay) and the oldest row's age in seconds.
 */
export async function outboxBacklog(
  db: Db,
  graceMs: number = DEFAULT_RELAY_GRACE_MS,
): Promise<{ backlog: number; oldestSeconds: number }> {
  const [row] = await db.$queryRaw<{ backlog: number; oldest_seconds: number }[]>`
    SELECT (SELECT count(*) FROM event_outbox WHERE created_at < now() - make_interval(secs => ${graceMs / 1000}))::int AS backlog,
      COALESCE(extract(epoch FROM now() - (SELECT min(created_at) FROM event_outbox)), 0)::float8 AS oldest_seconds`;
  return { backlog: row.backlog, oldestSeconds: row.oldest_seconds };
}
