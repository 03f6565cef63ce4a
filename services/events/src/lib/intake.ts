// Consuming the intake streams. All replicas form ONE consumer group; each partition is owned
// by one replica at a time through a lease (SET NX PX, renewed), so a partition's entries are
// fanned out in stream order. Replicas share the partitions evenly (each aims for
// ceil(partitions / live replicas)) and take over the partitions of a replica that stops
// renewing: the new owner first claims the entries the old one left unacknowledged
// (XAUTOCLAIM) and applies them again — the queues' high-water marks make that harmless.
// Entries are trimmed once every consumer group has acknowledged them.

import type { IntakeEntry, Redis } from '@teamchat/bus';
import type { Logger } from '@teamchat/core';
import type { Fanout, StreamEntry } from './fanout';

export const INTAKE_GROUP = 'events';

const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

interface LeaseCommands {
  tcLeaseRenew(key: string, owner: string, ms: number): Promise<number>;
  tcLeaseRelease(key: string, owner: string): Promise<number>;
}

export interface IntakeOptions {
  replicaId: string;
  partitions: number;
  leaseMs: number;
  batchSize: number;
  trimIntervalMs: number;
  /** Name of the stream of a partition. */
  streamKey(partition: number): string;
  /** Redis key prefix for leases and the replica registry. */
  prefix: string;
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

/** Reads one partition while this replica owns it. */
class PartitionConsumer {
  private stopping = false;
  private blocked = false;
  private done: Promise<void> = Promise.resolve();
  /**
   * Until when (performance.now()) the lease is surely still ours: the send time of the SET or
   * renewal that succeeded, plus the lease. Redis starts the key's expiry no earlier, so no other
   * replica can own the partition before this instant.
   */
  private leaseValidUntil: number;
  /** XREADGROUP's BLOCK: short beside the lease, so a read never delivers entries after it. */
  private readonly blockMs: number;
  private readonly marginMs: number;

  constructor(
    readonly partition: number,
    private readonly connection: Redis,
    private readonly fanout: Fanout,
    private readonly options: IntakeOptions,
    private readonly logger: Logger,
    leaseValidUntil: number,
  ) {
    this.leaseValidUntil = leaseValidUntil;
    this.blockMs = Math.max(10, Math.min(1000, Math.floor(options.leaseMs / 4)));
    this.marginMs = Math.max(5, Math.floor(options.leaseMs / 10));
  }

  extendLease(validUntil: number): void {
    this.leaseValidUntil = Math.max(this.leaseValidUntil, validUntil);
  }

  /**
   * Entries are read (or claimed) only while the lease surely outlasts the read: every entry this
   * replica is handed is then pending under it before any other replica can own the partition,
   * so the next owner claims it (XAUTOCLAIM) and applies it in order. A replica that stalled past
   * its lease (a GC pause, a frozen process) would otherwise read newer entries while the next
   * owner applies others: each queue keeps the higher of the two, the other owner's entries are
   * refused by the high-water mark, and lost. Waits here until the lease is renewed or the
   * consumer is stopped (the lease round stops it when the renewal fails).
   */
  private async whileLeased(): Promise<boolean> {
    while (!this.stopping && performance.now() + this.blockMs + this.marginMs > this.leaseValidUntil) await sleep(20);
    return !this.stopping;
  }

  start(): void {
    this.done = this.run();
  }

  private get stream(): string {
    return this.options.streamKey(this.partition);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      // The acknowledgement of the batch just applied travels with the next read (one round
      // trip): it is awaited before that read's entries are applied.
      let acknowledging: Promise<unknown> | null = null;
      try {
        await this.ensureGroup();
        await this.reclaim();
        while (!this.stopping) {
          if (!(await this.whileLeased())) break;
          this.blocked = true;
          const reading = this.connection.xreadgroup(
            'GROUP', INTAKE_GROUP, this.options.replicaId,
            'COUNT', this.options.batchSize,
            'BLOCK', this.blockMs,
            'STREAMS', this.stream, '>',
          ) as Promise<[string, StreamReply][] | null>;
          if (acknowledging) {
            const acknowledged = acknowledging;
            acknowledging = null;
            // Keep the read's failure from going unobserved while the acknowledgement fails first.
            reading.catch(() => undefined);
            await acknowledged;
          }
          const reply = await reading;
          this.blocked = false;
          if (reply) {
            const raw = reply[0][1];
            await this.fanout.apply(parseEntries(raw, this.logger));
            acknowledging = this.acknowledge(raw);
            // Unobserved until the next read is sent; a failure is seen there (entries stay pending).
            acknowledging.catch(() => undefined);
          }
          failures = 0;
        }
        if (acknowledging) await acknowledging;
      } catch (error) {
        this.blocked = false;
        if (this.stopping) break;
        failures++;
        this.logger.warn({ err: error, partition: this.partition }, 'intake consumer failed; retrying');
        await sleep(Math.min(100 * 2 ** failures, 2000));
      }
    }
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.connection.xgroup('CREATE', this.stream, INTAKE_GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
    }
  }

  /** Takes over what previous owners read but did not acknowledge, oldest first. */
  private async reclaim(): Promise<void> {
    let cursor = '0-0';
    do {
      if (!(await this.whileLeased())) return;
      const reply = (await this.connection.xautoclaim(this.stream, INTAKE_GROUP, this.options.replicaId, 0, cursor, 'COUNT', this.options.batchSize)) as [string, StreamReply];
      cursor = reply[0];
      const entries = reply[1].filter((entry) => entry !== null);
      if (entries.length) await this.process(entries);
    } while (cursor !== '0-0' && !this.stopping);
  }

  private async process(raw: StreamReply): Promise<void> {
    await this.fanout.apply(parseEntries(raw, this.logger));
    await this.acknowledge(raw);
  }

  private acknowledge(raw: StreamReply): Promise<number> {
    return this.connection.xack(this.stream, INTAKE_GROUP, ...raw.map(([id]) => id));
  }

  /** Finishes the batch in hand and stops; entries read but not applied stay pending. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.blocked) this.connection.disconnect();
    await this.done;
    this.connection.disconnect();
  }
}

export class IntakeConsumers {
  private readonly held = new Map<number, PartitionConsumer>();
  /** Consumers finishing their last batch after their lease was lost or given back. */
  private readonly stopping = new Map<number, Promise<void>>();
  private tickTimer: NodeJS.Timeout | undefined;
  private trimTimer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly redis: Redis,
    private readonly newConnection: (name: string) => Redis,
    private readonly fanout: Fanout,
    private readonly options: IntakeOptions,
    private readonly logger: Logger,
  ) {
    if (!('tcLeaseRenew' in redis)) {
      redis.defineCommand('tcLeaseRenew', { numberOfKeys: 1, lua: RENEW });
      redis.defineCommand('tcLeaseRelease', { numberOfKeys: 1, lua: RELEASE });
    }
  }

  private get commands(): Redis & LeaseCommands {
    return this.redis as Redis & LeaseCommands;
  }

  private leaseKey(partition: number): string {
    return `${this.options.prefix}events:lease:${partition}`;
  }

  private get registryKey(): string {
    return `${this.options.prefix}events:replicas`;
  }

  /** Partitions this replica owns now. */
  ownedPartitions(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  start(): void {
    const loop = () => {
      if (this.stopped) return;
      this.ticking = this.tick()
        .catch((error) => this.logger.warn({ err: error }, 'intake lease round failed'))
        .finally(() => {
          if (!this.stopped) this.tickTimer = setTimeout(loop, Math.max(50, Math.floor(this.options.leaseMs / 3)));
        });
    };
    loop();
    this.trimTimer = setInterval(() => {
      this.trim().catch((error) => this.logger.warn({ err: error }, 'intake trim failed'));
    }, this.options.trimIntervalMs);
  }

  private async tick(): Promise<void> {
    const { replicaId, leaseMs, partitions } = this.options;
    const now = Date.now();
    // The registry of live replicas: each refreshes its entry every round.
    const registry = await this.redis
      .multi()
      .zadd(this.registryKey, now, replicaId)
      .zremrangebyscore(this.registryKey, '-inf', now - leaseMs)
      .zcard(this.registryKey)
      .pexpire(this.registryKey, leaseMs * 10)
      .exec();
    const live = Number(registry?.[2]?.[1] ?? 1);
    const target = Math.ceil(partitions / Math.max(1, live));

    for (const [partition, consumer] of [...this.held]) {
      const sentAt = performance.now();
      if ((await this.commands.tcLeaseRenew(this.leaseKey(partition), replicaId, leaseMs)) === 1) {
        consumer.extendLease(sentAt + leaseMs);
        continue;
      }
      this.held.delete(partition);
      this.logger.warn({ partition }, 'intake partition lease lost');
      this.stopConsumer(partition, consumer);
    }
    while (this.held.size > target) {
      const partition = Math.max(...this.held.keys());
      await this.release(partition);
    }
    if (this.held.size < target) {
      const free = shuffle([...Array(partitions).keys()].filter((partition) => !this.held.has(partition)));
      for (const partition of free) {
        if (this.held.size >= target || this.stopped) break;
        const sentAt = performance.now();
        const acquired = await this.redis.set(this.leaseKey(partition), replicaId, 'PX', leaseMs, 'NX');
        if (acquired !== 'OK') continue;
        // Never two readers of one partition in this process: the previous one finishes first.
        await this.stopping.get(partition);
        const consumer = new PartitionConsumer(partition, this.newConnection(`intake:${partition}`), this.fanout, this.options, this.logger, sentAt + leaseMs);
        this.held.set(partition, consumer);
        consumer.start();
      }
    }
  }

  private stopConsumer(partition: number, consumer: PartitionConsumer): Promise<void> {
    const stopped = consumer.stop().finally(() => {
      if (this.stopping.get(partition) === stopped) this.stopping.delete(partition);
    });
    this.stopping.set(partition, stopped);
    return stopped;
  }

  private async release(partition: number): Promise<void> {
    const consumer = this.held.get(partition);
    this.held.delete(partition);
    if (consumer) await this.stopConsumer(partition, consumer);
    await this.commands.tcLeaseRelease(this.leaseKey(partition), this.options.replicaId);
  }

  /** Removes intake entries every consumer group has acknowledged, and consumers long gone. */
  private async trim(): Promise<void> {
    for (const partition of this.ownedPartitions()) {
      const stream = this.options.streamKey(partition);
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
        if (consumer.name !== this.options.replicaId && Number(consumer.pending) === 0 && Number(consumer.idle) > 60_000) {
          await this.redis.xgroup('DELCONSUMER', stream, INTAKE_GROUP, String(consumer.name));
        }
      }
    }
  }

  /** Stops consuming, gives the partitions back at once (others take them over) and leaves the registry. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.tickTimer);
    clearInterval(this.trimTimer);
    await this.ticking;
    await Promise.all(this.ownedPartitions().map((partition) => this.release(partition)));
    await Promise.all(this.stopping.values());
    await this.redis.zrem(this.registryKey, this.options.replicaId);
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
