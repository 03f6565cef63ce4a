// Live replicas converge on the partition assignment every replica computes from the registry
// (assignPartitions: rendezvous hashing with bounded loads), each partition owned once, as
// replicas join one by one, as a deployment scales up, and leave. (The striped assignment this
// replaced spread an organisation's consecutive recipient-shard partitions over replicas, but
// moved most partitions at every change of the replica count: partition-assignment.test.ts.)
import crypto from 'node:crypto';
import { RedisKeys, type Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { testRedisConnection, waitFor } from '@teamchat/testing';
import { Fanout } from '../src/lib/fanout';
import { assignPartitions, IntakeConsumers } from '../src/lib/intake';
import { QueueStore } from '../src/lib/queue-store';

const PARTITIONS = 8;
// The default lease: its rounds (a third of it) must fit on a busy shared machine, where a 600 ms
// lease was lost between renewals and the replicas never settled.
const LEASE_MS = 3000;
const SETTLE_MS = 20 * LEASE_MS;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
});
afterAll(() => stack.close());

const silent = createLogger('stripes-test', (process.env.STRIPES_LOG as 'warn') ?? 'silent');

interface Running {
  id: string;
  intake: IntakeConsumers;
}

test('every partition has one owner, the one the registry of live replicas assigns it, as replicas join and leave', async () => {
  const keys = new RedisKeys(`stripes-${crypto.randomBytes(4).toString('hex')}:`);
  const store = new QueueStore(stack.redis, stack.deps.env.REDIS_PREFIX, {
    maxEvents: 1000,
    parkAllowanceMs: 10_000,
    indexMarginMs: 60_000,
  });
  const connections: Redis[] = [];
  const running: Running[] = [];
  const start = (id: string) => {
    const intake = new IntakeConsumers(
      stack.redis,
      () => {
        const connection = testRedisConnection({ failFast: true });
        // Disconnected at the end under a consumer finishing its last read.
        connection.on('error', () => undefined);
        connections.push(connection);
        return connection;
      },
      new Fanout(store, stack.db, silent),
      {
        replicaId: id,
        partitions: PARTITIONS,
        leaseMs: LEASE_MS,
        batchSize: 10,
        trimIntervalMs: 60_000,
        keys,
      },
      silent,
    );
    intake.start();
    running.push({ id, intake });
  };
  /** The computed assignment for the replicas running now: each partition owned once, by its owner. */
  const assigned = () => {
    const owners = assignPartitions(
      PARTITIONS,
      running.map(({ id }) => id),
    );
    return running.every(
      ({ id, intake }) =>
        JSON.stringify(intake.ownedPartitions()) ===
        JSON.stringify([...owners.keys()].filter((partition) => owners[partition] === id)),
    );
  };
  const describe = () => running.map(({ id, intake }) => `${id}: [${intake.ownedPartitions().join(',')}]`).join(', ');
  try {
    // Scaling up one replica at a time: each step settles on that many replicas' assignment.
    for (const id of ['replica-a', 'replica-b', 'replica-c', 'replica-d']) {
      start(id);
      await waitFor(assigned, { what: describe, timeoutMs: SETTLE_MS });
    }
    // A replica leaving: the three others take its partitions (every partition owned again).
    const leaving = running.splice(1, 1)[0];
    await leaving.intake.stop();
    await waitFor(assigned, { what: describe, timeoutMs: SETTLE_MS });

    // Down to two.
    const second = running.splice(0, 1)[0];
    await second.intake.stop();
    await waitFor(assigned, { what: describe, timeoutMs: SETTLE_MS });
  } finally {
    await Promise.all(running.map(({ intake }) => intake.stop()));
    for (const connection of connections) connection.disconnect();
    const partitionKeys = [...Array(PARTITIONS).keys()].flatMap((partition) => [
      keys.intakeStream(partition),
      keys.intakeLease(partition),
      keys.intakeGeneration(partition),
    ]);
    for (const key of [...partitionKeys, keys.custom('events', 'replicas')]) await stack.redis.del(key);
  }
});
