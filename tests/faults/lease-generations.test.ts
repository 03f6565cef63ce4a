// A partition's generation (the fencing token of its lease) counts only once Redis's replicas
// hold it (REDIS_WAIT_REPLICAS): a failover to a replica that missed the INCR would give the next
// owner the same generation again, two owners with one token, and the fences could not tell
// them apart. Here a real primary and replica; the replica stops answering (DEBUG SLEEP), so no
// increment is confirmed, and the replica must not act as owner until one is.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRedis, RedisKeys, type Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { Fanout } from '../../services/events/src/lib/fanout';
import { IntakeConsumers } from '../../services/events/src/lib/intake';
import { QueueStore } from '../../services/events/src/lib/queue-store';
import { OwnRedis } from './support/instances';

const PARTITIONS = 4;
const LEASE_MS = 1000;
const STALL_MS = 6000;

let stack: Stack;
let primary: OwnRedis;
let replica: OwnRedis;
beforeAll(async () => {
  stack = await startStack({ services: [] });
  primary = await OwnRedis.start({ persistent: false });
  replica = await OwnRedis.start({ persistent: false });
  replica.cli('REPLICAOF', '127.0.0.1', String(primary.port));
  const deadline = Date.now() + 30_000;
  while (!replica.cli('INFO', 'replication').includes('master_link_status:up')) {
    if (Date.now() > deadline) throw new Error('the replica did not connect to its primary');
    await sleep(100);
  }
});
afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
  await stack?.close();
});

const silent = createLogger('lease-generations-test', (process.env.LEASES_LOG as 'warn') ?? 'silent');

test('an owner does not act on a generation its replicas have not confirmed', async () => {
  const keys = new RedisKeys(`generations-${crypto.randomBytes(3).toString('hex')}:`);
  const shared = createRedis(primary.url, { name: 'intake-shared' });
  const connections: Redis[] = [shared];
  const store = new QueueStore(shared, keys.prefix, { maxEvents: 100, parkAllowanceMs: 1000, indexMarginMs: 1000 });
  const intake = new IntakeConsumers(
    shared,
    (name) => {
      const connection = createRedis(primary.url, { name, failFast: true });
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    },
    new Fanout(store, stack.db, silent),
    {
      replicaId: 'replica-a',
      partitions: PARTITIONS,
      leaseMs: LEASE_MS,
      batchSize: 10,
      trimIntervalMs: 60_000,
      keys,
      durability: { replicas: 1, timeoutMs: 200 },
    },
    silent,
  );
  try {
    // The replica stops acknowledging replication: WAIT on the primary finds no replica.
    const stalled = replica.stall(STALL_MS);
    await sleep(200);
    intake.start();
    // Several lease rounds, each taking a generation the replica does not hold: none is acted on.
    const ownedWhileStalled = new Set<number>();
    const until = Date.now() + STALL_MS - 1500;
    while (Date.now() < until) {
      for (const partition of intake.ownedPartitions()) ownedWhileStalled.add(partition);
      await sleep(20);
    }
    expect([...ownedWhileStalled]).toEqual([]);
    // Generations were taken (and given back) meanwhile: the acquisitions did run.
    expect(Number(await shared.get(keys.intakeGeneration(0)))).toBeGreaterThan(0);

    // Once the replica answers again, generations are confirmed and the partitions owned, each
    // with a generation the replica holds.
    await stalled;
    const deadline = Date.now() + 30_000;
    while (intake.ownedPartitions().length < PARTITIONS) {
      if (Date.now() > deadline) throw new Error(`owns only ${intake.ownedPartitions().join(',')}`);
      await sleep(50);
    }
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const lease = await shared.get(keys.intakeLease(partition));
      const generation = Number(lease!.split('/')[1]);
      expect(Number(replica.cli('GET', keys.intakeGeneration(partition)))).toBeGreaterThanOrEqual(generation);
    }
  } finally {
    await intake.stop();
    for (const connection of connections) connection.disconnect();
  }
});
