// What the worker's tests share: the worker as a process of its own (so a test can kill -9 it),
// against an in-process stack's database, Redis prefix and messages service.
import type { Stack } from '@teamchat/stack';
import { startServiceProcess, testRedisTarget, type ServiceProcess } from '@teamchat/testing';

/** The worker process on `port`, with `env` added (its own settings: timings, bouncer, email). */
export function startWorkerProcess(stack: Stack, port: number, env: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> {
  const stackEnv = stack.deps.env;
  return startServiceProcess('worker', {
    PATH: process.env.PATH,
    DATABASE_URL: stackEnv.DATABASE_URL,
    ...(stackEnv.DATABASE_REPLICA_URL ? { DATABASE_REPLICA_URL: stackEnv.DATABASE_REPLICA_URL } : {}),
    ...testRedisTarget(),
    REDIS_PREFIX: stackEnv.REDIS_PREFIX,
    INTERNAL_JWT_SECRET: stackEnv.INTERNAL_JWT_SECRET,
    EVENT_PARTITIONS: String(stackEnv.EVENT_PARTITIONS),
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'info',
    DB_POOL_SIZE: '4',
    MESSAGES_URL: stack.serviceUrls.messages!,
    // A killed worker's jobs are taken over within about three seconds.
    WORKER_JOB_LOCK_MS: '2000',
    WORKER_STALLED_CHECK_MS: '1000',
    ...env,
  });
}
