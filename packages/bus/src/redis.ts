import Redis, { type RedisOptions } from 'ioredis';

export type { Redis };

export interface RedisClientOptions {
  /** A connection BullMQ may block on (it requires maxRetriesPerRequest: null). */
  blocking?: boolean;
  /** Shown in CLIENT LIST, to tell connections apart. */
  name?: string;
  /**
   * Commands fail at once while disconnected and are never re-sent after a reconnect (ioredis
   * re-sends unanswered commands by default: a read sent before a network cut would then run
   * long after its sender lost the right to make it). The caller must treat a command in flight
   * at a disconnect as failed (ioredis then leaves its promise unsettled): see settleOnClose.
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

/**
 * A new ioredis connection. Commands issued while Redis is unreachable wait in ioredis's
 * offline queue and run on reconnect. Close every client (quit()) or the process will not exit.
 */
export function createRedis(url: string, options: RedisClientOptions = {}): Redis {
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    maxRetriesPerRequest: options.blocking ? null : 50,
    ...(options.failFast ? { enableOfflineQueue: false, autoResendUnfulfilledCommands: false } : {}),
    ...(options.autoPipelining ? { enableAutoPipelining: true } : {}),
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(50 * attempt, 2000),
  };
  const connection = new Redis(url, redisOptions);
  const logger = options.logger;
  if (logger) {
    let reported = false;
    connection.on('error', (error: Error) => {
      if (!reported) logger.warn({ err: error, connection: options.name }, 'redis connection error; reconnecting');
      reported = true;
    });
    connection.on('ready', () => (reported = false));
  }
  return connection;
}

/**
 * The command's promise, rejected if the connection closes first. Without re-sending, ioredis
 * drops the commands that were in flight when a connection broke and never settles them.
 */
export function settleOnClose<T>(connection: Redis, command: Promise<T>): Promise<T> {
  let onClose: (() => void) | undefined;
  const closed = new Promise<never>((_, reject) => {
    onClose = () => reject(new Error('Redis connection closed with the command in flight'));
    connection.once('close', onClose);
  });
  return Promise.race([command, closed]).finally(() => connection.off('close', onClose!));
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

  /** Who owns a partition's intake (consumer lease), in the stream's slot so reads can check it. */
  intakeLease(partition: number): string {
    return `${this.prefix}{intake:${partition}}:lease`;
  }

  /** The partition lease's generation counter: the fencing token of each new owner. */
  intakeGeneration(partition: number): string {
    return `${this.prefix}{intake:${partition}}:generation`;
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
