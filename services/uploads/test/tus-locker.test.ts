// The tus lock shared by uploads replicas through Redis.
import crypto from 'node:crypto';
import type { Redis } from '@teamchat/bus';
import { testRedisConnection } from '@teamchat/testing';
import { ERRORS } from '@tus/utils';
import { RedisLocker } from '../src/lib/tus-redis';

describe('RedisLocker', () => {
  const prefix = `t:${crypto.randomBytes(6).toString('hex')}:tus-lock:`;
  const connections: Redis[] = [];
  const connect = () => {
    const connection = testRedisConnection();
    connections.push(connection);
    return connection;
  };
  /** One locker per simulated replica, each with its own connections. */
  const replica = (options: { ttlMs?: number; acquireTimeoutMs?: number } = {}) =>
    RedisLocker.start(connect(), connect(), { prefix, ...options });

  afterAll(async () => {
    await Promise.all(connections.map((connection) => connection.quit()));
  });

  test('a request on another replica asks the holder to let go, then gets the lock', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const held = a.newLock('upload-1');
    let releaseRequested = false;
    await held.lock(new AbortController().signal, async () => {
      releaseRequested = true;
      await held.unlock();
    });
    const waiting = b.newLock('upload-1');
    await waiting.lock(new AbortController().signal, () => {});
    expect(releaseRequested).toBe(true);
    expect(await connections[0].get(`${prefix}upload-1`)).not.toBeNull();
    await waiting.unlock();
    expect(await connections[0].get(`${prefix}upload-1`)).toBeNull();
  });

  test('a holder that does not let go makes the others time out; unlocking twice is harmless', async () => {
    const [a, b] = await Promise.all([replica(), replica({ acquireTimeoutMs: 300 })]);
    const held = a.newLock('upload-2');
    await held.lock(new AbortController().signal, () => {});
    await expect(b.newLock('upload-2').lock(new AbortController().signal, () => {})).rejects.toBe(
      ERRORS.ERR_LOCK_TIMEOUT,
    );
    await held.unlock();
    await held.unlock();
    const next = b.newLock('upload-2');
    await next.lock(new AbortController().signal, () => {});
    await next.unlock();
  });

  test('the lock of a holder that died expires', async () => {
    const b = await replica();
    // A holder whose process is gone: its lock is no longer renewed.
    await connections[0].set(`${prefix}upload-3`, 'dead-holder', 'PX', 200);
    const taken = b.newLock('upload-3');
    await taken.lock(new AbortController().signal, () => {});
    expect(await connections[0].get(`${prefix}upload-3`)).not.toBe('dead-holder');
    await taken.unlock();
  });

  test('an aborted request stops waiting', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const held = a.newLock('upload-4');
    await held.lock(new AbortController().signal, () => {});
    const abort = new AbortController();
    const waiting = b.newLock('upload-4').lock(abort.signal, () => {});
    abort.abort();
    await expect(waiting).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
    await held.unlock();
  });
});
