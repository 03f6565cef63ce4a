// REDIS_WAIT_REPLICAS: a batch of writes counts as done only once a replica holds it. On a real
// Redis Cluster whose master for a key has its replica stopped (SIGSTOP: the link stays up, the
// replica acknowledges nothing), a durable batch fails with ReplicationError — which the services
// answer as 503, never 500 — and succeeds again once the replica runs; without durability the
// master's own answer is enough. A producer's publish is held to the same rule, also when the
// entry is already in (the relay re-publishing a row whose first publish was not confirmed).
// Against a server without replicas, every durable batch fails.
//
// In a Redis Cluster an after-commit publish whose append fails is tried again before the
// partition's later publishes (EVENT_PUBLISH_RETRY_MS), so a master's failover cannot make an
// event reach its queues after events committed later. On a real 3+3 cluster the master of the
// partition refuses writes (maxmemory 1 byte: Redis answers OOM) and later accepts them again, or
// (REDIS_WAIT_REPLICAS) its replica stops confirming writes (SIGSTOP) and later resumes.
//
// A command in flight when its connection closes is not run again on a fail-fast connection (the
// Cluster client re-sends it by default, after its caller may have moved on).
//
// A master killed under a sharded subscriber (the auth-invalidation subscriber) is reported to the
// subscriber's logger; before, ioredis's 'error' reached no listener and ended the event replica.
import { once } from 'node:events';
import { asJsonableError } from '@teamchat/core';
import IORedis from 'ioredis';
import { OwnRedisCluster, testRedisUrl, sleep, until, type RedisClusterNode } from '@teamchat/testing';
import {
  createRedis,
  crossSlotPipeline,
  duplicateRedis,
  EventBus,
  ReplicationError,
  slotOf,
  type Durability,
  type IntakeEntry,
  type Redis,
} from '../src';

jest.setTimeout(120_000);

let cluster: OwnRedisCluster;
let redis: Redis;

/** Where the private Cluster is, as a service's environment names it. */
function clusterTarget() {
  return { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: cluster.seedList };
}

beforeAll(async () => {
  cluster = await OwnRedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  redis = createRedis(clusterTarget());
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

test('a durable batch fails while the replica of its master acknowledges nothing, and succeeds once it does', async () => {
  const key = '{durability}:k';
  const replica = await cluster.replicaOf(await cluster.masterOf(slotOf(key)));
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
  const replica = await cluster.replicaOf(await cluster.masterOf(slotOf(stream)));

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

// After-commit publishes in a Cluster: tried again in the partition's order (EVENT_PUBLISH_RETRY_MS).

const REALM = 1;
let run = 0;

/** A bus with a prefix of its own (an empty intake), its partition's master, and what it counted. */
async function newBus(publishRetryMs: number, durability?: Durability) {
  const counted = { failures: 0, warnings: [] as string[] };
  const bus = new EventBus(redis, `retry${++run}:`, 4, {
    publishRetryMs,
    onPublishFailure: () => counted.failures++,
    logger: {
      warn: (_object: unknown, message?: string) => {
        counted.warnings.push(String(message));
      },
    },
    durability,
  });
  const stream = bus.keys.intakeStream(bus.partitionOf(REALM));
  const master = await cluster.masterOf(slotOf(stream));
  const intake = async () =>
    (await redis.xrange(stream, '-', '+')).map(([, fields]) => (JSON.parse(fields[1]) as IntakeEntry).outboxId);
  return { bus, master, intake, counted };
}

const entry = (outboxId: string): IntakeEntry => ({
  outboxId,
  realmId: REALM,
  event: { type: 'alert_words', alert_words: [outboxId] },
  users: [1],
});

/** Both publishes done, in order, after one warning and without leaving anything to the relay. */
async function expectPublishedInOrder({
  first,
  second,
  intake,
  counted,
}: {
  first: Promise<void>;
  second: Promise<void>;
  intake: () => Promise<(string | undefined)[]>;
  counted: { failures: number; warnings: string[] };
}): Promise<void> {
  await Promise.all([first, second]);
  expect(await intake()).toEqual(['1', '2']);
  expect(counted).toEqual({
    failures: 0,
    warnings: ['event publish failed; trying it again before later publishes'],
  });
}

async function refuseWrites(master: RedisClusterNode, refuse: boolean): Promise<void> {
  await master.cli('config', 'set', 'maxmemory', refuse ? '1' : '0');
}

test('an append refused by its master is tried again, and the publishes after it wait for it', async () => {
  const { bus, master, intake, counted } = await newBus(30_000);
  await refuseWrites(master, true);
  let first: Promise<void>, second: Promise<void>;
  try {
    first = bus.publishCommitted(entry('1'));
    second = bus.publishCommitted(entry('2'));
    await sleep(1000);
    // Still being tried: nothing appended, nothing left to the relay, the second behind the first.
    expect(await intake()).toEqual([]);
    expect(counted.failures).toBe(0);
  } finally {
    await refuseWrites(master, false);
  }
  await expectPublishedInOrder({ first, second, intake, counted });
  await bus.close();
});

test('past EVENT_PUBLISH_RETRY_MS the publishes are left to the relay, the queued ones without a wait of their own', async () => {
  const { bus, master, intake, counted } = await newBus(500);
  await refuseWrites(master, true);
  try {
    const asked = Date.now();
    await Promise.all(['1', '2', '3', '4', '5'].map((id) => bus.publishCommitted(entry(id))));
    // Each gives up 500 ms after it was asked for, not 500 ms after its turn came (which would
    // take the five at least 5 x 300 ms: the first retries end 300 ms in).
    expect(Date.now() - asked).toBeLessThan(1000);
    expect(counted.failures).toBe(5);
  } finally {
    await refuseWrites(master, false);
  }
  expect(await intake()).toEqual([]);
  await bus.publishCommitted(entry('6'));
  expect(await intake()).toEqual(['6']);
  await bus.close();
});

test('close() stops trying: the row is left to the relay', async () => {
  const { bus, master, intake, counted } = await newBus(30_000);
  await refuseWrites(master, true);
  try {
    const publishing = bus.publishCommitted(entry('1'));
    await sleep(300);
    await bus.close();
    await publishing;
    expect(counted.failures).toBe(1);
  } finally {
    await refuseWrites(master, false);
  }
  expect(await intake()).toEqual([]);
});

test('with REDIS_WAIT_REPLICAS the next publish waits until the replicas hold the one before', async () => {
  const { bus, master, intake, counted } = await newBus(30_000, { replicas: 1, timeoutMs: 200 });
  const replica = await cluster.replicaOf(master);
  replica.child!.kill('SIGSTOP');
  let first: Promise<void>, second: Promise<void>;
  try {
    first = bus.publishCommitted(entry('1'));
    second = bus.publishCommitted(entry('2'));
    await sleep(1000);
    // The first is on the master, unconfirmed, and confirmed again and again; the second waits:
    // had the master died now, its replica (promoted) would lack both, not only the first.
    expect(await intake()).toEqual(['1']);
    expect(counted.failures).toBe(0);
  } finally {
    replica.child!.kill('SIGCONT');
  }
  await expectPublishedInOrder({ first, second, intake, counted });
  await bus.close();
  await cluster.waitUntilHealthy();
});

test("a duplicate's connection errors reach its logger: a sharded subscriber outlives its master's death", async () => {
  const warnings: string[] = [];
  const subscriber = duplicateRedis(redis, 'durability-subscriber', {
    warn: (details) => warnings.push(String((details as { err?: Error }).err?.message)),
  });
  const heard: string[] = [];
  subscriber.on('smessage', (_channel: string, message: string) => heard.push(message));
  const channel = '{durability}:invalidations';
  await subscriber.ssubscribe(channel);
  const master = await cluster.masterOf(slotOf(channel));
  await master.kill();
  try {
    // The subscriber tries the dead master again while its replica takes over (node timeout 2 s).
    expect(await until(() => warnings.length > 0, 20_000)).toBe(true);
  } finally {
    await master.start();
    await cluster.waitUntilHealthy();
  }
  // Once the replica serves the channel, the subscriber hears it there.
  const heardAfterPublishing = async () => {
    await redis.spublish(channel, 'after the failover');
    return heard.length > 0;
  };
  await until(heardAfterPublishing, 20_000);
  subscriber.disconnect();
  expect(heard).toContain('after the failover');
});

test('a fail-fast connection never runs a command again after its connection closed under it', async () => {
  const name = 'durability-fail-fast';
  const failFast = createRedis(clusterTarget(), { failFast: true, name, logger: { warn: () => undefined } });
  const key = '{durability}:resent';
  try {
    if (failFast.status !== 'ready') await once(failFast, 'ready');
    const blocked = failFast.blpop(key, 10);
    const master = await cluster.masterOf(slotOf(key));
    const blocking = new RegExp(`\\bid=(\\d+)\\b[^\\n]*\\bname=${name}\\b[^\\n]*\\bcmd=blpop\\b`);
    let id: string | undefined;
    const found = async () => (id = blocking.exec(await master.cli('client', 'list'))?.[1]) !== undefined;
    expect(await until(found, 5000)).toBe(true);
    await master.cli('client', 'kill', 'id', id!);
    await expect(blocked).rejects.toThrow('Connection is closed.');
    // Re-sent, the BLPOP would be waiting again and take this item.
    await sleep(500);
    await redis.rpush(key, 'item');
    await sleep(200);
    expect(await redis.lpop(key)).toBe('item');
  } finally {
    failFast.disconnect();
    await redis.del(key);
  }
});
