// The outbox against real PostgreSQL and Redis: a committed event is published once and its
// row deleted by its producer after the hold; a failed publish leaves the row for the relay,
// which publishes it exactly once; the dedup marker lives for the window only.
import crypto from 'node:crypto';
import IORedis from 'ioredis';
import { createDb, Prisma, transaction, type Db } from '@teamchat/db';
import {
  createTestDatabase,
  deleteTestRedisKeys,
  TcpProxy,
  testRedisClusterNodes,
  testRedisConnection,
  sleep,
  testRedisUrl,
} from '@teamchat/testing';
import {
  EventBus,
  outboxBacklog,
  relayOutbox,
  type EventBusOptions,
  type IntakeEntry,
  type OutboxPayload,
  type Redis,
  type ZulipEvent,
} from '../src';
import { PublishedRowDeleter } from '../src/outbox';

const REALM = 7;
const PARTITIONS = 4;
const HOLD_MS = 300;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: Db;
let redis: Redis;
let prefix: string;
const buses: EventBus[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 4 });
  redis = testRedisConnection();
});

beforeEach(async () => {
  prefix = `t:${crypto.randomBytes(6).toString('hex')}:`;
  await db.$executeRaw`DELETE FROM event_outbox`;
});

afterEach(async () => {
  await Promise.all(buses.splice(0).map((bus) => bus.close()));
  await deleteTestRedisKeys(redis, `${prefix}*`);
});

afterAll(async () => {
  redis.disconnect();
  await db.$disconnect();
  await database.drop();
});

function newBus(options: EventBusOptions = {}, connection: Redis = redis): EventBus {
  const bus = new EventBus(connection, prefix, PARTITIONS, { db, holdMs: HOLD_MS, ...options });
  buses.push(bus);
  return bus;
}

/** A connection whose every command fails at once (Redis unreachable). */
function unreachableRedis(): Redis {
  const connection = new IORedis('redis://127.0.0.1:9', {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  connection.on('error', () => undefined);
  return connection;
}

async function intake(bus: EventBus): Promise<IntakeEntry[]> {
  const entries = await redis.xrange(bus.keys.intakeStream(bus.partitionOf(REALM)), '-', '+');
  return entries.map(([, fields]) => JSON.parse(fields[1]) as IntakeEntry);
}

async function outboxIds(): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM event_outbox ORDER BY id`;
  return rows.map((row) => row.id);
}

async function commit(bus: EventBus, words: string[]): Promise<void> {
  await transaction(db, (tx) => bus.sendEventOnCommit(tx, REALM, { type: 'alert_words', alert_words: words }, [1]));
}

test('a committed event is published once, and its producer deletes its row after the hold', async () => {
  const bus = newBus();
  await commit(bus, ['once']);
  const [entry, ...more] = await intake(bus);
  expect(more).toEqual([]);
  expect(entry).toMatchObject({ realmId: REALM, event: { type: 'alert_words', alert_words: ['once'] }, users: [1] });
  // Held: Redis may not have written the entry to disk yet.
  expect(await outboxIds()).toEqual([entry.outboxId]);
  await sleep(HOLD_MS + 500);
  expect(await outboxIds()).toEqual([]);
  // Nothing is left for the relay, which publishes nothing.
  expect(await relayOutbox(db, bus, { graceMs: 0 })).toEqual({ rows: 0, published: 0 });
  expect(await intake(bus)).toHaveLength(1);
});

test('in a healthy run the relay, waiting past its grace, finds nothing to publish', async () => {
  const bus = newBus();
  for (let i = 0; i < 20; i++) await commit(bus, [`healthy ${i}`]);
  await sleep(HOLD_MS + 500);
  expect(await outboxBacklog(db, 0)).toEqual({ backlog: 0, oldestSeconds: 0 });
  expect(await relayOutbox(db, bus, { graceMs: 0 })).toEqual({ rows: 0, published: 0 });
  expect(await intake(bus)).toHaveLength(20);
});

test('when the publish fails the row stays, and the relay publishes it exactly once', async () => {
  const dead = unreachableRedis();
  let failures = 0;
  const failing = newBus({ onPublishFailure: () => failures++ }, dead);
  await commit(failing, ['relayed']);
  expect(failures).toBe(1);
  await sleep(HOLD_MS + 500);
  const [id] = await outboxIds();
  expect(id).toBeDefined();

  // Within the grace the relay leaves it alone (its producer may still be publishing it).
  const bus = newBus();
  expect(await relayOutbox(db, bus, { graceMs: 60_000 })).toEqual({ rows: 0, published: 0 });
  expect(await outboxBacklog(db, 0)).toMatchObject({ backlog: 1 });
  expect((await outboxBacklog(db, 0)).oldestSeconds).toBeGreaterThan(HOLD_MS / 1000);
  expect(await relayOutbox(db, bus, { graceMs: 0 })).toEqual({ rows: 1, published: 1 });
  expect(await relayOutbox(db, bus, { graceMs: 0 })).toEqual({ rows: 0, published: 0 });
  expect(await outboxIds()).toEqual([]);
  const entries = await intake(bus);
  expect(entries).toEqual([
    expect.objectContaining({ outboxId: id, event: { type: 'alert_words', alert_words: ['relayed'] } }),
  ]);
  dead.disconnect();
});

test('relays take turns: while one holds the oldest rows, another publishes none of the newer ones', async () => {
  const failing = newBus({}, unreachableRedis());
  for (const word of ['first', 'second', 'third']) await commit(failing, [word]);
  // The first relay takes the oldest row, then its Redis stops answering (held, as during a
  // failover). In the cluster pass its connection goes to one node: the held command may come
  // back MOVED, which fails that relay round (the row stays for the next).
  const seed = testRedisClusterNodes()?.split(',')[0] ?? new URL(testRedisUrl()).host;
  const proxy = await new TcpProxy(() => Number(seed.split(':').at(-1) || 6379)).listen();
  const stalled = new IORedis(proxy.url, { maxRetriesPerRequest: null });
  try {
    await stalled.ping();
    const holding = proxy.hold(1500);
    const first = relayOutbox(db, newBus({}, stalled), { graceMs: 0, batchSize: 1 }).catch(() => undefined);
    await sleep(300);
    expect(await relayOutbox(db, newBus(), { graceMs: 0 })).toEqual({ rows: 0, published: 0 });
    await holding;
    await first;
  } finally {
    stalled.disconnect();
    await proxy.close();
  }
  await relayOutbox(db, newBus(), { graceMs: 0 });
  expect(await outboxIds()).toEqual([]);
  expect((await intake(failing)).map((entry) => entry.event)).toEqual(
    ['first', 'second', 'third'].map((word) => ({ type: 'alert_words', alert_words: [word] })),
  );
});

test('a row published but not deleted (its producer died) is deleted by the relay without a second publish', async () => {
  // No database: this producer never deletes what it published, as if it died after the publish.
  const dying = new EventBus(redis, prefix, PARTITIONS);
  await commit(dying, ['published, not deleted']);
  const bus = newBus();
  expect(await relayOutbox(db, bus, { graceMs: 0 })).toEqual({ rows: 1, published: 0 });
  expect(await outboxIds()).toEqual([]);
  expect(await intake(bus)).toHaveLength(1);
});

test('the dedup marker lives for the window (not a day), set by the same script as the entry', async () => {
  const bus = newBus({ dedupWindowSecs: 120 });
  await commit(bus, ['marked']);
  const [entry] = await intake(bus);
  const marker = bus.keys.intakeSent(bus.partitionOf(REALM), entry.outboxId!);
  const ttl = await redis.ttl(marker);
  expect(ttl).toBeGreaterThan(110);
  expect(ttl).toBeLessThanOrEqual(120);
  // The default window is ten minutes.
  const defaults = new EventBus(redis, prefix, PARTITIONS);
  await transaction(db, (tx) =>
    defaults.sendEventOnCommit(tx, REALM, { type: 'alert_words', alert_words: ['default'] }, [1]),
  );
  const [, second] = await intake(bus);
  const defaultTtl = await redis.ttl(bus.keys.intakeSent(bus.partitionOf(REALM), second.outboxId!));
  expect(defaultTtl).toBeGreaterThan(590);
  expect(defaultTtl).toBeLessThanOrEqual(600);
});

test('a hot-path statement writes its row with fields only it knows, and none when it selects nothing', async () => {
  const bus = newBus();
  const write = () =>
    bus.outboxWrite({
      realmId: REALM,
      event: {
        type: 'update_message_flags',
        op: 'add',
        operation: 'add',
        flag: 'read',
        messages: Prisma.sql`jsonb_agg(id ORDER BY id)`,
        all: false,
      },
      users: [1],
      from: Prisma.sql`changed HAVING count(*) > 0`,
    });
  const statement = (ids: number[], outbox: ReturnType<typeof write>) =>
    db.$queryRaw<{ id: string; xid: string; payload: OutboxPayload }[]>(Prisma.sql`
      WITH changed AS (SELECT unnest(${ids}::int[]) AS id), event AS (${outbox.sql}) SELECT * FROM event`);

  const none = write();
  expect(await statement([], none)).toEqual([]);
  const some = write();
  const [row] = await statement([3, 2], some);
  expect(row.payload).toEqual({
    event: { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [2, 3], all: false },
    users: [1],
  });
  await some.publish(row);
  expect(await intake(bus)).toEqual([
    expect.objectContaining({ outboxId: row.id, xid: row.xid, event: row.payload.event }),
  ]);
  await sleep(HOLD_MS + 500);
  expect(await outboxIds()).toEqual([]);
});

test("local echo and the channel's privacy travel beside the event, in the row and on the intake", async () => {
  const bus = newBus();
  const event: ZulipEvent = {
    type: 'message',
    message: {
      id: 1,
      sender_id: 1,
      sender_email: 'a@example.com',
      sender_full_name: 'A',
      sender_realm_str: 'zulip',
      avatar_url: null,
      client: 'test',
      content: 'hi',
      rendered_content: '<p>hi</p>',
      is_me_message: false,
      recipient_id: 3,
      type: 'stream',
      display_recipient: 'Denmark',
      stream_id: 2,
      subject: 'greetings',
      topic_links: [],
      timestamp: 1_700_000_000,
      reactions: [],
      submessages: [],
    },
  };
  const outbox = bus.outboxWrite({
    realmId: REALM,
    event,
    users: [1, 2],
    echo: { queueId: 'q', localId: '1.5' },
    inviteOnly: false,
  });
  const [row] = await db.$queryRaw<{ id: string; xid: string }[]>(outbox.sql);
  const [stored] = await db.$queryRaw<
    { payload: Record<string, unknown> }[]
  >`SELECT payload FROM event_outbox WHERE id = ${BigInt(row.id)}`;
  expect(stored.payload).toEqual({ event, users: [1, 2], echo: { queueId: 'q', localId: '1.5' }, inviteOnly: false });
  await outbox.publish(row);
  const [entry] = await intake(bus);
  expect(entry.echo).toEqual({ queueId: 'q', localId: '1.5' });
  expect(entry.inviteOnly).toBe(false);
  expect(entry.event).toEqual(event);
});

test('a failed delete is tried again at the next round; close deletes what is left once held', async () => {
  let failNext = true;
  const flaky = {
    $executeRaw: (...args: Parameters<Db['$executeRaw']>) => {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error('connection lost'));
      }
      return db.$executeRaw(...args);
    },
  } as unknown as Db;
  const warnings: string[] = [];
  const deleter = new PublishedRowDeleter(flaky, 100, { warn: (_object, message) => warnings.push(message) });
  const bus = newBus();
  const inserted = async () =>
    (
      await db.$queryRaw<{ id: string }[]>(
        bus.outboxWrite({ realmId: REALM, event: { type: 'invites_changed' }, users: [1] }).sql,
      )
    )[0].id;
  const first = await inserted();
  deleter.add(first);
  await sleep(600);
  expect(warnings).toEqual(['deleting published outbox rows failed; trying again']);
  expect(await outboxIds()).toEqual([]);

  const second = await inserted();
  deleter.add(second);
  const closing = Date.now();
  await deleter.close();
  expect(Date.now() - closing).toBeGreaterThanOrEqual(50);
  expect(await outboxIds()).toEqual([]);
});
