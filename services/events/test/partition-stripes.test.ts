// Intake partitions are striped over the live replicas (partition p to the replica of rank p
// modulo their number), so the consecutive partitions of one organisation's recipient shards
// (EVENT_RECIPIENT_SHARDS) land on different replicas: chosen at random, two of a realm's four
// shards often shared a replica and the organisation's fan-out ran at 2x of even
// (bench/fanout). Replicas join one by one, as a deployment scales up, and leave.
import crypto from 'node:crypto';
import { RedisKeys, type Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { testRedisConnection } from '@teamchat/testing';
import { Fanout } from '../src/lib/fanout';
import { IntakeConsumers } from '../src/lib/intake';
import { QueueStore } from '../src/lib/queue-store';
import { eventually } from './support/cluster';

const PARTITIONS = 8;
const SHARDS = 4;
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

test("every partition has one owner, striped by rank, so one organisation's shards spread over the replicas", async () => {
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
  /** The striped assignment for the replicas running now, each partition owned once. */
  const striped = () => {
    const ranked = [...running].sort((a, b) => (a.id < b.id ? -1 : 1));
    return ranked.every(({ intake }, rank) => {
      const expected = [...Array(PARTITIONS).keys()].filter((partition) => partition % ranked.length === rank);
      return JSON.stringify(intake.ownedPartitions()) === JSON.stringify(expected);
    });
  };
  const describe = () => running.map(({ id, intake }) => `${id}: [${intake.ownedPartitions().join(',')}]`).join(', ');
  /** Replicas holding one organisation's shard partitions (consecutive from `first`). */
  const ownersOfShards = (first: number) =>
    Array.from({ length: SHARDS }, (_, shard) => (first + shard) % PARTITIONS).map(
      (partition) => running.find(({ intake }) => intake.ownedPartitions().includes(partition))!.id,
    );

  try {
    // Scaling up one replica at a time: each step settles on the stripes of that many replicas.
    for (const id of ['replica-a', 'replica-b', 'replica-c', 'replica-d']) {
      start(id);
      await eventually(striped, describe, SETTLE_MS);
    }
    // With four replicas every organisation's four shards are on four different replicas.
    for (const first of [0, 4, 1, 6]) expect(new Set(ownersOfShards(first)).size).toBe(4);

    // A replica leaving: the three others take the stripes of three (every partition owned again).
    const leaving = running.splice(1, 1)[0];
    await leaving.intake.stop();
    await eventually(striped, describe, SETTLE_MS);

    // Down to two: each organisation's shards two and two.
    const second = running.splice(0, 1)[0];
    await second.intake.stop();
    await eventually(striped, describe, SETTLE_MS);
    expect(new Set(ownersOfShards(4)).size).toBe(2);
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
