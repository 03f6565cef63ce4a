// The read replica (DATABASE_REPLICA_URL) with a real streaming standby and every service as its
// own process behind the gateway: heavy reads are served by the standby, a writer reads its own
// writes even while the standby's replay is paused, register stays exact with its event queue
// (also when the standby's snapshot has a transaction in progress), and a standby outage sends
// reads to the primary without an error answer, and back to the standby once it returns.

import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb, Prisma, transaction, UseThePrimary, type Db } from '@teamchat/db';
import { createBaseDeps } from '@teamchat/runtime';
import { EventQueue, testRedisUrl, type ReceivedEvent } from '@teamchat/testing';
import { ProcessCluster, type ClusterUser } from '../faults/support/cluster';
import { createParticipants } from '../faults/support/workload';
import { parseSnapshot } from '../../services/events/src/lib/snapshot';
import { completeStandbySnapshot, exportedInProgress } from '../../services/events/src/lib/standby-snapshot';
import { StreamingReplica } from './support/streaming-replica';

jest.setTimeout(180_000);

/** The register action's first statement: pg_stat_statements on the standby counts the registers it served. */
const REGISTER_SNAPSHOT_STATEMENT = 'pg_is_in_recovery() AS standby';

const database = `replica_${crypto.randomBytes(4).toString('hex')}`;
let replica: StreamingReplica;
let cluster: ProcessCluster;
let writer: ClusterUser;
let reader: ClusterUser;
let channelName: string;
let streamId: number;

beforeAll(async () => {
  replica = await StreamingReplica.start(database);
  cluster = await ProcessCluster.start({
    databaseUrl: replica.primaryUrl(database),
    redisUrl: testRedisUrl(),
    eventReplicas: 1,
    env: {
      DATABASE_REPLICA_URL: replica.standbyUrl(database),
      // Horizons far past this file's run: a paused standby keeps serving those who did not write.
      DATABASE_REPLICA_MAX_LAG_MS: '600000',
      DATABASE_REPLICA_REGISTER_WAIT_MS: '10000',
    },
  });
  let users: ClusterUser[];
  ({ users, channelName } = await createParticipants(cluster, 'replicated', 2));
  [writer, reader] = users;
  const stream = await cluster.deps.db.stream.findFirstOrThrow({ where: { name: channelName } });
  streamId = stream.id;
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  await replica?.stop();
});

async function ok(response: Promise<{ status: number; body: any }>): Promise<any> {
  const { status, body } = await response;
  if (status !== 200) throw new Error(`answered ${status}: ${JSON.stringify(body)}`);
  return body;
}

async function fullNameSeenBy(user: ClusterUser, subject: ClusterUser): Promise<string> {
  const { members } = await ok(user.client.get('/api/v1/users'));
  return members.find((member: { user_id: number }) => member.user_id === subject.id).full_name;
}

async function channelMessagesSeenBy(user: ClusterUser): Promise<string[]> {
  const body = await ok(
    user.client.get('/api/v1/messages', {
      anchor: 'newest',
      num_before: 100,
      num_after: 0,
      narrow: [{ operator: 'channel', operand: channelName }],
      apply_markdown: false,
    }),
  );
  return body.messages.map((message: { content: string }) => message.content);
}

async function topicsSeenBy(user: ClusterUser): Promise<string[]> {
  const { topics } = await ok(user.client.get(`/api/v1/users/me/${streamId}/topics`));
  return topics.map((topic: { name: string }) => topic.name);
}

async function send(user: ClusterUser, topic: string, content: string): Promise<number> {
  const body = await ok(user.client.post('/api/v1/messages', { type: 'stream', to: channelName, topic, content }));
  return body.id;
}

async function rename(user: ClusterUser, fullName: string): Promise<void> {
  await ok(user.client.patch('/api/v1/settings', { full_name: fullName }));
}

/** Polls `queue` until an event `isLast` accepts arrived; everything received, in order. */
async function eventsUntil(queue: EventQueue, isLast: (event: ReceivedEvent) => boolean): Promise<ReceivedEvent[]> {
  const received: ReceivedEvent[] = [];
  while (!received.some(isLast)) received.push(...(await queue.next(1, 30_000)));
  return received;
}

const isMessage = (id: number) => (event: ReceivedEvent) => event.type === 'message' && event.message.id === id;

test('reads of those who did not write are served by the paused standby; the writer reads its own writes', async () => {
  await replica.caughtUp(database);
  const oldName = await fullNameSeenBy(reader, writer);
  await replica.pauseReplay(database);
  try {
    // The writer: each read right after its write shows it (served by the primary).
    await rename(writer, 'Renamed While Paused');
    expect(await fullNameSeenBy(writer, writer)).toBe('Renamed While Paused');
    await send(writer, 'paused topic', 'sent while paused');
    expect(await channelMessagesSeenBy(writer)).toContain('sent while paused');
    expect(await topicsSeenBy(writer)).toContain('paused topic');

    // The reader: the same reads show the standby's older state, which only the standby still has.
    expect(await fullNameSeenBy(reader, writer)).toBe(oldName);
    expect(await channelMessagesSeenBy(reader)).not.toContain('sent while paused');
    expect(await topicsSeenBy(reader)).not.toContain('paused topic');
    const [primary] = await replica.query<{ full_name: string }>(
      'primary',
      database,
      'SELECT full_name FROM user_profile WHERE id = $1',
      [writer.id],
    );
    expect(primary.full_name).toBe('Renamed While Paused');
  } finally {
    await replica.resumeReplay(database);
  }

  // Replay resumed: the reader's reads, still on the standby, show the change.
  await replica.caughtUp(database);
  expect(await fullNameSeenBy(reader, writer)).toBe('Renamed While Paused');
  expect(await channelMessagesSeenBy(reader)).toContain('sent while paused');
  expect(await topicsSeenBy(reader)).toContain('paused topic');
});

test('register while replay is paused is read on the primary: a message committed before it arrives exactly once', async () => {
  await replica.caughtUp(database);
  await replica.pauseReplay(database);
  try {
    const servedBefore = await replica.standbyCalls(database, REGISTER_SNAPSHOT_STATEMENT);
    const messageId = await send(writer, 'register', 'committed before the register');
    await rename(writer, 'Renamed Before Register');
    const queue = await EventQueue.register(reader.client);
    // The standby has not replayed what the primary had when the queue was made: the primary served it.
    expect(await replica.standbyCalls(database, REGISTER_SNAPSHOT_STATEMENT)).toBe(servedBefore);
    const state = queue.registration;
    const writerInState = state.realm_users.find((user: { user_id: number }) => user.user_id === writer.id);
    expect(writerInState.full_name).toBe('Renamed Before Register');
    const unreadInState = state.unread_msgs.streams.some((entry: { unread_message_ids: number[] }) =>
      entry.unread_message_ids.includes(messageId),
    );

    const markerId = await send(writer, 'register', 'marker after the register');
    const events = await eventsUntil(queue, isMessage(markerId));
    const deliveries = events.filter(isMessage(messageId)).length;
    // Exactly once: in the state (its unread entry) or in the queue, never both, never neither.
    expect(deliveries + (unreadInState ? 1 : 0)).toBe(1);
    expect(events.filter((event) => event.type === 'realm_user' && event.person.user_id === writer.id)).toEqual([]);
    await queue.delete();
  } finally {
    await replica.resumeReplay(database);
  }
});

test('register served by the standby while a transaction is in progress there: its event arrives exactly once', async () => {
  await replica.caughtUp(database);
  const heldName = 'Renamed In A Held Transaction';
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let heldXid!: (xid: string) => void;
  const xidKnown = new Promise<string>((resolve) => (heldXid = resolve));
  const held = transaction(
    cluster.deps.db,
    async (tx) => {
      await tx.db.userProfile.update({ where: { id: writer.id }, data: { full_name: heldName } });
      await cluster.deps.bus.sendEventOnCommit(
        tx,
        cluster.realm.id,
        { type: 'realm_user', op: 'update', person: { user_id: writer.id, full_name: heldName } },
        [reader.id],
      );
      const [{ xid }] = await tx.db.$queryRaw<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
      heldXid(xid);
      await gate;
    },
    { timeout: 120_000 },
  );
  try {
    const xid = await xidKnown;
    // A later transaction commits: the standby replays it and knows the held one as running.
    await send(writer, 'held', 'committed after the held transaction began');
    await replica.caughtUp(database);

    // What the standby's own pg_current_snapshot() says: the held xid is not listed as running,
    // so a check against it would call the held transaction committed (the primary does not).
    const visibleIn = async (server: 'primary' | 'standby') =>
      (
        await replica.query<{ visible: boolean }>(
          server,
          database,
          'SELECT pg_visible_in_snapshot($1::xid8, pg_current_snapshot()) AS visible',
          [xid],
        )
      )[0].visible;
    expect(await visibleIn('primary')).toBe(false);
    expect(await visibleIn('standby')).toBe(true);

    const servedBefore = await replica.standbyCalls(database, REGISTER_SNAPSHOT_STATEMENT);
    const queue = await EventQueue.register(reader.client);
    expect(await replica.standbyCalls(database, REGISTER_SNAPSHOT_STATEMENT)).toBe(servedBefore + 1);
    const writerInState = queue.registration.realm_users.find(
      (user: { user_id: number }) => user.user_id === writer.id,
    );
    expect(writerInState.full_name).not.toBe(heldName);

    release();
    await held;
    const markerId = await send(writer, 'held', 'marker after the held transaction');
    const events = await eventsUntil(queue, isMessage(markerId));
    const renames = events.filter((event) => event.type === 'realm_user' && event.person.full_name === heldName);
    expect(renames).toHaveLength(1);
    await queue.delete();
  } finally {
    release();
    await held.catch(() => undefined);
  }
});

test('a killed standby: reads go to the primary without an error, and back to the standby once it returns', async () => {
  await replica.caughtUp(database);
  replica.killStandby();
  while (!replica.standbyStopped()) await sleep(50);

  await rename(writer, 'Renamed During The Outage');
  const messageId = await send(writer, 'outage', 'sent during the outage');
  // Every heavy read of the reader answers, from the primary (it shows what only the primary has).
  expect(await fullNameSeenBy(reader, writer)).toBe('Renamed During The Outage');
  expect(await channelMessagesSeenBy(reader)).toContain('sent during the outage');
  expect(await topicsSeenBy(reader)).toContain('outage');
  const queue = await EventQueue.register(reader.client);
  expect(queue.registration.max_message_id).toBeGreaterThanOrEqual(messageId);
  await queue.delete();

  replica.startServer('standby');
  await replica.caughtUp(database);
  await replica.pauseReplay(database);
  try {
    await rename(writer, 'Renamed After The Outage');
    // Once the processes see the standby again, the reader's reads are served there (the old name):
    // polled until then, as each process finds it back on its next sample of the replay position.
    const deadline = Date.now() + 30_000;
    let seen = await fullNameSeenBy(reader, writer);
    while (seen !== 'Renamed During The Outage' && Date.now() < deadline) {
      await sleep(100);
      seen = await fullNameSeenBy(reader, writer);
    }
    expect(seen).toBe('Renamed During The Outage');
    expect(await fullNameSeenBy(writer, writer)).toBe('Renamed After The Outage');
  } finally {
    await replica.resumeReplay(database);
  }
});

test('a standby further behind than DATABASE_REPLICA_MAX_LAG_MS serves nobody until it catches up', async () => {
  const maxLagMs = 1500;
  const deps = createBaseDeps('replica-lag-test', {
    DATABASE_URL: replica.primaryUrl(database),
    DATABASE_REPLICA_URL: replica.standbyUrl(database),
    DATABASE_REPLICA_MAX_LAG_MS: maxLagMs,
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: cluster.redisPrefix,
    INTERNAL_JWT_SECRET: cluster.secret,
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    EXTERNAL_SCHEME: 'http',
    EVENT_PARTITIONS: 4,
    DB_POOL_SIZE: 2,
  });
  const sourceFor = async (user: ClusterUser) => (await deps.reads.forUser(user.id)).source;
  /** Polls the router until `source` is its choice for `user` (each process samples the standby on its own clock). */
  const until = async (user: ClusterUser, source: 'primary' | 'replica') => {
    const deadline = Date.now() + 30_000;
    while ((await sourceFor(user)) !== source && Date.now() < deadline) await sleep(50);
    return sourceFor(user);
  };
  try {
    await replica.caughtUp(database);
    expect(await until(reader, 'replica')).toBe('replica');
    await replica.pauseReplay(database);
    try {
      await rename(writer, 'Renamed Past The Lag Horizon');
      // Past the horizon (three times over), the paused standby serves nobody, not even those who did not write.
      await sleep(3 * maxLagMs);
      expect(await sourceFor(reader)).toBe('primary');
      expect(deps.reads.replicaUsable).toBe(false);
    } finally {
      await replica.resumeReplay(database);
    }
    await replica.caughtUp(database);
    expect(await until(reader, 'replica')).toBe('replica');
  } finally {
    await deps.close();
  }
});

test('the standby snapshot lists a running xid from its exported form; without the right to read it, UseThePrimary (register then runs on the primary)', async () => {
  await replica.query('primary', database, 'DROP ROLE IF EXISTS plain_reader');
  await replica.query('primary', database, 'CREATE ROLE plain_reader LOGIN');
  await replica.query('primary', database, 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO plain_reader');
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let heldXid!: (xid: string) => void;
  const xidKnown = new Promise<string>((resolve) => (heldXid = resolve));
  const held = transaction(
    cluster.deps.db,
    async (tx) => {
      const [{ xid }] = await tx.db.$queryRaw<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
      heldXid(xid);
      await gate;
    },
    { timeout: 120_000 },
  );
  const superuser = createDb(replica.standbyUrl(database), { poolSize: 1 });
  const plain = createDb(replica.standbyUrl(database).replace('postgres@', 'plain_reader@'), { poolSize: 1 });
  try {
    const xid = await xidKnown;
    await send(writer, 'held', 'committed while a transaction holds an xid');
    await replica.caughtUp(database);
    const snapshotOn = (db: Db) =>
      db.$transaction(
        async (tx) => {
          const [row] = await tx.$queryRaw<{ snapshot: string }[]>`SELECT pg_current_snapshot()::text AS snapshot`;
          const printed = parseSnapshot(row.snapshot);
          return { printed, complete: await completeStandbySnapshot(tx, printed) };
        },
        { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead },
      );
    const { printed, complete } = await snapshotOn(superuser);
    expect(printed.xip).not.toContain(xid);
    expect(BigInt(printed.xmin) <= BigInt(xid) && BigInt(xid) < BigInt(printed.xmax)).toBe(true);
    expect(complete.xip).toContain(xid);
    await expect(snapshotOn(plain)).rejects.toBeInstanceOf(UseThePrimary);
  } finally {
    release();
    await held;
    await Promise.all([superuser.$disconnect(), plain.$disconnect()]);
  }
});

test('exported snapshot lines: xip and sxp listed, an overflowed list refused', () => {
  expect(exportedInProgress('vxid:2/8\nxmin:728\nxmax:730\nxcnt:0\nsof:0\nsxcnt:1\nsxp:728\nrec:1\n')).toEqual([728]);
  expect(exportedInProgress('xmin:5\nxmax:9\nxcnt:1\nxip:6\nsof:0\nsxcnt:1\nsxp:7\n')).toEqual([6, 7]);
  expect(exportedInProgress('xmin:5\nxmax:9\nxcnt:0\nsof:1\nsxcnt:0\nrec:1\n')).toBeNull();
});
