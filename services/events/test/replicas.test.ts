// The event tier as N interchangeable processes (the built bundle) against one Redis and one
// database, behind a load balancer and the gateway: any replica answers any queue; every
// event reaches every matching queue exactly once, in order, through kill -9, SIGTERM and
// Redis reconnects.
import { createLogger } from '@teamchat/core';
import { EventBus } from '@teamchat/bus';
import { transaction } from '@teamchat/db';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { sleep, testRedisConnection, testRedisServers, waitFor } from '@teamchat/testing';
import IORedis from 'ioredis';
import { Fanout, type StreamEntry } from '../src/lib/fanout';
import { INTAKE_GROUP } from '../src/lib/intake';
import { QueueStore } from '../src/lib/queue-store';
import { EventCluster, PollingClient } from './support/cluster';
import { alertWords, commitEvent, sendAlternating, sendTransient } from './support/producers';

let stack: Stack;
let cluster: EventCluster | undefined;
let clients: PollingClient[] = [];

beforeAll(async () => {
  stack = await startStack();
});
afterEach(async () => {
  await Promise.all(clients.map((client) => client.stop()));
  clients = [];
  await cluster?.stop();
  cluster = undefined;
});
afterAll(() => stack.close());

const FAST_HEARTBEAT = { EVENTS_HEARTBEAT_MIN_MS: '1000', EVENTS_HEARTBEAT_JITTER_MS: '200' };

interface Subscriber {
  user: TestUser;
  queues: PollingClient[];
}

/** Users with two queues each, registered on different replicas, polled round robin. */
async function subscribers(count: number): Promise<Subscriber[]> {
  const out: Subscriber[] = [];
  for (let i = 0; i < count; i++) {
    const user = await stack.createUser();
    const queues: PollingClient[] = [];
    for (let q = 0; q < 2; q++) {
      const registered = await cluster!
        .client(user, q % cluster!.replicas.length)
        .post('/api/v1/register', { event_types: ['alert_words'], fetch_event_types: [] });
      expect(registered.status).toBe(200);
      queues.push(
        new PollingClient(cluster!.client(user), registered.body.queue_id, registered.body.last_event_id).start(),
      );
    }
    clients.push(...queues);
    out.push({ user, queues });
  }
  return out;
}

/**
 * Sends `count` events, each to a varying subset of the users, alternating committed
 * (outbox) and transient ones; returns what each user must receive, in order.
 */
async function produce(
  users: TestUser[],
  count: number,
  options: { from?: number; pauseMs?: number; during?: (sent: number) => Promise<void> } = {},
) {
  const expected = new Map<number, string[]>(users.map((user) => [user.id, []]));
  const from = options.from ?? 0;
  for (let n = from; n < from + count; n++) {
    const recipients = users.filter((_, i) => (n + i) % 3 !== 0);
    const word = `event-${n}`;
    await sendAlternating(
      stack,
      n,
      word,
      recipients.map((user) => user.id),
    );
    for (const user of recipients) expected.get(user.id)!.push(word);
    await options.during?.(n - from + 1);
    if (options.pauseMs) await sleep(options.pauseMs);
  }
  return expected;
}

async function expectExactlyOnceInOrder(subs: Subscriber[], expected: Map<number, string[]>): Promise<void> {
  const words = (client: PollingClient) => client.received.map((event) => event.alert_words[0] as string);
  await waitFor(
    () =>
      subs.every(({ user, queues }) => queues.every((queue) => queue.received.length >= expected.get(user.id)!.length)),
    {
      what: () =>
        subs
          .map(({ user, queues }) => {
            const wanted = expected.get(user.id)!;
            return `${user.id}: ${queues
              .map((q) => {
                const got = new Set(words(q));
                const missing = wanted.filter((word) => !got.has(word));
                return `${q.received.length}/${wanted.length} missing [${missing.slice(0, 5).join(', ')}] ${q.failures.slice(-3).join('; ')}`;
              })
              .join(' | ')}`;
          })
          .join('\n'),
      timeoutMs: 60_000,
    },
  );
  for (const { user, queues } of subs) {
    for (const queue of queues) {
      expect(words(queue)).toEqual(expected.get(user.id));
      const ids = queue.received.map((event) => event.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(queue.failures.filter((failure) => failure.includes('BAD_EVENT_QUEUE_ID'))).toEqual([]);
    }
  }
}

function realmPartition(): number {
  return stack.realm.id % stack.deps.env.EVENT_PARTITIONS;
}

test('any replica answers any queue', async () => {
  cluster = await EventCluster.start(stack, 3, FAST_HEARTBEAT);
  const user = await stack.createUser();
  const { body } = await cluster
    .client(user, 0)
    .post('/api/v1/register', { event_types: ['alert_words'], fetch_event_types: [] });
  await commitEvent(stack, alertWords(['hello']), [user.id]);
  // A blocking poll on replica 1 gets it; replica 2 still has it (not acknowledged yet).
  const onOne = await cluster.client(user, 1).get('/api/v1/events', { queue_id: body.queue_id, last_event_id: -1 });
  expect(onOne.body.events).toEqual([{ id: 0, type: 'alert_words', alert_words: ['hello'] }]);
  const onTwo = await cluster
    .client(user, 2)
    .get('/api/v1/events', { queue_id: body.queue_id, last_event_id: -1, dont_block: true });
  expect(onTwo.body.events).toEqual(onOne.body.events);
  // A poll parked on replica 2 is finished by a newer poll on replica 0.
  const parkedOnTwo = cluster.client(user, 2).get('/api/v1/events', { queue_id: body.queue_id, last_event_id: 0 });
  await sleep(200);
  const onZero = cluster.client(user, 0).get('/api/v1/events', { queue_id: body.queue_id, last_event_id: 0 });
  expect((await parkedOnTwo).body.events).toEqual([]);
  await sendTransient(stack, alertWords(['again']), [user.id]);
  expect((await onZero).body.events).toEqual([{ id: 1, type: 'alert_words', alert_words: ['again'] }]);
});

test('every event reaches every matching queue exactly once, in order', async () => {
  cluster = await EventCluster.start(stack, 3, FAST_HEARTBEAT);
  const subs = await subscribers(4);
  const expected = await produce(
    subs.map((s) => s.user),
    150,
  );
  await expectExactlyOnceInOrder(subs, expected);
});

test('kill -9 of replicas while events flow loses and duplicates nothing', async () => {
  cluster = await EventCluster.start(stack, 3, FAST_HEARTBEAT);
  const subs = await subscribers(3);
  const expected = await produce(
    subs.map((s) => s.user),
    240,
    {
      pauseMs: 5,
      during: async (sent) => {
        if (sent === 60 || sent === 150) {
          // The replica fanning out this realm's events dies mid-stream; another takes over.
          const owner =
            (await cluster!.partitionOwner(realmPartition())) ?? cluster!.replicas.find((replica) => replica.alive)!;
          owner.kill('SIGKILL');
          await owner.exited;
          // The replacement may own the partition before it is ready (it takes its stripe at
          // once) and be the owner killed next: its start then fails, as it should.
          void cluster!.startReplica().catch(() => undefined);
        }
      },
    },
  );
  await expectExactlyOnceInOrder(subs, expected);
}, 120_000);

test('a replica killed after appending but before acknowledging: the next owner adds nothing twice', async () => {
  cluster = await EventCluster.start(stack, 1, FAST_HEARTBEAT);
  const subs = await subscribers(2);
  const users = subs.map((s) => s.user);
  const before = await produce(users, 10);
  await expectExactlyOnceInOrder(subs, before);
  cluster.replicas[0].kill('SIGKILL');
  await cluster.replicas[0].exited;

  // Now this process plays a replica that reads the next entries, appends them to the
  // queues and dies before XACK: they stay pending under its name.
  const after = await produce(users, 10, { from: 10 });
  const { deps } = stack;
  const stream = deps.bus.keys.intakeStream(realmPartition());
  const zombie = testRedisConnection();
  try {
    const reply = (await zombie.xreadgroup('GROUP', INTAKE_GROUP, 'zombie', 'COUNT', 100, 'STREAMS', stream, '>')) as [
      string,
      [string, string[]][],
    ][];
    const entries: StreamEntry[] = reply[0][1].map(([id, fields]) => ({ id, entry: JSON.parse(fields[1]) }));
    expect(entries).toHaveLength(10);
    const store = new QueueStore(zombie, deps.env.REDIS_PREFIX, {
      maxEvents: 10_000,
      parkAllowanceMs: 10_000,
      indexMarginMs: 60_000,
    });
    await new Fanout(store, stack.db, createLogger('zombie', 'silent')).apply(entries);
    const [, pending] = (await zombie.xpending(stream, INTAKE_GROUP)) as [number, string];
    expect(pending).toBeTruthy();
  } finally {
    zombie.disconnect();
  }

  await cluster.startReplica();
  // The new owner claims and re-applies the zombie's entries, then acknowledges them.
  const deadline = Date.now() + 30_000;
  while (Number(((await stack.redis.xpending(stream, INTAKE_GROUP)) as [number])[0]) !== 0) {
    if (Date.now() > deadline) throw new Error('the zombie entries were never claimed');
    await sleep(50);
  }
  // One more event after the re-application: a duplicate would have reached the queues before it.
  const fence = await produce(users, 1, { from: 20 });
  const all = new Map(
    [...before].map(([userId, words]) => [userId, [...words, ...after.get(userId)!, ...fence.get(userId)!]]),
  );
  await expectExactlyOnceInOrder(subs, all);
});

test('SIGTERM answers parked polls at once with no events, exits 0, and clients carry on elsewhere', async () => {
  // Heartbeats far away: an answer can only come from the shutdown.
  cluster = await EventCluster.start(stack, 2, { EVENTS_HEARTBEAT_MIN_MS: '40000', EVENTS_HEARTBEAT_JITTER_MS: '0' });
  const users = [await stack.createUser(), await stack.createUser()];
  const queues = [];
  for (const user of users) {
    const { body } = await cluster
      .client(user, 0)
      .post('/api/v1/register', { event_types: ['alert_words'], fetch_event_types: [] });
    queues.push({ user, queueId: body.queue_id as string });
  }
  const parked = queues.map(({ user, queueId }) =>
    cluster!.client(user, 0).get('/api/v1/events', { queue_id: queueId, last_event_id: -1 }),
  );
  await sleep(300);
  const stopping = cluster.replicas[0];
  stopping.kill('SIGTERM');
  const answers = await Promise.all(parked);
  for (const [i, answer] of answers.entries()) {
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ result: 'success', msg: '', events: [], queue_id: queues[i].queueId });
  }
  expect(await stopping.exited).toEqual({ code: 0, signal: null });

  // Same queues, same last_event_id, on the remaining replica.
  const repolls = queues.map(({ user, queueId }) =>
    cluster!.client(user).get('/api/v1/events', { queue_id: queueId, last_event_id: -1 }),
  );
  await commitEvent(
    stack,
    alertWords(['after the restart']),
    users.map((user) => user.id),
  );
  for (const answer of await Promise.all(repolls)) {
    expect(answer.status).toBe(200);
    expect(answer.body.events).toEqual([{ id: 0, type: 'alert_words', alert_words: ['after the restart'] }]);
  }
});

test('Redis connections dropping while events flow lose nothing', async () => {
  cluster = await EventCluster.start(stack, 2, FAST_HEARTBEAT);
  const subs = await subscribers(3);
  const admin = testRedisConnection();
  // On every server (each node of a Cluster): the id the producer's connection has there.
  const producerConnections = new Map(
    await Promise.all(
      testRedisServers(stack.redis).map(
        async ({ address, server }) => [address, Number(await server.client('ID'))] as const,
      ),
    ),
  );
  const killConnections = async () => {
    let killed = 0;
    for (const { address, server: node } of testRedisServers(admin)) {
      const list = (await node.client('LIST')) as string;
      const ids = list
        .split('\n')
        .map((line) => ({ id: /\bid=(\d+)/.exec(line)?.[1], name: /\bname=(\S*)/.exec(line)?.[1] ?? '' }))
        .filter(
          ({ id, name }) =>
            id &&
            (cluster!.replicas.some((replica) => name.startsWith(`events:${replica.replicaId}:`)) ||
              Number(id) === producerConnections.get(address)),
        )
        .map(({ id }) => id!);
      for (const id of ids) await node.client('KILL', 'ID', id).catch(() => undefined);
      killed += ids.length;
    }
    return killed;
  };
  try {
    let killed = 0;
    const expected = await produce(
      subs.map((s) => s.user),
      200,
      {
        pauseMs: 3,
        during: async (sent) => {
          if (sent % 50 === 25) killed += await killConnections();
        },
      },
    );
    expect(killed).toBeGreaterThan(0);
    await expectExactlyOnceInOrder(subs, expected).catch((error: unknown) => {
      // What the replicas logged (warnings and errors), to tell where the events stopped.
      for (const replica of cluster!.replicas) console.log(`${replica.replicaId}:\n${replica.output.slice(-6000)}`);
      throw error;
    });
  } finally {
    admin.disconnect();
  }
  // Longer than expectExactlyOnceInOrder's own 60 s: a stall then fails there, saying which queue lacks what.
}, 120_000);

test('an event whose after-commit publish failed is relayed from the outbox', async () => {
  cluster = await EventCluster.start(stack, 2, FAST_HEARTBEAT);
  const subs = await subscribers(1);
  // A producer whose Redis is unreachable: the row commits, the publish fails.
  const unreachable = new IORedis('redis://127.0.0.1:9', {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  unreachable.on('error', () => undefined);
  let publishFailed = false;
  const deadBus = new EventBus(unreachable, stack.deps.env.REDIS_PREFIX, stack.deps.env.EVENT_PARTITIONS, {
    onPublishFailure: () => {
      publishFailed = true;
    },
  });
  await transaction(stack.db, (tx) =>
    deadBus.sendEventOnCommit(tx, stack.realm.id, alertWords(['relayed']), [subs[0].user.id]),
  );
  expect(publishFailed).toBe(true);
  await expectExactlyOnceInOrder(subs, new Map([[subs[0].user.id, ['relayed']]]));
  unreachable.disconnect();
});
