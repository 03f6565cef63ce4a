// What every service gets at boot: configuration, PostgreSQL, Redis, the event bus, a logger.
// Tests build the same object against their own database and Redis prefix.

import {
  createRedis,
  DEFAULT_AUTH_CACHE_TTL_SECONDS,
  DEFAULT_DEDUP_WINDOW_SECS,
  DEFAULT_PUBLISH_RETRY_MS,
  DEFAULT_EVENT_PARTITIONS,
  DEFAULT_RECIPIENT_SHARDS,
  durabilityOf,
  DEFAULT_OUTBOX_HOLD_MS,
  DEFAULT_RELAY_GRACE_MS,
  EventBus,
  JobClient,
  OUTBOX_DELETE_INTERVAL_MS,
  type Redis,
} from '@teamchat/bus';
import {
  commonEnv,
  createLogger,
  env,
  EnvError,
  isStoreUnavailable,
  loadEnv,
  type EnvOf,
  type Logger,
} from '@teamchat/core';
import { createDb, ReadRouter, type Db, type WritePositions } from '@teamchat/db';
import { setGravatarEnabled } from '@teamchat/domain';
import { eventTierMetrics } from '@teamchat/telemetry';

/** The event outbox's timings (docs/operations.md, Redis sizing): producers and the relay must agree on them. */
const eventOutboxEnvSpec = {
  EVENT_OUTBOX_HOLD_MS: env.int(
    'how long a producer keeps an outbox row it published before deleting it (until Redis has fsynced the entry)',
    DEFAULT_OUTBOX_HOLD_MS,
  ),
  EVENT_RELAY_GRACE_MS: env.int(
    'age past which the outbox relay publishes a row itself (its after-commit publish failed)',
    DEFAULT_RELAY_GRACE_MS,
  ),
  EVENT_DEDUP_WINDOW_SECS: env.int(
    'how long the intake remembers a published outbox row, so that it is not published twice',
    DEFAULT_DEDUP_WINDOW_SECS,
  ),
  EVENT_PUBLISH_RETRY_MS: env.int(
    'Redis Cluster: how long a failed after-commit publish is tried again, in order, before the relay gets it',
    DEFAULT_PUBLISH_RETRY_MS,
  ),
};

/** The API-key lookups' cache (packages/runtime/src/auth.ts). */
const authCacheEnvSpec = {
  AUTH_CACHE_TTL_SECONDS: env.int(
    "how long an API-key lookup is cached in Redis (at most 10 s of it in a process's memory), and an invalidation blocks a late lookup's write",
    DEFAULT_AUTH_CACHE_TTL_SECONDS,
  ),
};

/** The read replica (docs/operations.md, Read replica): unset, every read goes to the primary. */
const replicaEnvSpec = {
  DATABASE_REPLICA_URL: env.string('PostgreSQL streaming standby for heavy reads (empty: none)', ''),
  DATABASE_REPLICA_MAX_LAG_MS: env.int('a standby further behind the primary than this serves no read', 10_000),
  DATABASE_REPLICA_POLL_MS: env.int("how often each process samples the standby's replay position", 20),
  DATABASE_REPLICA_REGISTER_WAIT_MS: env.int(
    "how long register waits for the standby to replay the primary's position before reading the primary",
    100,
  ),
  DATABASE_REPLICA_READ_WAIT_MS: env.int(
    "how long a heavy read waits for the standby to replay its organisation's last write before reading the primary",
    50,
  ),
  DATABASE_REPLICA_POLL_TIMEOUT_MS: env.int(
    'a standby that does not answer a replay-position sample within this serves nobody until it does',
    1000,
  ),
};

export type ReplicaEnv = EnvOf<typeof replicaEnvSpec>;

export const baseEnvSpec = {
  ...commonEnv,
  EXTERNAL_SCHEME: env.string('scheme clients use to reach the gateway (http or https)', 'http'),
  ENABLE_GRAVATAR: env.bool(
    "avatars and organisation icons nobody uploaded come from Gravatar (false: the server's default avatar)",
    true,
  ),
  WEB_PUBLIC_STREAMS_ENABLED: env.bool(
    'server setting WEB_PUBLIC_STREAMS_ENABLED: whether channels may be web-public and spectators read them',
    true,
  ),
  EVENT_PARTITIONS: env.int('intake stream partitions of the event tier', DEFAULT_EVENT_PARTITIONS),
  EVENT_RECIPIENT_SHARDS: env.int(
    "intake partitions each organisation's events are split over by recipient (at most EVENT_PARTITIONS)",
    DEFAULT_RECIPIENT_SHARDS,
  ),
  DB_POOL_SIZE: env.int('PostgreSQL connections per process', 10),
  METRICS_PORT: env.int('admin port serving GET /metrics, never published (0: PORT + 1000)', 0),
  ...eventOutboxEnvSpec,
  ...replicaEnvSpec,
  ...authCacheEnvSpec,
};

export type EventOutboxEnv = EnvOf<typeof eventOutboxEnvSpec>;
type AuthCacheTtlEnv = EnvOf<typeof authCacheEnvSpec>;

/** The common settings, as tests and tools may also write them by hand: the outbox timings and the metrics port may be left to their defaults. */
export type BaseEnv = Omit<
  EnvOf<typeof baseEnvSpec>,
  | keyof EventOutboxEnv
  | keyof ReplicaEnv
  | keyof AuthCacheTtlEnv
  | 'METRICS_PORT'
  | 'ENABLE_GRAVATAR'
  | 'WEB_PUBLIC_STREAMS_ENABLED'
  | 'REDIS_CLUSTER_NODES'
  | 'EVENT_RECIPIENT_SHARDS'
  | 'REDIS_WAIT_REPLICAS'
  | 'REDIS_WAIT_TIMEOUT_MS'
> &
  Partial<EventOutboxEnv> &
  Partial<ReplicaEnv> &
  Partial<AuthCacheTtlEnv> & {
    METRICS_PORT?: number;
    ENABLE_GRAVATAR?: boolean;
    WEB_PUBLIC_STREAMS_ENABLED?: boolean;
    REDIS_CLUSTER_NODES?: string;
    EVENT_RECIPIENT_SHARDS?: number;
    REDIS_WAIT_REPLICAS?: number;
    REDIS_WAIT_TIMEOUT_MS?: number;
  };

/**
 * The relay must only see rows whose publish failed: a published row is deleted after the hold
 * plus at most one delete round, and the dedup marker must outlive the relay's grace.
 */
function checkOutboxTimings(config: EventOutboxEnv): void {
  if (config.EVENT_RELAY_GRACE_MS <= config.EVENT_OUTBOX_HOLD_MS + 2 * OUTBOX_DELETE_INTERVAL_MS) {
    throw new EnvError(
      `EVENT_RELAY_GRACE_MS must exceed EVENT_OUTBOX_HOLD_MS + ${2 * OUTBOX_DELETE_INTERVAL_MS} ms (the delete batching)`,
    );
  }
  if (config.EVENT_DEDUP_WINDOW_SECS * 1000 <= config.EVENT_RELAY_GRACE_MS) {
    throw new EnvError('EVENT_DEDUP_WINDOW_SECS must exceed EVENT_RELAY_GRACE_MS');
  }
}

/** EVENT_RECIPIENT_SHARDS, checked: a realm's shards must take distinct partitions. */
function recipientShards(config: Pick<BaseEnv, 'EVENT_PARTITIONS' | 'EVENT_RECIPIENT_SHARDS'>): number {
  const shards = config.EVENT_RECIPIENT_SHARDS ?? DEFAULT_RECIPIENT_SHARDS;
  if (shards < 1 || shards > config.EVENT_PARTITIONS)
    throw new EnvError('EVENT_RECIPIENT_SHARDS must be between 1 and EVENT_PARTITIONS');
  return shards;
}

export interface BaseDeps {
  /** The settings, defaults filled in. */
  env: BaseEnv & EventOutboxEnv & ReplicaEnv & AuthCacheTtlEnv & { WEB_PUBLIC_STREAMS_ENABLED: boolean };
  db: Db;
  /** Where heavy reads go: the standby when it has replayed the reader's last write, else `db`. */
  reads: ReadRouter;
  /** For ordinary commands; never block on it. */
  redis: Redis;
  /** A new connection that may block (BullMQ workers, pub/sub subscribers). Closed by close(). */
  newBlockingRedis(name?: string): Redis;
  bus: EventBus;
  jobs: JobClient;
  logger: Logger;
  close(): Promise<void>;
}

/** The readiness check of a service that needs PostgreSQL and Redis: both answer. */
export async function storesReachable(deps: Pick<BaseDeps, 'db' | 'redis'>): Promise<void> {
  await Promise.all([deps.db.$queryRaw`SELECT 1`, deps.redis.ping()]);
}

export function loadBaseEnv(source: NodeJS.ProcessEnv = process.env): BaseDeps['env'] {
  return loadEnv(baseEnvSpec, source);
}

export function createBaseDeps(service: string, input: BaseEnv, options: { logger?: Logger } = {}): BaseDeps {
  const baseEnv = {
    ...loadEnv(eventOutboxEnvSpec, {}),
    ...loadEnv(replicaEnvSpec, {}),
    ...loadEnv(authCacheEnvSpec, {}),
    ...input,
    WEB_PUBLIC_STREAMS_ENABLED: input.WEB_PUBLIC_STREAMS_ENABLED ?? true,
  };
  checkOutboxTimings(baseEnv);
  // The server's setting, for every avatar and icon URL this process makes.
  setGravatarEnabled(baseEnv.ENABLE_GRAVATAR ?? true);
  if (baseEnv.AUTH_CACHE_TTL_SECONDS < 1) throw new EnvError('AUTH_CACHE_TTL_SECONDS must be at least 1');
  const logger = options.logger ?? createLogger(service, baseEnv.LOG_LEVEL);
  const db = createDb(baseEnv.DATABASE_URL, { poolSize: baseEnv.DB_POOL_SIZE });
  const redis = createRedis(baseEnv, { name: `${service}`, logger });
  const blocking: Redis[] = [];
  const newBlockingRedis = (name = 'blocking') => {
    const connection = createRedis(baseEnv, { blocking: true, name: `${service}:${name}`, logger });
    blocking.push(connection);
    return connection;
  };
  const reads = createReadRouter(db, redis, baseEnv, logger);
  const bus = new EventBus(redis, baseEnv.REDIS_PREFIX, baseEnv.EVENT_PARTITIONS, {
    db,
    holdMs: baseEnv.EVENT_OUTBOX_HOLD_MS,
    dedupWindowSecs: baseEnv.EVENT_DEDUP_WINDOW_SECS,
    publishRetryMs: baseEnv.EVENT_PUBLISH_RETRY_MS,
    logger,
    onPublishFailure: () => eventTierMetrics().publishFailures.inc(),
    recipientShards: recipientShards(baseEnv),
    durability: durabilityOf(baseEnv),
    // A user who gets the event must find its write on the standby: the position first.
    ...(baseEnv.DATABASE_REPLICA_URL ? { beforePublish: (realmId: number) => reads.recordWrite(realmId) } : {}),
  });
  const jobs = new JobClient(
    redis,
    () => newBlockingRedis('jobs'),
    (queue) => bus.keys.bullmq(queue),
  );
  return {
    env: baseEnv,
    db,
    reads,
    redis,
    newBlockingRedis,
    bus,
    jobs,
    logger,
    async close() {
      await jobs.close();
      // Before the connections go: the bus finishes its publishes and deletes their outbox rows.
      await bus.close();
      await Promise.all(
        [redis, ...blocking].map((connection) => connection.quit().catch(() => connection.disconnect())),
      );
      await reads.close();
      await Promise.all([db.$disconnect(), reads.replica?.$disconnect()]);
    },
  };
}

/**
 * Keeps the higher of the stored WAL position and ARGV[1] (both "X/Y", hex halves), and renews
 * the expiry: writes of one realm finish in any order, and a position must never go back.
 */
const RECORD_HIGHER_POSITION = `
local function halves(lsn)
  local high, low = string.match(lsn, '^(%x+)/(%x+)$')
  return tonumber(high, 16), tonumber(low, 16)
end
local kept = redis.call('GET', KEYS[1])
if kept then
  local keptHigh, keptLow = halves(kept)
  local high, low = halves(ARGV[1])
  if keptHigh > high or (keptHigh == high and keptLow >= low) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

/** Each realm's last write position, `<prefix>wal:realm:<realm id>`, never lowered. */
export function realmWritePositions(redis: Redis, prefix: string): WritePositions {
  const key = (realmId: number) => `${prefix}wal:realm:${realmId}`;
  return {
    async record(realmId, lsn, ttlMs) {
      await redis.eval(RECORD_HIGHER_POSITION, 1, key(realmId), lsn, ttlMs);
    },
    lookup: (realmId) => redis.get(key(realmId)),
  };
}

/**
 * The read router of a process: with DATABASE_REPLICA_URL, a second client on the standby, and
 * each realm's last write position in Redis (`<prefix>wal:realm:<realm id>`, expiring once no
 * standby within DATABASE_REPLICA_MAX_LAG_MS can still be behind it).
 */
function createReadRouter(db: Db, redis: Redis, config: BaseEnv & ReplicaEnv, logger: Logger): ReadRouter {
  const replica = config.DATABASE_REPLICA_URL
    ? createDb(config.DATABASE_REPLICA_URL, { poolSize: config.DB_POOL_SIZE })
    : undefined;
  let unavailable = false;
  return new ReadRouter(db, {
    replica,
    pollIntervalMs: config.DATABASE_REPLICA_POLL_MS,
    pollTimeoutMs: config.DATABASE_REPLICA_POLL_TIMEOUT_MS,
    maxLagMs: config.DATABASE_REPLICA_MAX_LAG_MS,
    readWaitMs: config.DATABASE_REPLICA_READ_WAIT_MS,
    isUnavailable: isStoreUnavailable,
    positions: realmWritePositions(redis, config.REDIS_PREFIX),
    onRouted(source, reason) {
      // Once per outage: a standby that stops answering (and comes back) is worth one line each.
      if (!unavailable && (reason === 'unavailable' || reason === 'replica failed')) {
        unavailable = true;
        logger.warn({ reason }, 'read replica unavailable: reads go to the primary');
      } else if (unavailable && source === 'replica') {
        unavailable = false;
        logger.info('read replica serving reads again');
      }
    },
  });
}
