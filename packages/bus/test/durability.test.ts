// REDIS_WAIT_REPLICAS: a batch of writes counts as done only once a replica holds it. On a real
// Redis Cluster whose master for a key has its replica stopped (SIGSTOP: the link stays up, the
// replica acknowledges nothing), a durable batch fails with ReplicationError — which the services
// answer as 503, never 500 — and succeeds again once the replica runs; without durability the
// master's own answer is enough. A producer's publish is held to the same rule, also when the
// entry is already in (the relay re-publishing a row whose first publish was not confirmed).
// Against a server without replicas, every durable batch fails.
import { asJsonableError } from '@teamchat/core';
import IORedis from 'ioredis';
import { OwnRedisCluster, testRedisUrl, type RedisClusterNode } from '@teamchat/testing';
import { createRedis, crossSlotPipeline, EventBus, ReplicationError, slotOf, type Redis } from '../src';

jest.setTimeout(120_000);

let cluster: OwnRedisCluster;
let redis: Redis;

beforeAll(async () => {
  cluster = await OwnRedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  redis = createRedis({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: cluster.seedList });
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

async function replicaOf(master: RedisClusterNode): Promise<RedisClusterNode> {
  for (const node of cluster.nodes) {
    if (node === master || (await node.info('role')) !== 'slave') continue;
    if (Number(await node.info('master_port')) === master.port) return node;
  }
  throw new Error(`no replica of ${master.address}`);
}

test('a durable batch fails while the replica of its master acknowledges nothing, and succeeds once it does', async () => {
  const key = '{durability}:k';
  const replica = await replicaOf(await cluster.masterOf(slotOf(key)));
  const durability = { replicas: 1, timeoutMs: 300 };

  const healthy = await crossSlotPipeline(redis, durability).set(key, 'one').exec();
  expect(healthy).toEqual([[null, 'OK']]);

  replica.child!.kill('SIGSTOP');
  try {
    const failed = crossSlotPipeline(redis, durability).set(key, 'two').exec();
    await expect(failed).rejects.toThrow(ReplicationError);
    const error = await failed.catch((caught: unknown) => caught);
    expect(asJsonableError(error).status).toBe(503);
    // Without durability the master's answer is enough.
    expect(await crossSlotPipeline(redis).set(key, 'three').exec()).toEqual([[null, 'OK']]);
  } finally {
    replica.child!.kill('SIGCONT');
  }
  await cluster.waitUntilHealthy();
  expect(await crossSlotPipeline(redis, durability).set(key, 'four').exec()).toEqual([[null, 'OK']]);
});

test("a publish fails while its partition's replica acknowledges nothing; publishing the row again confirms it", async () => {
  const bus = new EventBus(redis, 'durability:', 4, { durability: { replicas: 1, timeoutMs: 300 } });
  const entry = { outboxId: '42', realmId: 1, event: { type: 'alert_words' as const, alert_words: [] }, users: [1] };
  const stream = bus.keys.intakeStream(bus.partitionOf(1));
  const replica = await replicaOf(await cluster.masterOf(slotOf(stream)));

  replica.child!.kill('SIGSTOP');
  try {
    await expect(bus.publishOnce(entry)).rejects.toThrow(ReplicationError);
  } finally {
    replica.child!.kill('SIGCONT');
  }
  await cluster.waitUntilHealthy();
  // The entry is on the master already: no second copy, and this time its replica confirmed it.
  expect(await bus.publishOnce(entry)).toBe(false);
  expect(await redis.xlen(stream)).toBe(1);
  const onReplica = new IORedis(replica.port, '127.0.0.1');
  try {
    await onReplica.readonly();
    expect(await onReplica.xlen(stream)).toBe(1);
  } finally {
    onReplica.disconnect();
  }
});

test('against a server without replicas every durable batch fails: the check is real', async () => {
  const single = createRedis(testRedisUrl());
  try {
    const batch = crossSlotPipeline(single, { replicas: 1, timeoutMs: 50 }).set('durability-test:k', 'v');
    await expect(batch.exec()).rejects.toThrow(
      'Redis write not confirmed by its replicas: 0 of 1 replicas within 50 ms',
    );
  } finally {
    single.disconnect();
  }
});
