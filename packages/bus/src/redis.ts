import Redis, { type RedisOptions } from 'ioredis';

export type { Redis };

export interface RedisClientOptions {
  /** A connection BullMQ may block on (it requires maxRetriesPerRequest: null). */
  blocking?: boolean;
  /** Shown in CLIENT LIST, to tell connections apart. */
  name?: string;
}

/**
 * A new ioredis connection. Commands issued while Redis is unreachable wait in ioredis's
 * offline queue and run on reconnect. Close every client (quit()) or the process will not exit.
 */
export function createRedis(url: string, options: RedisClientOptions = {}): Redis {
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    maxRetriesPerRequest: options.blocking ? null : 50,
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(50 * attempt, 2000),
  };
  return new Redis(url, redisOptions);
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

  /** Pub/sub channel announcing invalidated auth-cache entries, so gateways drop their copies. */
  authInvalidations(): string {
    return `${this.prefix}auth-invalidations`;
  }

  /** The intake stream of one partition: committed events waiting to be fanned out. */
  intakeStream(partition: number): string {
    return `${this.prefix}{intake:${partition}}:stream`;
  }

  /** Marks an outbox row as published, so the relay never sends it twice. */
  intakeSent(partition: number, outboxId: string): string {
    return `${this.prefix}{intake:${partition}}:sent:${outboxId}`;
  }

  /** BullMQ's own prefix (BullMQ builds its keys itself). */
  bullmq(): string {
    return `${this.prefix}bull`;
  }

  /** Anything else a service needs, namespaced by the service. */
  custom(...parts: (string | number)[]): string {
    return `${this.prefix}${parts.join(':')}`;
  }
}
