// What every service gets at boot: configuration, PostgreSQL, Redis, the event bus, a logger.
// Tests build the same object against their own database and Redis prefix.

import { createRedis, DEFAULT_EVENT_PARTITIONS, EventBus, JobClient, type Redis } from '@teamchat/bus';
import { commonEnv, createLogger, env, loadEnv, type EnvOf, type Logger } from '@teamchat/core';
import { createDb, type Db } from '@teamchat/db';

export const baseEnvSpec = {
  ...commonEnv,
  EXTERNAL_SCHEME: env.string('scheme clients use to reach the gateway (http or https)', 'http'),
  EVENT_PARTITIONS: env.int('intake stream partitions of the event tier', DEFAULT_EVENT_PARTITIONS),
  DB_POOL_SIZE: env.int('PostgreSQL connections per process', 10),
};

export type BaseEnv = EnvOf<typeof baseEnvSpec>;

export interface BaseDeps {
  env: BaseEnv;
  db: Db;
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

export function loadBaseEnv(source: NodeJS.ProcessEnv = process.env): BaseEnv {
  return loadEnv(baseEnvSpec, source);
}

export function createBaseDeps(service: string, baseEnv: BaseEnv, options: { logger?: Logger } = {}): BaseDeps {
  const logger = options.logger ?? createLogger(service, baseEnv.LOG_LEVEL);
  const db = createDb(baseEnv.DATABASE_URL, { poolSize: baseEnv.DB_POOL_SIZE });
  const redis = createRedis(baseEnv.REDIS_URL, { name: `${service}` });
  const blocking: Redis[] = [];
  const newBlockingRedis = (name = 'blocking') => {
    const connection = createRedis(baseEnv.REDIS_URL, { blocking: true, name: `${service}:${name}` });
    blocking.push(connection);
    return connection;
  };
  const bus = new EventBus(redis, baseEnv.REDIS_PREFIX, baseEnv.EVENT_PARTITIONS);
  const jobs = new JobClient(redis, () => newBlockingRedis('jobs'), bus.keys.bullmq());
  return {
    env: baseEnv,
    db,
    redis,
    newBlockingRedis,
    bus,
    jobs,
    logger,
    async close() {
      await jobs.close();
      await Promise.all([redis, ...blocking].map((connection) => connection.quit().catch(() => connection.disconnect())));
      await db.$disconnect();
    },
  };
}
