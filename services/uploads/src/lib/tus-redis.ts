// What resumable uploads share between uploads replicas, in Redis: the per-upload lock (a
// resumed PATCH may reach another replica than the stalled one still holding the upload) and
// the S3 store's metadata cache (bounded by a TTL, so abandoned uploads do not pile up).

import crypto from 'node:crypto';
import type { Redis } from '@teamchat/bus';
import { ERRORS, type KvStore, type Lock, type Locker, type RequestRelease } from '@tus/utils';

const RELEASE_IF_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
const EXTEND_IF_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

export interface RedisLockerOptions {
  /** Key prefix of the locks; the release channel is derived from it. */
  prefix: string;
  /** A lock not renewed for this long is free (its holder died). */
  ttlMs?: number;
  /** How long to wait for a held lock before failing the request. */
  acquireTimeoutMs?: number;
  retryDelayMs?: number;
}

/**
 * A tus Locker across processes: SET NX PX with a token, renewed while held. A request that
 * finds the lock taken publishes a release request; the holder's replica hears it and asks its
 * request to finish (tus's requestRelease), as tus's in-memory locker does within one process.
 */
export class RedisLocker implements Locker {
  readonly ttlMs: number;
  readonly acquireTimeoutMs: number;
  readonly retryDelayMs: number;
  /** The release callbacks of the locks this process holds, by upload id. */
  readonly held = new Map<string, RequestRelease>();
  private readonly channel: string;

  private constructor(
    readonly redis: Redis,
    private readonly options: RedisLockerOptions,
  ) {
    this.ttlMs = options.ttlMs ?? 15_000;
    this.acquireTimeoutMs = options.acquireTimeoutMs ?? 30_000;
    this.retryDelayMs = options.retryDelayMs ?? 50;
    this.channel = `${options.prefix}release`;
  }

  /** `subscriber` becomes a pub/sub connection: give it no other work. */
  static async start(redis: Redis, subscriber: Redis, options: RedisLockerOptions): Promise<RedisLocker> {
    const locker = new RedisLocker(redis, options);
    subscriber.on('message', (channel: string, id: string) => {
      if (channel === locker.channel) void locker.held.get(id)?.();
    });
    await subscriber.subscribe(locker.channel);
    return locker;
  }

  key(id: string): string {
    return `${this.options.prefix}${id}`;
  }

  requestRelease(id: string): Promise<number> {
    return this.redis.publish(this.channel, id);
  }

  newLock(id: string): Lock {
    return new RedisLock(this, id);
  }
}

class RedisLock implements Lock {
  private readonly token = crypto.randomBytes(12).toString('hex');
  private renewal: NodeJS.Timeout | undefined;

  constructor(
    private readonly locker: RedisLocker,
    private readonly id: string,
  ) {}

  async lock(stopSignal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const { redis } = this.locker;
    const deadline = Date.now() + this.locker.acquireTimeoutMs;
    for (;;) {
      if (stopSignal.aborted) throw ERRORS.ERR_LOCK_TIMEOUT;
      const acquired = await redis.set(this.locker.key(this.id), this.token, 'PX', this.locker.ttlMs, 'NX');
      if (acquired) break;
      await this.locker.requestRelease(this.id);
      if (Date.now() >= deadline) throw ERRORS.ERR_LOCK_TIMEOUT;
      await new Promise((resolve) => setTimeout(resolve, this.locker.retryDelayMs));
    }
    this.locker.held.set(this.id, requestRelease);
    this.renewal = setInterval(
      () => {
        redis.eval(EXTEND_IF_OWNER, 1, this.locker.key(this.id), this.token, this.locker.ttlMs).then(
          (extended) => {
            // Lost (expired while this process stalled): let the request go.
            if (extended === 0) void requestRelease();
          },
          () => {},
        );
      },
      Math.floor(this.locker.ttlMs / 3),
    );
    this.renewal.unref();
  }

  async unlock(): Promise<void> {
    clearInterval(this.renewal);
    this.locker.held.delete(this.id);
    await this.locker.redis.eval(RELEASE_IF_OWNER, 1, this.locker.key(this.id), this.token);
  }
}

/** A KvStore in Redis whose entries expire: tus's S3 store caches upload metadata in it. */
export class ExpiringRedisKvStore<T> implements KvStore<T> {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlSeconds: number,
  ) {}

  async get(key: string): Promise<T | undefined> {
    const raw = await this.redis.get(this.prefix + key);
    return raw === null ? undefined : (JSON.parse(raw) as T);
  }

  async set(key: string, value: T): Promise<void> {
    await this.redis.set(this.prefix + key, JSON.stringify(value), 'EX', this.ttlSeconds);
  }

  async delete(key: string): Promise<void> {
    await this.redis.del(this.prefix + key);
  }
}
