// Leases with fencing tokens (docs/adr/0004, docs/events.md "Leases and fencing"): a replica that
// lost its partition lease — paused, cut off, or with a command delayed in the network — can
// neither take entries from the intake stream nor write into queues once a newer owner exists; and
// stopping never waits on Redis.
import { once } from 'node:events';
import net from 'node:net';
import crypto from 'node:crypto';
import { createRedis, RedisKeys, type Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, testRedisConnection, sleep } from '@teamchat/testing';
import { eventTierMetrics } from '@teamchat/telemetry';
import { Fanout, FencedError, type StreamEntry } from '../src/lib/fanout';
import { FencedStream, INTAKE_GROUP, IntakeConsumers } from '../src/lib/intake';
import { QueueStore } from '../src/lib/queue-store';
import { alertWords } from './support/producers';

let stack: Stack;
let redis: Redis;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  redis = testRedisConnection({ failFast: true });
  await once(redis, 'ready');
});
afterAll(async () => {
  redis.disconnect();
  await stack.close();
});

const silent = createLogger('fencing-test', 'silent');

function streamKeys() {
  const tag = `${stack.deps.env.REDIS_PREFIX}{fencing:${crypto.randomBytes(4).toString('hex')}}`;
  return { stream: `${tag}:stream`, lease: `${tag}:lease` };
}

async function add(stream: string, word: string): Promise<string> {
  return (await redis.xadd(
    stream,
    '*',
    'e',
    JSON.stringify({ realmId: 1, event: alertWords([word]), users: [] }),
  )) as string;
}

/** A new intake stream with its group, and its reader as consumer a holding lease generation 1. */
async function streamOwnedByA() {
  const keys = streamKeys();
  await redis.set(keys.lease, 'a/1');
  const owner = new FencedStream(redis, keys, 'a', { generation: 1, value: 'a/1' }, 0);
  await owner.ensureGroup();
  return { keys, owner };
}

/** How many entries of the stream the intake group has delivered and not had acknowledged. */
async function pendingEntries(stream: string): Promise<number> {
  return ((await redis.xpending(stream, INTAKE_GROUP)) as [number])[0];
}

test("a former owner's read, claim and acknowledgement are refused once the lease changed hands", async () => {
  const { keys, owner } = await streamOwnedByA();
  const first = await add(keys.stream, 'one');
  const read = await owner.read(10, []);
  expect('entries' in read && read.entries.map(([id]) => id)).toEqual([first]);

  // The lease passes to b (a paused past it); a's next read would have taken entry two.
  await redis.set(keys.lease, 'b/2');
  const second = await add(keys.stream, 'two');
  const readsFenced = async () => (await eventTierMetrics().readsFenced.get()).values[0]?.value ?? 0;
  const fencedBefore = await readsFenced();
  await expect(owner.read(10, [first])).rejects.toBeInstanceOf(FencedError);
  await expect(owner.claim('0-0', 10)).rejects.toBeInstanceOf(FencedError);
  await expect(owner.ack([first])).rejects.toBeInstanceOf(FencedError);
  expect((await readsFenced()) - fencedBefore).toBe(3);

  // Nothing changed in the group: entry one is still pending (under a), entry two never delivered.
  const [pendingCount, , , consumers] = (await redis.xpending(keys.stream, INTAKE_GROUP)) as [
    number,
    string,
    string,
    [string, string][],
  ];
  expect(pendingCount).toBe(1);
  expect(consumers).toEqual([['a', '1']]);

  // The new owner claims entry one, then reads entry two: every entry once, in order.
  const successor = new FencedStream(redis, keys, 'b', { generation: 2, value: 'b/2' }, 0);
  const claimed = await successor.claim('0-0', 10);
  expect(claimed.entries.map(([id]) => id)).toEqual([first]);
  const next = await successor.read(10, [first]);
  expect('entries' in next && next.entries.map(([id]) => id)).toEqual([second]);
  const idle = await successor.read(10, [second]);
  expect(idle).toEqual({ newest: second });
  expect(await pendingEntries(keys.stream)).toBe(0);
});

test('a queue refuses appends from an older lease generation than one that already wrote to it', async () => {
  const user = await stack.createUser();
  const queue = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  const store = new QueueStore(stack.redis, stack.deps.env.REDIS_PREFIX, {
    maxEvents: 1000,
    parkAllowanceMs: 10_000,
    indexMarginMs: 60_000,
  });
  const fanout = new Fanout(store, stack.db, silent);
  const entry = (id: string, word: string): StreamEntry => ({
    id,
    entry: { realmId: stack.realm.id, event: alertWords([word]), users: [user.id] },
  });
  const partition = stack.realm.id % stack.deps.bus.partitions;

  await fanout.apply([entry('100-0', 'from-generation-5')], { partition, generation: 5 });
  const appendsFenced = async () => (await eventTierMetrics().appendsFenced.get()).values[0]?.value ?? 0;
  const fencedBefore = await appendsFenced();
  // Generation 4 (the previous owner, acting late) is refused, even for a newer entry.
  await expect(
    fanout.apply([entry('101-0', 'from-generation-4')], { partition, generation: 4 }),
  ).rejects.toBeInstanceOf(FencedError);
  expect((await appendsFenced()) - fencedBefore).toBe(1);
  // The current owner and its successors still append.
  await fanout.apply([entry('102-0', 'from-generation-5-again')], { partition, generation: 5 });
  await fanout.apply([entry('103-0', 'from-generation-6')], { partition, generation: 6 });
  await expect(
    fanout.apply([entry('104-0', 'from-generation-5-late')], { partition, generation: 5 }),
  ).rejects.toBeInstanceOf(FencedError);

  const events = await queue.poll({ dontBlock: true });
  expect(events.map((event) => (event.alert_words as string[])[0])).toEqual([
    'from-generation-5',
    'from-generation-5-again',
    'from-generation-6',
  ]);
});

test('stopping the intake never waits on a Redis that does not answer', async () => {
  // A Redis that accepts connections and never answers (a half-open network path).
  const sockets = new Set<net.Socket>();
  const blackHole = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const url = `redis://127.0.0.1:${(blackHole.address() as net.AddressInfo).port}`;
  const connections: Redis[] = [];
  const connect = (options: { failFast?: boolean }) => {
    const connection = createRedis(url, options);
    connection.on('error', () => undefined);
    connections.push(connection);
    return connection;
  };
  const leaseMs = 600;
  const commands = connect({});
  const store = new QueueStore(commands, 'blackhole:', { maxEvents: 10, parkAllowanceMs: 1000, indexMarginMs: 1000 });
  const intake = new IntakeConsumers(
    commands,
    () => connect({ failFast: true }),
    new Fanout(store, stack.db, silent),
    {
      replicaId: 'stuck',
      partitions: 2,
      leaseMs,
      batchSize: 10,
      trimIntervalMs: 100,
      keys: new RedisKeys('blackhole:'),
    },
    silent,
  );
  intake.start();
  await sleep(300);
  const started = Date.now();
  await intake.stop();
  // Its bound is a lease plus a second; the lease round it waited on never answers.
  expect(Date.now() - started).toBeLessThan(leaseMs + 1000 + 500);
  for (const connection of connections) connection.disconnect();
  for (const socket of sockets) socket.destroy();
  blackHole.close();
});

test('a read takes nothing new while an entry is pending: the pending one is claimed first', async () => {
  const { keys, owner } = await streamOwnedByA();
  const first = await add(keys.stream, 'one');
  const second = await add(keys.stream, 'two');
  // A read of a's that ran after a stopped waiting for it (a command re-sent by the client).
  await redis.xreadgroup('GROUP', INTAKE_GROUP, 'a', 'COUNT', 1, 'STREAMS', keys.stream, '>');
  expect(await owner.read(10, [])).toEqual({ unapplied: true });
  expect(await pendingEntries(keys.stream)).toBe(1);
  expect((await owner.claim('0-0', 10)).entries.map(([id]) => id)).toEqual([first]);
  const next = await owner.read(10, [first]);
  expect('entries' in next && next.entries.map(([id]) => id)).toEqual([second]);
});

test('an entry read but never applied by the owner reaches its queue before the entries after it', async () => {
  // Zulip clients see events in order; a queue takes an entry only if it is newer than the last
  // it took. A read the owner gave up on (its connection closed) may still run in Redis, later:
  // the entry it took is pending, and the owner's next read must not overtake it.
  const user = await stack.createUser();
  const queue = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  const keys = new RedisKeys(`reclaim-${crypto.randomBytes(4).toString('hex')}:`);
  const stream = keys.intakeStream(0);
  const store = new QueueStore(stack.redis, stack.deps.env.REDIS_PREFIX, {
    maxEvents: 1000,
    parkAllowanceMs: 10_000,
    indexMarginMs: 60_000,
  });
  const connections: Redis[] = [];
  const intake = new IntakeConsumers(
    stack.redis,
    () => {
      const connection = testRedisConnection({ failFast: true });
      connections.push(connection);
      return connection;
    },
    new Fanout(store, stack.db, silent),
    {
      replicaId: 'owner',
      partitions: 1,
      leaseMs: 1000,
      batchSize: 10,
      trimIntervalMs: 60_000,
      keys,
    },
    silent,
  );
  intake.start();
  try {
    const entry = (word: string) =>
      JSON.stringify({ realmId: stack.realm.id, event: alertWords([word]), users: [user.id] });
    // The owner is reading: a normal entry arrives.
    await redis.xadd(stream, '*', 'e', entry('read-normally'));
    expect((await queue.next(1)).map((event) => (event.alert_words as string[])[0])).toEqual(['read-normally']);

    // The owner's own read, run late, takes the next entry atomically with its append; one more follows.
    await redis
      .multi()
      .xadd(stream, '*', 'e', entry('stranded'))
      .xreadgroup('GROUP', INTAKE_GROUP, 'owner', 'COUNT', 1, 'STREAMS', stream, '>')
      .xadd(stream, '*', 'e', entry('after'))
      .exec();
    const words = (await queue.next(2, 8000)).map((event) => (event.alert_words as string[])[0]);
    expect(words).toEqual(['stranded', 'after']);
    expect(await pendingEntries(stream)).toBe(0);
  } finally {
    await intake.stop();
    for (const connection of connections) connection.disconnect();
    await redis.del(stream, keys.intakeLease(0), keys.intakeGeneration(0));
    await redis.del(keys.custom('events', 'replicas'));
  }
});
