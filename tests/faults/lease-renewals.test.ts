// A replica whose shared Redis connection is busy (held here: a balancing round waiting on Redis,
// a slow trim, a flood of commands) must still renew its partition leases: renewals have a
// connection of their own and go out in one pipeline. Before, they waited behind the shared
// connection, the leases expired under consumers still reading, and each came back under a new
// generation (a handover, its fan-out paused) although the replica never stopped.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRedis, RedisKeys, type Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { TcpProxy } from '@teamchat/testing';
import { Fanout } from '../../services/events/src/lib/fanout';
import { IntakeConsumers } from '../../services/events/src/lib/intake';
import { QueueStore } from '../../services/events/src/lib/queue-store';
import { OwnRedis } from './support/instances';

const PARTITIONS = 16;
const LEASE_MS = 1500;

let stack: Stack;
let redis: OwnRedis;
let proxy: TcpProxy;
beforeAll(async () => {
  // The database for the fan-out (no entry is published here); the intake runs on a private Redis.
  stack = await startStack({ services: [] });
  redis = await OwnRedis.start({ persistent: false });
  proxy = await new TcpProxy(() => redis.port).listen();
});
afterAll(async () => {
  await proxy?.close();
  await redis?.stop();
  await stack?.close();
});

const silent = createLogger('lease-renewals-test', (process.env.LEASES_LOG as 'warn') ?? 'silent');

test('leases are renewed while the shared connection is held for several leases', async () => {
  const keys = new RedisKeys(`renewals-${crypto.randomBytes(3).toString('hex')}:`);
  const direct = createRedis(redis.url, { name: 'test-direct' });
  // The replica's shared connection (registry, acquisitions, trims) goes through the proxy.
  const shared = createRedis(proxy.url, { name: 'intake-shared' });
  const connections: Redis[] = [direct, shared];
  const store = new QueueStore(direct, keys.prefix, { maxEvents: 100, parkAllowanceMs: 1000, indexMarginMs: 1000 });
  const intake = new IntakeConsumers(
    shared,
    (name) => {
      const connection = createRedis(redis.url, { name, failFast: true });
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    },
    new Fanout(store, stack.db, silent),
    { replicaId: 'replica-a', partitions: PARTITIONS, leaseMs: LEASE_MS, batchSize: 10, trimIntervalMs: 60_000, keys },
    silent,
  );
  const generations = async () =>
    Promise.all([...Array(PARTITIONS).keys()].map((partition) => direct.get(keys.intakeGeneration(partition))));
  try {
    intake.start();
    const deadline = Date.now() + 60_000;
    while (intake.ownedPartitions().length < PARTITIONS) {
      if (Date.now() > deadline) throw new Error(`owns only ${intake.ownedPartitions().join(',')}`);
      await sleep(50);
    }
    const before = await generations();
    // Four leases without a reply on the shared connection.
    await proxy.hold(4 * LEASE_MS);
    await sleep(2 * LEASE_MS);
    // Every lease kept throughout: still the first generation of each partition, still owned.
    expect(await generations()).toEqual(before);
    expect(intake.ownedPartitions()).toEqual([...Array(PARTITIONS).keys()]);
  } finally {
    await intake.stop();
    for (const connection of connections) connection.disconnect();
  }
});
