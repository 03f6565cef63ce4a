import calculateSlot from 'cluster-key-slot';
import { JOB_QUEUES, type JobQueueName } from './job-data';
import IORedis, { Cluster, type ChainableCommander, type ClusterOptions, type RedisOptions } from 'ioredis';

/** A connection to the deployment's Redis: one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). */
export type Redis = IORedis | Cluster;

/** Where Redis is: REDIS_CLUSTER_NODES (host:port,host:port,...) when set, else REDIS_URL. */
export interface RedisTarget {
  REDIS_URL: string;
  REDIS_CLUSTER_NODES?: string;
}

export function isCluster(redis: Redis): redis is Cluster {
  return redis instanceof Cluster;
}

/** The Redis Cluster slot (0-16383) of a key or shard channel. */
export function slotOf(key: string): number {
  return calculateSlot(key);
}

/**
 * The seed nodes of REDIS_CLUSTER_NODES, or undefined for a single server. Entries are host:port
 * (IPv6 as [addr]:port); credentials come from REDIS_URL.
 */
export function clusterNodes(target: RedisTarget): { host: string; port: number }[] | undefined {
  const list = target.REDIS_CLUSTER_NODES?.trim();
  if (!list) return undefined;
  return list.split(',').map((entry) => {
    const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(entry.trim());
    if (!match) throw new Error(`REDIS_CLUSTER_NODES: "${entry}" is not host:port`);
    return { host: match[1], port: Number(match[2]) };
  });
}

export interface RedisClientOptions {
  /** A connection BullMQ may block on (it requires maxRetriesPerRequest: null). */
  blocking?: boolean;
  /** Shown in CLIENT LIST, to tell connections apart. */
  name?: string;
  /**
   * Commands fail at once while disconnected and are never re-sent after a reconnect (ioredis
   * re-sends unanswered commands by default: a read sent before a network cut would then run
   * long after its sender lost the right to make it). The caller must treat a command in flight
   * at a disconnect as failed (ioredis then leaves its promise unsettled): see settleOnClose. A
   * Cluster client also re-sends, 200 ms later, a command whose node connection closed under it
   * (retryDelayOnFailover): not on these connections.
   */
  failFast?: boolean;
  /** Commands issued within one turn of the event loop share one write (ioredis's enableAutoPipelining). */
  autoPipelining?: boolean;
  /**
   * Where connection errors go: one warning per outage (until the connection is ready again).
   * Without it ioredis prints every failed reconnect attempt to stderr as an unhandled error.
   */
  logger?: { warn(details: object, message: string): void };
}

const FAILOVER_RETRY_MS = 200;
/**
 * How long a command to a Cluster master that stopped answering is retried while a replica takes
 * over: Redis's default cluster-node-timeout (15 s) plus the election, with a margin.
 */
const CLUSTER_FAILOVER_WAIT_MS = 30_000;

/**
 * A new ioredis connection (a Cluster when the target names cluster nodes). Commands issued while
 * Redis is unreachable wait in ioredis's offline queue and run on reconnect. Close every client
 * (quit()) or the process will not exit.
 */
export function createRedis(target: string | RedisTarget, options: RedisClientOptions = {}): Redis {
  const resolved: RedisTarget = typeof target === 'string' ? { REDIS_URL: target } : target;
  const nodeOptions: RedisOptions = {
    connectionName: options.name,
    maxRetriesPerRequest: options.blocking ? null : 50,
    ...(options.failFast ? { enableOfflineQueue: false, autoResendUnfulfilledCommands: false } : {}),
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(50 * attempt, 2000),
  };
  const nodes = clusterNodes(resolved);
  let connection: Redis;
  if (nodes) {
    const url = new URL(resolved.REDIS_URL);
    const clusterOptions: ClusterOptions = {
      redisOptions: {
        ...nodeOptions,
        ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      },
      // Wake-ups are shard channels (SSUBSCRIBE): one subscriber per master, resubscribed after a failover.
      shardedSubscribers: true,
      scaleReads: 'master',
      enableOfflineQueue: !options.failFast,
      enableAutoPipelining: options.autoPipelining ?? false,
      enableReadyCheck: true,
      // A master's failover takes the cluster's node timeout plus an election: keep retrying meanwhile.
      retryDelayOnFailover: options.failFast ? 0 : FAILOVER_RETRY_MS,
      retryDelayOnClusterDown: FAILOVER_RETRY_MS,
      // ioredis gives up after maxRedirections retries (16 by default: 3.2 s, shorter than any
      // failover), and a publish that failed reaches its queues late, through the outbox relay,
      // after events sent later. Fail-fast connections keep the default.
      ...(options.failFast ? {} : { maxRedirections: Math.ceil(CLUSTER_FAILOVER_WAIT_MS / FAILOVER_RETRY_MS) }),
      retryDelayOnTryAgain: 100,
      clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 2000),
    };
    connection = new Cluster(nodes, clusterOptions);
  } else {
    connection = new IORedis(resolved.REDIS_URL, {
      ...nodeOptions,
      ...(options.autoPipelining ? { enableAutoPipelining: true } : {}),
    });
  }
  if (options.logger) reportConnectionErrors(connection, options.logger, options.name);
  return connection;
}

export type ConnectionLogger = NonNullable<RedisClientOptions['logger']>;

/**
 * Sends a connection's errors to `logger`, one warning per outage (until it is ready again). A
 * connection must have an 'error' listener: without one, an error it emits (a Cluster's sharded
 * subscriber failing to reach a master that went away, say) is thrown and ends the process.
 */
function reportConnectionErrors(connection: Redis, logger: ConnectionLogger, name: string | undefined): void {
  let reported = false;
  const report = (error: Error) => {
    if (!reported) logger.warn({ err: error, connection: name }, 'redis connection error; reconnecting');
    reported = true;
  };
  connection.on('error', report);
  // A Cluster reports each node's trouble on its own and stays "ready" while others answer.
  connection.on('node error', report);
  connection.on('ready', () => (reported = false));
}

/** A new connection to the same Redis (a subscriber, say), named for CLIENT LIST, its errors sent to `logger`. */
export function duplicateRedis(redis: Redis, name: string, logger: ConnectionLogger): Redis {
  const copy = isCluster(redis)
    ? redis.duplicate(undefined, { redisOptions: { ...redis.options.redisOptions, connectionName: name } })
    : redis.duplicate({ connectionName: name });
  reportConnectionErrors(copy, logger, name);
  return copy;
}

/**
 * How many replicas must hold a write of the event tier before it counts as done
 * (REDIS_WAIT_REPLICAS), and how long to wait for them. Redis replicates asynchronously: a master
 * killed right after answering may leave its promoted replica without the write (a queue's index
 * entry, an intake entry, an appended event), and nothing would tell anyone it was lost. With
 * replicas > 0 the writes that must survive a failover are followed by WAIT on the connection that
 * made them, and fail with ReplicationError when too few replicas confirmed in time: the caller
 * then does what it does for any failed write (fan-out retries before acknowledging, the outbox
 * relay re-publishes, register and polls answer 503).
 */
export interface Durability {
  replicas: number;
  timeoutMs: number;
}

/** The durability REDIS_WAIT_REPLICAS and REDIS_WAIT_TIMEOUT_MS ask for (none when unset). */
export function durabilityOf(config: { REDIS_WAIT_REPLICAS?: number; REDIS_WAIT_TIMEOUT_MS?: number }): Durability {
  return { replicas: config.REDIS_WAIT_REPLICAS ?? 0, timeoutMs: config.REDIS_WAIT_TIMEOUT_MS ?? 500 };
}

export class ReplicationError extends Error {
  constructor(detail: string) {
    super(`Redis write not confirmed by its replicas: ${detail}`);
  }
}

/**
 * Waits until `durability.replicas` replicas hold every write this process made on the connection
 * that serves `key` (WAIT counts a connection's own writes, in replication order), or throws
 * ReplicationError. In a Cluster that is the pooled connection to the master serving the key's slot,
 * which took the key's writes (or their MOVED retries). WAIT goes to it as a command of its own:
 * inside a Cluster pipeline a keyless command breaks the pipeline's redirection handling.
 */
export async function confirmReplicated(redis: Redis, key: string, durability: Durability | undefined): Promise<void> {
  if (!durability || durability.replicas <= 0) return;
  const connection = isCluster(redis) ? masterServing(redis, slotOf(key)) : redis;
  const confirmed = await connection.wait(durability.replicas, durability.timeoutMs);
  if (confirmed < durability.replicas)
    throw new ReplicationError(`${confirmed} of ${durability.replicas} replicas within ${durability.timeoutMs} ms`);
}

/** The Cluster's pooled connection to the master serving `slot`, as its slot map knows it now. */
function masterServing(cluster: Cluster, slot: number): IORedis {
  const key = cluster.slots[slot]?.[0];
  const node = key
    ? cluster.nodes('master').find((master) => `${master.options.host}:${master.options.port}` === key)
    : undefined;
  if (!node) throw new ReplicationError(`no master known for slot ${slot}`);
  return node;
}

/**
 * A pipeline whose commands may touch keys of any slot. A single server takes them as one
 * pipeline; a Cluster accepts a pipeline only when all its keys live on one node, so there the
 * commands are grouped by the node serving the slot of their first argument (every command and
 * script we batch names its key first), one pipeline per node, run together; exec() answers in
 * the order the commands were added, as a pipeline does. Not atomic (neither is a pipeline).
 * With `durability`, exec() resolves only once each node's replicas confirmed its writes.
 */
export function crossSlotPipeline(redis: Redis, durability?: Durability): ChainableCommander {
  const calls: { name: string; args: unknown[] }[] = [];
  const batch: ChainableCommander = new Proxy({} as ChainableCommander, {
    get(_, property) {
      if (property === 'length') return calls.length;
      if (property === 'exec') return () => runGrouped(redis, calls, durability);
      if (typeof property !== 'string') return undefined;
      return (...args: unknown[]) => {
        calls.push({ name: property, args });
        return batch;
      };
    },
  });
  return batch;
}

async function runGrouped(
  redis: Redis,
  calls: { name: string; args: unknown[] }[],
  durability: Durability | undefined,
): Promise<[Error | null, unknown][]> {
  const groups = new Map<string, number[]>();
  calls.forEach((call, index) => {
    // The nodes serving the slot (master first), as ioredis compares them; the slot itself before the map is known.
    const slot = isCluster(redis) ? slotOf(String(call.args[0])) : 0;
    const owner = isCluster(redis) ? (redis.slots[slot]?.join(',') ?? `slot:${slot}`) : 'server';
    const members = groups.get(owner) ?? [];
    members.push(index);
    groups.set(owner, members);
  });
  const results: [Error | null, unknown][] = new Array(calls.length);
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const pipeline = redis.pipeline() as unknown as Record<string, (...args: unknown[]) => void> & ChainableCommander;
      for (const index of indexes) pipeline[calls[index].name](...calls[index].args);
      const replies = await pipeline.exec();
      await confirmReplicated(redis, String(calls[indexes[0]].args[0]), durability);
      indexes.forEach((index, i) => {
        results[index] = replies?.[i] ?? [new Error('Redis pipeline was discarded'), null];
      });
    }),
  );
  return results;
}

/**
 * Keys (or shard channels) grouped so that each group may go in one multi-key command: all of
 * them for a single server, one group per slot in a Cluster (which refuses cross-slot commands).
 */
export function sameSlotGroups(redis: Redis, keys: string[]): string[][] {
  if (!isCluster(redis)) return keys.length ? [keys] : [];
  const groups = new Map<number, string[]>();
  for (const key of keys) {
    const slot = slotOf(key);
    const group = groups.get(slot);
    if (group) group.push(key);
    else groups.set(slot, [key]);
  }
  return [...groups.values()];
}

/**
 * Runs `visit` on every master (one server: on it): what SCAN and other node-local commands need
 * in a Cluster, where a key pattern spans every node.
 */
export async function forEachMaster(redis: Redis, visit: (node: IORedis) => Promise<void>): Promise<void> {
  if (!isCluster(redis)) return visit(redis);
  await Promise.all(redis.nodes('master').map(visit));
}

/**
 * The command's promise, rejected if the connection closes first. Without re-sending, ioredis
 * drops the commands that were in flight when a connection broke and never settles them.
 */
export function settleOnClose<T>(connection: Redis, command: Promise<T>): Promise<T> {
  // A Cluster stays up while one node's connection breaks: any node closing fails the command.
  const emitters: (IORedis | Cluster)[] = isCluster(connection) ? [connection, ...connection.nodes()] : [connection];
  let onClose: (() => void) | undefined;
  const closed = new Promise<never>((_, reject) => {
    onClose = () => reject(new Error('Redis connection closed with the command in flight'));
    for (const emitter of emitters) emitter.once('close', onClose);
  });
  return Promise.race([command, closed]).finally(() => {
    for (const emitter of emitters) emitter.off('close', onClose!);
  });
}

const SLOTS = 16384;
const spreadTags = new Map<string, string>();

/** The index-th term of the base-2 van der Corput sequence: 0, 1/2, 1/4, 3/4, 1/8, ... */
function vanDerCorput(index: number): number {
  let value = 0;
  for (let bit = 0.5, rest = index; rest > 0; bit /= 2, rest >>= 1) if (rest & 1) value += bit;
  return value;
}

/**
 * A hash tag (without braces) for the index-th member of a family of keys (intake partitions,
 * job queues) that places it evenly over the slots: the slots of members 0..N-1 follow the van
 * der Corput sequence, evenly spread for every N, so a cluster with slots split evenly between M
 * masters gives each at most ceil(N/M) of them. Plain tags ({0}..{N}) hash to clustered slots.
 * The tag is `label:index` plus the first suffix that lands in the target window (deterministic).
 */
export function spreadTag(label: string, index: number): string {
  const cacheKey = `${label}:${index}`;
  const cached = spreadTags.get(cacheKey);
  if (cached) return cached;
  const window = SLOTS / 64;
  const target = Math.floor(vanDerCorput(index) * SLOTS);
  for (let suffix = 0; ; suffix++) {
    const tag = `${label}:${index}~${suffix}`;
    const slot = calculateSlot(tag);
    if (slot >= target && slot < target + window) {
      spreadTags.set(cacheKey, tag);
      return tag;
    }
  }
}

/**
 * Every Redis key of the deployment starts with one prefix (REDIS_PREFIX), so several
 * deployments (or test files) can share a Redis. Keys that must live in the same Redis
 * Cluster slot share a {hash tag}.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** Cached authentication of an API key, by the key's hash. */
  auth(apiKeyHash: string): string {
    return `${this.prefix}auth:${apiKeyHash}`;
  }

  /** A browser session, by the sha256 of its cookie value (sessions.ts). */
  session(sessionHash: string): string {
    return `${this.prefix}session:${sessionHash}`;
  }

  /** The hashes of one user's sessions, so all can be ended at once. */
  userSessions(userId: number): string {
    return `${this.prefix}user-sessions:${userId}`;
  }

  /** Pub/sub channel announcing invalidated auth-cache entries, so gateways drop their copies. */
  authInvalidations(): string {
    return `${this.prefix}auth-invalidations`;
  }

  /** The hash tag of one intake partition's keys: partitions spread evenly over a cluster's slots. */
  private intake(partition: number): string {
    return `${this.prefix}{${spreadTag('intake', partition)}}`;
  }

  /** The intake stream of one partition: committed events waiting to be fanned out. */
  intakeStream(partition: number): string {
    return `${this.intake(partition)}:stream`;
  }

  /** Who owns a partition's intake (consumer lease), in the stream's slot so reads can check it. */
  intakeLease(partition: number): string {
    return `${this.intake(partition)}:lease`;
  }

  /** The partition lease's generation counter: the fencing token of each new owner. */
  intakeGeneration(partition: number): string {
    return `${this.intake(partition)}:generation`;
  }

  /** Marks an outbox row as published, so the relay never sends it twice. */
  intakeSent(partition: number, outboxId: string): string {
    return `${this.intake(partition)}:sent:${outboxId}`;
  }

  /**
   * BullMQ's prefix for one job queue (BullMQ builds its keys as prefix:queue:...). Each queue's
   * keys share one hash tag, as BullMQ's scripts need in a Cluster, and queues spread over the slots.
   */
  bullmq(queue: JobQueueName): string {
    return `${this.prefix}{${spreadTag('bull', Object.values(JOB_QUEUES).indexOf(queue))}}`;
  }

  /** Anything else a service needs, namespaced by the service. */
  custom(...parts: (string | number)[]): string {
    return `${this.prefix}${parts.join(':')}`;
  }
}
