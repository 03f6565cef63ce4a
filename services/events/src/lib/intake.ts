// Consuming the intake streams. All replicas form ONE consumer group; each partition is owned
// by one replica at a time through a lease (SET NX PX, renewed), so a partition's entries are
// fanned out in stream order. Replicas share the partitions by rendezvous hashing with bounded
// loads (assignPartitions: each replica ends with at most ceil(partitions / live replicas) + 1,
// and a replica joining or leaving moves about partitions / replicas of them, where a striped
// assignment moved most) and take over the partitions of a replica that stops renewing: the new owner first claims the entries the old one left unacknowledged
// (XAUTOCLAIM) and applies them again — the queues' high-water marks make that harmless. An
// owner also claims whatever is pending after any failure, and its reads take nothing new while
// anything is pending: an entry applied after a newer one would be refused as already applied.
// Entries are trimmed once every consumer group has acknowledged them.
//
// A lease is not a lock without a fencing token: a replica paused or cut off past its lease
// still acts when it wakes, and a command delayed in the network lands late. Each new owner
// gets the next generation of the partition (a counter beside the stream), and the two places
// where an old owner could do harm check it in Redis, atomically with the effect:
//   - reading, claiming and acknowledging entries are scripts that run only while the lease is
//     still this owner's (the lease key shares the stream's slot). Waiting for new entries is a
//     plain XREAD, which changes nothing: a late one is harmless;
//   - each queue keeps the newest generation that appended to it and refuses older ones.
// Intake connections never re-send a command after a reconnect, and a consumer treats a
// command in flight when its connection closed as failed, so stopping never waits on a read
// that can no longer settle.

import crypto from 'node:crypto';
import { settleOnClose, type IntakeEntry, type Redis, type RedisKeys } from '@teamchat/bus';
import { repeat, settledWithin, type Logger, type Repeating } from '@teamchat/core';
import { eventTierMetrics } from '@teamchat/telemetry';
import { FencedError, type Fanout, type StreamEntry } from './fanout';

export const INTAKE_GROUP = 'events';

// KEYS lease, generation. ARGV owner, ms. The new generation, or 0 when the lease is held.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local generation = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '/' .. generation, 'PX', ARGV[2])
return generation
`;
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// The fenced stream operations. KEYS lease, stream. ARGV lease value, consumer, then:
//   read: count, ids to acknowledge first... -> {'ok', entries}, {'idle', newest id}, or
//         {'unapplied'} when entries are still pending once those are acknowledged
//   claim: cursor, count -> {'ok', XAUTOCLAIM reply}
//   ack: ids...
// Each answers {'fenced'} (and does nothing) when the lease is no longer this owner's.
const FENCED = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'fenced'} end
local op = ARGV[3]
if op == 'read' then
  if #ARGV > 4 then redis.call('XACK', KEYS[2], '${INTAKE_GROUP}', unpack(ARGV, 5)) end
  if redis.call('XPENDING', KEYS[2], '${INTAKE_GROUP}')[1] > 0 then return {'unapplied'} end
  local reply = redis.call('XREADGROUP', 'GROUP', '${INTAKE_GROUP}', ARGV[2], 'COUNT', ARGV[4], 'STREAMS', KEYS[2], '>')
  if reply then return {'ok', reply[1][2]} end
  local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  return {'idle', newest[1] and newest[1][1] or '0-0'}
elseif op == 'claim' then
  return {'ok', redis.call('XAUTOCLAIM', KEYS[2], '${INTAKE_GROUP}', ARGV[2], 0, ARGV[4], 'COUNT', ARGV[5])}
end
redis.call('XACK', KEYS[2], '${INTAKE_GROUP}', unpack(ARGV, 4))
return {'ok'}
`;

interface LeaseCommands {
  tcLeaseAcquire(lease: string, generation: string, owner: string, ms: number): Promise<number>;
  tcLeaseRenew(key: string, value: string, ms: number): Promise<number>;
  tcLeaseRelease(key: string, value: string): Promise<number>;
}

interface FencedCommands {
  tcIntakeFenced(
    lease: string,
    stream: string,
    leaseValue: string,
    consumer: string,
    op: string,
    ...args: (string | number)[]
  ): Promise<unknown[]>;
}

export interface IntakeOptions {
  replicaId: string;
  partitions: number;
  leaseMs: number;
  batchSize: number;
  trimIntervalMs: number;
  /** The deployment's keys: each partition's stream, lease and generation, the replica registry. */
  keys: RedisKeys;
}

/** A partition's lease as this replica holds it: the value in Redis names the generation. */
export interface Lease {
  generation: number;
  value: string;
}

/**
 * Which live replica should own each partition: rendezvous (highest random weight) hashing with
 * bounded loads. Every (partition, replica) pair gets a weight from a hash of both; pairs are
 * taken heaviest first, each partition by the first replica under the cap of ceil(partitions /
 * replicas) + 1. A replica joining takes about the partitions it weighs heaviest on (1/N of them,
 * plus the few the cap shifts), a replica leaving frees only its own; every replica computes the
 * same answer from the same registry. (A striped assignment, partition p to rank p mod N, moved
 * all but about 1/N of them: every rank shifts.) The cap's + 1 keeps those shifts rare.
 */
export function assignPartitions(partitions: number, liveIds: readonly string[]): string[] {
  const ids = [...new Set(liveIds)].sort();
  if (ids.length === 0) return [];
  const cap = Math.ceil(partitions / ids.length) + (ids.length > 1 ? 1 : 0);
  const pairs: { weight: bigint; partition: number; id: string }[] = [];
  for (const id of ids)
    for (let partition = 0; partition < partitions; partition++) {
      const digest = crypto.createHash('sha256').update(`${id}\0${partition}`).digest();
      pairs.push({ weight: digest.readBigUInt64BE(0), partition, id });
    }
  pairs.sort((a, b) => (a.weight === b.weight ? (a.id < b.id ? -1 : 1) : a.weight > b.weight ? -1 : 1));
  const owners: string[] = new Array<string>(partitions);
  const load = new Map<string, number>(ids.map((id) => [id, 0]));
  for (const { partition, id } of pairs) {
    if (owners[partition] !== undefined || load.get(id)! >= cap) continue;
    owners[partition] = id;
    load.set(id, load.get(id)! + 1);
  }
  return owners;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type StreamReply = [string, string[]][];

function parseEntries(raw: StreamReply, logger: Logger): StreamEntry[] {
  const out: StreamEntry[] = [];
  for (const [id, fields] of raw) {
    const index = fields.indexOf('e');
    try {
      out.push({ id, entry: JSON.parse(fields[index + 1]) as IntakeEntry });
    } catch (error) {
      // Acknowledged with its batch: an unreadable entry must not block the partition.
      logger.error({ err: error, entry_id: id }, 'unreadable intake entry skipped');
    }
  }
  return out;
}

/**
 * The intake stream of one partition as one owner (lease value) may touch it: every operation
 * that changes the consumer group runs only while the lease is still that owner's, and throws
 * FencedError otherwise. Commands in flight when the connection closes fail (never re-sent).
 */
export class FencedStream {
  private readonly metrics = eventTierMetrics();

  constructor(
    private readonly connection: Redis,
    private readonly keys: { stream: string; lease: string },
    private readonly consumer: string,
    private readonly lease: Lease,
    readonly partition: number,
  ) {
    if (!('tcIntakeFenced' in connection)) connection.defineCommand('tcIntakeFenced', { numberOfKeys: 2, lua: FENCED });
  }

  /**
   * Acknowledges `acknowledged`, then reads new entries: the entries, or the newest id when none.
   * Reads nothing while other entries are pending (`unapplied`): delivered to the group but not
   * applied by the caller, they must be claimed and applied first. A queue takes an entry only
   * if it is newer than the last it took, so an entry applied after a newer one is lost. Such an
   * entry comes from a read that ran after its caller stopped waiting for it (a command the
   * Cluster client re-sent on its own, its promise given up when a connection closed).
   */
  async read(
    count: number,
    acknowledged: string[],
  ): Promise<{ entries: StreamReply } | { newest: string } | { unapplied: true }> {
    const reply = await this.run('read', count, ...acknowledged);
    if (reply[0] === 'unapplied') return { unapplied: true };
    return reply[0] === 'ok' ? { entries: reply[1] as StreamReply } : { newest: reply[1] as string };
  }

  /** Claims entries other consumers left pending, from `cursor`: the next cursor and the entries. */
  async claim(cursor: string, count: number): Promise<{ cursor: string; entries: StreamReply }> {
    const [next, entries] = (await this.run('claim', cursor, count))[1] as [string, StreamReply];
    return { cursor: next, entries: entries.filter((entry) => entry !== null) };
  }

  async ack(ids: string[]): Promise<void> {
    if (ids.length) await this.run('ack', ...ids);
  }

  /** Waits up to `blockMs` for an entry after `newest`: a plain read that changes nothing. */
  async waitForEntries(newest: string, blockMs: number): Promise<void> {
    await this.command(this.connection.xread('BLOCK', blockMs, 'STREAMS', this.keys.stream, newest));
  }

  async ensureGroup(): Promise<void> {
    try {
      await this.command(this.connection.xgroup('CREATE', this.keys.stream, INTAKE_GROUP, '0', 'MKSTREAM'));
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
    }
  }

  private command<T>(command: Promise<T>): Promise<T> {
    return settleOnClose(this.connection, command);
  }

  private async run(op: 'read' | 'claim' | 'ack', ...args: (string | number)[]): Promise<unknown[]> {
    const connection = this.connection as Redis & FencedCommands;
    const reply = await this.command(
      connection.tcIntakeFenced(this.keys.lease, this.keys.stream, this.lease.value, this.consumer, op, ...args),
    );
    if (reply[0] === 'fenced') {
      this.metrics.readsFenced.inc();
      throw new FencedError(this.partition, this.lease.generation);
    }
    return reply;
  }
}

/** Reads one partition while this replica owns it. */
class PartitionConsumer {
  private stopping = false;
  private done: Promise<void> = Promise.resolve();
  /**
   * Until when (performance.now()) the lease is surely still ours: the send time of the SET or
   * renewal that succeeded, plus the lease. Redis starts the key's expiry no earlier, so no other
   * replica can own the partition before this instant. 0 once Redis said the lease is gone.
   */
  private leaseValidUntil: number;
  /** How long one XREAD waits for new entries: short beside the lease, so the loop looks often. */
  private readonly blockMs: number;
  private readonly marginMs: number;
  private readonly intake: FencedStream;

  constructor(
    readonly partition: number,
    private readonly lease: Lease,
    private readonly connection: Redis,
    private readonly fanout: Fanout,
    private readonly options: IntakeOptions,
    private readonly logger: Logger,
    leaseValidUntil: number,
  ) {
    this.leaseValidUntil = leaseValidUntil;
    this.blockMs = Math.max(10, Math.min(1000, Math.floor(options.leaseMs / 4)));
    this.marginMs = Math.max(5, Math.floor(options.leaseMs / 10));
    const keys = { stream: options.keys.intakeStream(partition), lease: options.keys.intakeLease(partition) };
    this.intake = new FencedStream(connection, keys, options.replicaId, lease, partition);
  }

  extendLease(validUntil: number): void {
    if (this.leaseValidUntil > 0) this.leaseValidUntil = Math.max(this.leaseValidUntil, validUntil);
  }

  /**
   * Work starts only while the lease surely outlasts it, so that this replica rarely meets the
   * fence; the fence (in Redis) is what makes a late command harmless. Waits here until the
   * lease is renewed or the consumer is stopped (the lease round stops it when renewal fails).
   */
  private async whileLeased(): Promise<boolean> {
    while (!this.stopping && performance.now() + this.blockMs + this.marginMs > this.leaseValidUntil) await sleep(20);
    return !this.stopping;
  }

  start(): void {
    this.done = this.run();
  }

  private get fence() {
    return { partition: this.partition, generation: this.lease.generation };
  }

  private async connected(): Promise<void> {
    if (this.connection.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const ready = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(
        () => {
          this.connection.off('ready', ready);
          reject(new Error('intake connection not ready'));
        },
        Math.max(1000, this.options.leaseMs),
      );
      this.connection.once('ready', ready);
    });
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      // Entries applied but not yet acknowledged: the acknowledgement travels with the next read.
      let applied: string[] = [];
      try {
        await this.connected();
        await this.intake.ensureGroup();
        await this.reclaim();
        while (!this.stopping) {
          if (!(await this.whileLeased())) break;
          const read = await this.intake.read(this.options.batchSize, applied);
          applied = [];
          if ('unapplied' in read) {
            this.logger.warn({ partition: this.partition }, 'intake entries pending unapplied; claiming them first');
            await this.reclaim();
          } else if ('entries' in read) {
            await this.fanout.apply(parseEntries(read.entries, this.logger), this.fence);
            applied = read.entries.map(([id]) => id);
          } else {
            await this.intake.waitForEntries(read.newest, this.blockMs);
          }
          failures = 0;
        }
        await this.intake.ack(applied);
      } catch (error) {
        if (this.stopping) break;
        if (error instanceof FencedError) {
          // Another replica owns the partition now: never act on it again (the lease round stops us).
          this.leaseValidUntil = 0;
          this.logger.warn(
            { partition: this.partition, generation: this.lease.generation },
            'intake lease superseded; stopping reads',
          );
          continue;
        }
        failures++;
        this.logger.warn({ err: error, partition: this.partition }, 'intake consumer failed; retrying');
        await sleep(Math.min(100 * 2 ** failures, 2000));
      }
    }
  }

  /** Takes over what previous owners read but did not acknowledge, oldest first. */
  private async reclaim(): Promise<void> {
    let cursor = '0-0';
    do {
      if (!(await this.whileLeased())) return;
      const claimed = await this.intake.claim(cursor, this.options.batchSize);
      cursor = claimed.cursor;
      if (claimed.entries.length) {
        await this.fanout.apply(parseEntries(claimed.entries, this.logger), this.fence);
        await this.intake.ack(claimed.entries.map(([id]) => id));
      }
    } while (cursor !== '0-0' && !this.stopping);
  }

  /**
   * Stops: the connection is closed at once, which fails whatever command is in flight; the batch
   * being applied is left pending (the next owner claims it). Bounded: never waits on Redis.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.connection.disconnect();
    await settledWithin(this.done, Math.max(1000, this.options.leaseMs));
  }
}

export class IntakeConsumers {
  private readonly held = new Map<number, { consumer: PartitionConsumer; lease: Lease }>();
  /** Consumers finishing their last batch after their lease was lost or given back. */
  private readonly stopping = new Map<number, Promise<void>>();
  private balancing: Repeating | undefined;
  private renewing: Repeating | undefined;
  private trimTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly metrics = eventTierMetrics();
  /**
   * A connection made before it is needed: a new owner starts reading at once instead of first
   * connecting (a Cluster client takes over a second to be ready on a busy machine, and each
   * handover took that long). Every consumer gets a connection of its own, closed when it stops.
   */
  private spare: Redis | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly newConnection: (name: string) => Redis,
    private readonly fanout: Fanout,
    private readonly options: IntakeOptions,
    private readonly logger: Logger,
  ) {
    if (!('tcLeaseRenew' in redis)) {
      redis.defineCommand('tcLeaseAcquire', { numberOfKeys: 2, lua: ACQUIRE });
      redis.defineCommand('tcLeaseRenew', { numberOfKeys: 1, lua: RENEW });
      redis.defineCommand('tcLeaseRelease', { numberOfKeys: 1, lua: RELEASE });
    }
  }

  private get commands(): Redis & LeaseCommands {
    return this.redis as Redis & LeaseCommands;
  }

  private get registryKey(): string {
    return this.options.keys.custom('events', 'replicas');
  }

  private assigned: { ids: string; owners: string[] } | undefined;

  /** assignPartitions for these replicas, kept while the registry does not change. */
  private assignment(liveIds: string[]): string[] {
    const ids = liveIds.join('\n');
    if (this.assigned?.ids !== ids) this.assigned = { ids, owners: assignPartitions(this.options.partitions, liveIds) };
    return this.assigned.owners;
  }

  /** Partitions this replica owns now. */
  ownedPartitions(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /**
   * Two rounds, each every third of a lease: renewing the leases held, and balancing (the
   * registry, giving back, acquiring). Renewal never waits behind the balancing: a balancing
   * round may wait seconds (on a failing Redis master, on a consumer finishing its batch), and a
   * renewal that waited with it let every other lease expire; each new owner then spent its
   * first second connecting, and checker runs stalled 26 to 38 s in such cascades of handovers.
   */
  start(): void {
    this.spare = this.newConnection('intake');
    const intervalMs = Math.max(50, Math.floor(this.options.leaseMs / 3));
    this.balancing = repeat(() => this.balance(), {
      intervalMs,
      firstDelayMs: 0,
      onError: (error) => this.logger.warn({ err: error }, 'intake lease round failed'),
    });
    this.renewing = repeat(() => this.renewHeld(), {
      intervalMs,
      onError: (error) => this.logger.warn({ err: error }, 'intake lease renewal failed'),
    });
    this.trimTimer = setInterval(() => {
      this.trim().catch((error) => this.logger.warn({ err: error }, 'intake trim failed'));
    }, this.options.trimIntervalMs);
  }

  /** Renews every lease held, at once; a lease that is gone stops its consumer (not awaited). */
  private async renewHeld(): Promise<void> {
    const { leaseMs } = this.options;
    await Promise.all(
      [...this.held].map(async ([partition, { consumer, lease }]) => {
        const sentAt = performance.now();
        const renewed = await this.commands.tcLeaseRenew(
          this.options.keys.intakeLease(partition),
          lease.value,
          leaseMs,
        );
        if (renewed === 1) {
          consumer.extendLease(sentAt + leaseMs);
          return;
        }
        // Given back (or lost and taken again) while the renewal was on its way: not this lease's loss.
        if (this.held.get(partition)?.lease !== lease) return;
        this.held.delete(partition);
        this.metrics.leaseHandovers.inc({ change: 'lost' });
        this.logger.warn({ partition, generation: lease.generation }, 'intake partition lease lost');
        void this.stopConsumer(partition, consumer);
      }),
    );
  }

  private async balance(): Promise<void> {
    const { replicaId, leaseMs, partitions } = this.options;
    const now = Date.now();
    // The registry of live replicas: each refreshes its entry every round.
    const registry = await this.redis
      .multi()
      .zadd(this.registryKey, now, replicaId)
      .zremrangebyscore(this.registryKey, '-inf', now - leaseMs)
      .zrange(this.registryKey, 0, -1)
      .pexpire(this.registryKey, leaseMs * 10)
      .exec();
    const liveIds = ((registry?.[2]?.[1] as string[] | undefined) ?? []).sort();
    const live = Math.max(1, liveIds.length);
    // The same answer in every replica that reads the same registry (assignPartitions): few
    // partitions change hands when a replica joins or leaves.
    const owners = this.assignment(liveIds);
    const assignedHere = (partition: number) => owners[partition] === replicaId;
    const target = Math.max(owners.filter((owner) => owner === replicaId).length, Math.ceil(partitions / live));
    const rank = liveIds.indexOf(replicaId);

    const givenBack = new Set<number>();
    // Not awaited: the consumer finishes its batch (up to a lease) before the lease is deleted.
    const giveBack = (partition: number) => {
      givenBack.add(partition);
      void this.release(partition).catch((error) =>
        this.logger.warn({ err: error, partition }, 'intake lease release failed; it expires'),
      );
    };
    const foreign = () => [...this.held.keys()].filter((partition) => !assignedHere(partition));
    while (this.held.size > target) giveBack(Math.max(...(foreign().length ? foreign() : this.held.keys())));
    // Another replica's partition goes back to it, one a round: it takes it at its next round.
    if (rank >= 0 && foreign().length) giveBack(Math.max(...foreign()));
    // Its own partitions first, even beyond the target (the surplus goes back next round, foreign
    // first); others only below it, and not one given back this round (its assigned owner
    // takes it; if that replica does not, this one takes it at its next round).
    // Not one whose previous reader here is still finishing: it is taken at a later round.
    const free = [...Array(partitions).keys()].filter(
      (partition) => !this.held.has(partition) && !givenBack.has(partition) && !this.stopping.has(partition),
    );
    const candidates = [
      ...shuffle(free.filter(assignedHere)),
      ...shuffle(free.filter((partition) => !assignedHere(partition))),
    ];
    for (const partition of candidates) {
      if (this.stopped || (this.held.size >= target && !assignedHere(partition))) break;
      const sentAt = performance.now();
      const generation = await this.commands.tcLeaseAcquire(
        this.options.keys.intakeLease(partition),
        this.options.keys.intakeGeneration(partition),
        replicaId,
        leaseMs,
      );
      if (!generation) continue;
      const lease = { generation, value: `${replicaId}/${generation}` };
      this.metrics.leaseHandovers.inc({ change: 'acquired' });
      const consumer = new PartitionConsumer(
        partition,
        lease,
        this.takeConnection(),
        this.fanout,
        this.options,
        this.logger,
        sentAt + leaseMs,
      );
      this.held.set(partition, { consumer, lease });
      consumer.start();
    }
  }

  private takeConnection(): Redis {
    const connection = this.spare ?? this.newConnection('intake');
    this.spare = this.newConnection('intake');
    return connection;
  }

  private stopConsumer(partition: number, consumer: PartitionConsumer): Promise<void> {
    const stopped = consumer.stop().finally(() => {
      if (this.stopping.get(partition) === stopped) this.stopping.delete(partition);
    });
    this.stopping.set(partition, stopped);
    return stopped;
  }

  private async release(partition: number): Promise<void> {
    const held = this.held.get(partition);
    if (!held) return;
    this.held.delete(partition);
    await this.stopConsumer(partition, held.consumer);
    await this.commands.tcLeaseRelease(this.options.keys.intakeLease(partition), held.lease.value);
    this.metrics.leaseHandovers.inc({ change: 'released' });
  }

  /** Removes intake entries every consumer group has acknowledged, and consumers long gone. */
  private async trim(): Promise<void> {
    for (const partition of this.ownedPartitions()) {
      const stream = this.options.keys.intakeStream(partition);
      const groups = (await this.redis.xinfo('GROUPS', stream)) as unknown[][];
      let safe: string | null = null;
      for (const group of groups) {
        const info = pairs(group);
        let lowest: string;
        if (Number(info.pending) > 0) {
          const summary = (await this.redis.xpending(stream, String(info.name))) as [number, string, string, unknown];
          lowest = summary[1];
        } else {
          lowest = nextStreamId(String(info['last-delivered-id']));
        }
        if (safe === null || compareStreamIds(lowest, safe) < 0) safe = lowest;
      }
      if (safe !== null && safe !== '0-1') await this.redis.xtrim(stream, 'MINID', '~', safe);

      const consumers = (await this.redis.xinfo('CONSUMERS', stream, INTAKE_GROUP)) as unknown[][];
      for (const consumer of consumers.map(pairs)) {
        if (
          consumer.name !== this.options.replicaId &&
          Number(consumer.pending) === 0 &&
          Number(consumer.idle) > 60_000
        ) {
          await this.redis.xgroup('DELCONSUMER', stream, INTAKE_GROUP, String(consumer.name));
        }
      }
    }
  }

  /**
   * Stops consuming, gives the partitions back at once (others take them over) and leaves the
   * registry. Bounded: with Redis unreachable it gives up after about a lease, and the leases
   * simply expire, so a replica always exits within its grace period.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.trimTimer);
    const leaving = (async () => {
      await Promise.all([this.balancing?.stop(this.options.leaseMs), this.renewing?.stop(this.options.leaseMs)]);
      await Promise.all(this.ownedPartitions().map((partition) => this.release(partition)));
      await Promise.all(this.stopping.values());
      await this.redis.zrem(this.registryKey, this.options.replicaId);
    })();
    leaving.catch((error) => this.logger.warn({ err: error }, 'intake stop: leases left to expire'));
    await settledWithin(leaving, this.options.leaseMs + 1000);
    for (const { consumer } of this.held.values()) void consumer.stop();
    this.spare?.disconnect();
  }
}

function pairs(flat: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
}

function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am === bm ? (as === bs ? 0 : as < bs ? -1 : 1) : am < bm ? -1 : 1;
}

function nextStreamId(id: string): string {
  const [ms, seq] = id.split('-').map(BigInt);
  return `${ms}-${seq + 1n}`;
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
