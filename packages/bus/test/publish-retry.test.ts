// In a Redis Cluster an after-commit publish whose append fails is tried again before the
// partition's later publishes (EVENT_PUBLISH_RETRY_MS), so a master's failover cannot make an
// event reach its queues after events committed later. On a real 3+3 cluster the master of the
// partition refuses writes (maxmemory 1 byte: Redis answers OOM) and later accepts them again, or
// (REDIS_WAIT_REPLICAS) its replica stops confirming writes (SIGSTOP) and later resumes.
import { OwnRedisCluster, type RedisClusterNode } from '@teamchat/testing';
import { createRedis, EventBus, slotOf, type Durability, type IntakeEntry, type Redis } from '../src';

jest.setTimeout(120_000);

const REALM = 1;
let cluster: OwnRedisCluster;
let redis: Redis;
let run = 0;

beforeAll(async () => {
  cluster = await OwnRedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  redis = createRedis({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: cluster.seedList });
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
  await Promise.all([first, second]);
  expect(await intake()).toEqual(['1', '2']);
  expect(counted).toEqual({
    failures: 0,
    warnings: ['event publish failed; trying it again before later publishes'],
  });
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

async function replicaOf(master: RedisClusterNode): Promise<RedisClusterNode> {
  for (const node of cluster.nodes) {
    if (node === master || (await node.info('role')) !== 'slave') continue;
    if (Number(await node.info('master_port')) === master.port) return node;
  }
  throw new Error(`no replica of ${master.address}`);
}

test('with REDIS_WAIT_REPLICAS the next publish waits until the replicas hold the one before', async () => {
  const { bus, master, intake, counted } = await newBus(30_000, { replicas: 1, timeoutMs: 200 });
  const replica = await replicaOf(master);
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
  await Promise.all([first, second]);
  expect(await intake()).toEqual(['1', '2']);
  expect(counted).toEqual({
    failures: 0,
    warnings: ['event publish failed; trying it again before later publishes'],
  });
  await bus.close();
  await cluster.waitUntilHealthy();
});
