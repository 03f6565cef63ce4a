// The read replica (DATABASE_REPLICA_URL) with a real streaming standby and every service as its
// own process behind the gateway: heavy reads are served by the standby, every user of an
// organisation reads each write of it answered before (the writer's own, and another's whose
// event they were shown) even while the standby's replay is paused, register stays exact with its
// event queue (also when the standby's snapshot has a transaction in progress), and a standby
// outage (killed, or frozen with SIGSTOP) sends reads to the primary without an error answer,
// and back to the standby once it returns.

import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Role } from '@teamchat/domain';
import { createDb, Prisma, transaction, UseThePrimary, type Db } from '@teamchat/db';
import { createBaseDeps, realmWritePositions, type BaseEnv } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import {
  ApiClient,
  EventQueue,
  sendMessage,
  StreamingReplica,
  testRedisUrl,
  type ReceivedEvent,
} from '@teamchat/testing';
import { ProcessCluster, type ClusterUser } from '../faults/support/cluster';
import { createParticipants } from '../faults/support/workload';
import { parseSnapshot } from '../../services/events/src/lib/snapshot';
import { completeStandbySnapshot, exportedInProgress } from '../../services/events/src/lib/standby-snapshot';

jest.setTimeout(180_000);

/** The register action's first statement: pg_stat_statements on the standby counts the registers it served. */
const REGISTER_SNAPSHOT_STATEMENT = 'pg_is_in_recovery() AS standby';

const database = `replica_${crypto.randomBytes(4).toString('hex')}`;
let replica: StreamingReplica;
let cluster: ProcessCluster;
let writer: ClusterUser;
let reader: ClusterUser;
/** A user of another organisation on the same servers: no write of the test's organisation holds their reads back. */
let outsider: ClusterUser;
let channelName: string;
let streamId: number;

beforeAll(async () => {
  replica = await StreamingReplica.start();
  await replica.createDatabase(database);
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
  const host = `elsewhere.${new URL(cluster.gatewayUrl).host}`;
  const elsewhere = await doCreateRealm(cluster.deps.db, { stringId: 'elsewhere', name: 'Elsewhere', host });
  const { user, apiKey } = await doCreateUser(cluster.deps, elsewhere, {
    email: 'outsider@elsewhere.example.com',
    fullName: 'Outsider',
    role: Role.MEMBER,
  });
  await cluster.deps.reads.recordWrite(elsewhere.id);
  outsider = {
    id: user.id,
    email: user.delivery_email,
    apiKey,
    client: new ApiClient(cluster.gatewayUrl, { email: user.delivery_email, apiKey }).withHost(host),
  };
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

function send(user: ClusterUser, topic: string, content: string): Promise<number> {
  return sendMessage(user, { type: 'stream', to: channelName, topic, content });
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

/** A process's own router (as every service process has one), on the test's servers with `env`'s timings. */
function routerProcess(env: Partial<BaseEnv> = {}) {
  return createBaseDeps('replica-test', {
    DATABASE_URL: replica.primaryUrl(database),
    DATABASE_REPLICA_URL: replica.standbyUrl(database),
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: cluster.redisPrefix,
    INTERNAL_JWT_SECRET: cluster.secret,
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    EXTERNAL_SCHEME: 'http',
    EVENT_PARTITIONS: 4,
    DB_POOL_SIZE: 2,
    ...env,
  });
}

type RouterProcess = ReturnType<typeof routerProcess>;

const sourceFor = async (process: RouterProcess) => (await process.reads.forRealm(cluster.realm.id)).source;

/** Polls the router until `source` is its choice for the organisation (each process samples the standby on its own clock). */
async function until(process: RouterProcess, source: 'primary' | 'replica'): Promise<string> {
  const deadline = Date.now() + 30_000;
  while ((await sourceFor(process)) !== source && Date.now() < deadline) await sleep(50);
  return sourceFor(process);
}

test('replay paused: every user of the organisation reads the writes answered before (from the primary); another organisation is served by the standby', async () => {
  await replica.caughtUp(database);
  await replica.pauseReplay(database);
  try {
    // A change in the other organisation written straight to the primary, recorded as nobody's write:
    // only the standby still has the old name, so reading it proves who served the read.
    await replica.query('primary', database, 'UPDATE user_profile SET full_name = $1 WHERE id = $2', [
      'Outsider Renamed Unrecorded',
      outsider.id,
    ]);

    await rename(writer, 'Renamed While Paused');
    const messageId = await send(writer, 'paused topic', 'sent while paused');
    for (const user of [writer, reader]) {
      expect(await fullNameSeenBy(user, writer)).toBe('Renamed While Paused');
      expect(await channelMessagesSeenBy(user)).toContain('sent while paused');
      expect(await topicsSeenBy(user)).toContain('paused topic');
    }
    const queue = await EventQueue.register(reader.client);
    expect(queue.registration.max_message_id).toBeGreaterThanOrEqual(messageId);
    await queue.delete();

    expect(await fullNameSeenBy(outsider, outsider)).toBe('Outsider');
  } finally {
    await replica.resumeReplay(database);
  }
  await replica.caughtUp(database);
  expect(await fullNameSeenBy(outsider, outsider)).toBe('Outsider Renamed Unrecorded');
});

test("a message another user's event queue delivered is in that user's GET /messages around it, with replay paused", async () => {
  await replica.caughtUp(database);
  const queue = await EventQueue.register(reader.client);
  await replica.pauseReplay(database);
  try {
    const messageId = await send(writer, 'seen through an event', 'fetched right after its event');
    await eventsUntil(queue, isMessage(messageId));
    const body = await ok(
      reader.client.get('/api/v1/messages', {
        anchor: messageId,
        num_before: 5,
        num_after: 5,
        narrow: [{ operator: 'channel', operand: channelName }],
        apply_markdown: false,
      }),
    );
    expect(body.messages.map((message: { id: number }) => message.id)).toContain(messageId);
    expect(await topicsSeenBy(reader)).toContain('seen through an event');
  } finally {
    await replica.resumeReplay(database);
    await queue.delete();
  }
});

test("a read waits for the standby to replay its organisation's last write (DATABASE_REPLICA_READ_WAIT_MS), then is served there", async () => {
  const process = routerProcess({ DATABASE_REPLICA_READ_WAIT_MS: 600_000 });
  try {
    await replica.caughtUp(database);
    expect(await until(process, 'replica')).toBe('replica');
    await replica.pauseReplay(database);
    let resumed = false;
    let waiting: Promise<{ source: string; resumed: boolean }>;
    try {
      await rename(writer, 'Renamed While A Read Waits');
      waiting = process.reads.forRealm(cluster.realm.id).then(({ source }) => ({ source, resumed }));
      // Long enough for the read to have looked the position up: it finds it not replayed and waits.
      await sleep(500);
    } finally {
      resumed = true;
      await replica.resumeReplay(database);
    }
    expect(await waiting).toEqual({ source: 'replica', resumed: true });
  } finally {
    await process.close();
  }
});

test("the realm's recorded position only ever rises (writes finish in any order)", async () => {
  const positions = realmWritePositions(cluster.deps.redis, `${cluster.redisPrefix}monotonic:`);
  const kept = async (lsn: string) => {
    await positions.record(1, lsn, 60_000);
    return positions.lookup(1);
  };
  expect(await kept('1/20')).toBe('1/20');
  expect(await kept('0/FFFFFFFF')).toBe('1/20');
  expect(await kept('1/1F')).toBe('1/20');
  expect(await kept('1/21')).toBe('1/21');
  expect(await kept('A/0')).toBe('A/0');
  expect(await kept('9/FFFFFFFF')).toBe('A/0');
  expect(await cluster.deps.redis.pttl(`${cluster.redisPrefix}monotonic:wal:realm:1`)).toBeGreaterThan(0);
});

test('a frozen standby (SIGSTOP of its postmaster and backends): reads, in flight or new, are answered by the primary; the standby serves again once thawed', async () => {
  const process = routerProcess({ DATABASE_REPLICA_POLL_TIMEOUT_MS: 500 });
  try {
    await replica.caughtUp(database);
    const name = await fullNameSeenBy(reader, writer);
    expect(await until(process, 'replica')).toBe('replica');
    replica.freezeStandby();
    try {
      // Nothing written since the standby caught up: the first of these go to the standby, which
      // never answers; each is given up when its process's poll times out, and read on the primary.
      const read = process.reads.readFor(cluster.realm.id, async (db, source) => {
        await db.$queryRaw`SELECT 1`;
        return source;
      });
      expect(await fullNameSeenBy(reader, writer)).toBe(name);
      expect(await channelMessagesSeenBy(reader)).toContain('sent while paused');
      expect(await topicsSeenBy(reader)).toContain('paused topic');
      const queue = await EventQueue.register(reader.client);
      await queue.delete();
      expect(await read).toBe('primary');
      expect(process.reads.replicaUsable).toBe(false);
    } finally {
      replica.thawStandby();
    }
    expect(await until(process, 'replica')).toBe('replica');
  } finally {
    await process.close();
  }
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
  const outsiderName = await fullNameSeenBy(outsider, outsider);
  await replica.pauseReplay(database);
  try {
    // Written straight to the primary and recorded as nobody's write: only the standby still has the old name.
    await replica.query('primary', database, 'UPDATE user_profile SET full_name = $1 WHERE id = $2', [
      'Outsider After The Outage',
      outsider.id,
    ]);
    // Once the processes see the standby again, the outsider's reads are served there (the old name):
    // polled until then, as each process finds it back on its next sample of the replay position.
    const deadline = Date.now() + 30_000;
    let seen = await fullNameSeenBy(outsider, outsider);
    while (seen !== outsiderName && Date.now() < deadline) {
      await sleep(100);
      seen = await fullNameSeenBy(outsider, outsider);
    }
    expect(seen).toBe(outsiderName);
    await rename(writer, 'Renamed After The Outage');
    expect(await fullNameSeenBy(reader, writer)).toBe('Renamed After The Outage');
  } finally {
    await replica.resumeReplay(database);
  }
});

test('a standby further behind than DATABASE_REPLICA_MAX_LAG_MS serves nobody until it catches up', async () => {
  const maxLagMs = 1500;
  const process = routerProcess({ DATABASE_REPLICA_MAX_LAG_MS: maxLagMs });
  try {
    await replica.caughtUp(database);
    expect(await until(process, 'replica')).toBe('replica');
    await replica.pauseReplay(database);
    try {
      // A write of another organisation: this one's reads are held back by nothing but the lag.
      await rename(outsider, 'Renamed Past The Lag Horizon');
      // Past the horizon (three times over), the paused standby serves nobody.
      await sleep(3 * maxLagMs);
      expect(await sourceFor(process)).toBe('primary');
      expect(process.reads.replicaUsable).toBe(false);
    } finally {
      await replica.resumeReplay(database);
    }
    await replica.caughtUp(database);
    expect(await until(process, 'replica')).toBe('replica');
  } finally {
    await process.close();
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
