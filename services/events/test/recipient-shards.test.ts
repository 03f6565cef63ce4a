// One organisation's fan-out over several event replicas (EVENT_RECIPIENT_SHARDS): its events are
// split by recipient over as many intake partitions, each owned by whichever replica holds its
// lease, and every queue — a user's own, and realm-wide ones (all_public_streams) of users in every
// shard — still gets each event exactly once, in order, through a kill -9 of a replica.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { recipientShard } from '@teamchat/bus';
import { EventCluster, PollingClient } from './support/cluster';
import { commitEvent, sendAlternating, streamMessageEvent } from './support/producers';
import { waitFor } from '@teamchat/testing';

const SHARDS = 4;
const PARTITIONS = 8;
const FAST = { EVENTS_HEARTBEAT_MIN_MS: '1000', EVENTS_HEARTBEAT_JITTER_MS: '200' };

let stack: Stack;
let cluster: EventCluster | undefined;
const clients: PollingClient[] = [];

beforeAll(async () => {
  stack = await startStack({ eventTier: { EVENT_PARTITIONS: PARTITIONS, EVENT_RECIPIENT_SHARDS: SHARDS } });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.stop()));
  await cluster?.stop();
  cluster = undefined;
});
afterAll(() => stack.close());

/** Users until every shard has `perShard` of them. */
async function usersInEveryShard(perShard: number): Promise<TestUser[]> {
  const byShard = new Map<number, TestUser[]>();
  while ([...Array(SHARDS).keys()].some((shard) => (byShard.get(shard)?.length ?? 0) < perShard)) {
    const user = await stack.createUser();
    const shard = recipientShard(user.id, SHARDS);
    byShard.set(shard, [...(byShard.get(shard) ?? []), user]);
  }
  return [...byShard.values()].flatMap((users) => users.slice(0, perShard));
}

async function poll(user: TestUser, params: Record<string, unknown>): Promise<PollingClient> {
  const registered = await cluster!.client(user).post('/api/v1/register', { fetch_event_types: [], ...params });
  expect(registered.status).toBe(200);
  const client = new PollingClient(cluster!.client(user), registered.body.queue_id, registered.body.last_event_id);
  clients.push(client.start());
  return client;
}

test("one organisation's events go through a partition per shard, fanned out by several replicas, each queue exactly once in order", async () => {
  cluster = await EventCluster.start(stack, 4, FAST);
  const users = await usersInEveryShard(2);
  const sender = users[0];
  const stream = await stack.createStream({ name: 'announcements', subscribers: [sender.id] });
  // Each user: a queue for the events sent to them, and a realm-wide one that sees every public-channel message.
  const own = new Map<number, PollingClient>();
  const watching = new Map<number, PollingClient>();
  for (const user of users) {
    own.set(user.id, await poll(user, { event_types: ['alert_words'] }));
    watching.set(user.id, await poll(user, { event_types: ['message'], all_public_streams: true }));
  }

  const expectedWords = new Map<number, string[]>(users.map((user) => [user.id, []]));
  const messageIds: number[] = [];
  for (let n = 0; n < 120; n++) {
    if (n === 60) {
      // The owner of one of the realm's partitions dies mid-stream; another replica takes it over.
      const owner = await cluster.partitionOwner(stack.deps.bus.partitionOf(stack.realm.id, 1));
      owner?.kill('SIGKILL');
      await owner?.exited;
    }
    const recipients = users.filter((_, i) => (n + i) % 3 !== 0);
    const word = `w${n}`;
    await sendAlternating(
      stack,
      n,
      word,
      recipients.map((user) => user.id),
    );
    for (const user of recipients) expectedWords.get(user.id)!.push(word);
    if (n % 4 === 0) {
      const message = streamMessageEvent(sender, stream);
      messageIds.push((message.message as { id: number }).id);
      await commitEvent(stack, message, [sender.id]);
    }
  }

  await waitFor(
    () =>
      users.every(
        (user) =>
          own.get(user.id)!.received.length >= expectedWords.get(user.id)!.length &&
          watching.get(user.id)!.received.length >= messageIds.length,
      ),
    {
      what: () =>
        users
          .map(
            (user) =>
              `${user.id}: ${own.get(user.id)!.received.length}/${expectedWords.get(user.id)!.length} words, ` +
              `${watching.get(user.id)!.received.length}/${messageIds.length} messages`,
          )
          .join('\n'),
      timeoutMs: 60_000,
    },
  );
  for (const user of users) {
    expect(own.get(user.id)!.received.map((event) => event.alert_words[0])).toEqual(expectedWords.get(user.id));
    expect(watching.get(user.id)!.received.map((event) => event.message.id)).toEqual(messageIds);
  }

  // The realm's entries went to one partition per shard, and more than one replica fanned them out.
  const partitions = [...Array(SHARDS).keys()].map((shard) => stack.deps.bus.partitionOf(stack.realm.id, shard));
  expect(new Set(partitions).size).toBe(SHARDS);
  for (const partition of partitions) {
    // entries-read counts what the consumer group took, however much the stream was trimmed since.
    const [group] = (await stack.redis.xinfo('GROUPS', stack.deps.bus.keys.intakeStream(partition))) as unknown[][];
    const fields = new Map<unknown, unknown>();
    for (let i = 0; i < group.length; i += 2) fields.set(group[i], group[i + 1]);
    expect(Number(fields.get('entries-read'))).toBeGreaterThan(0);
  }
  const owners = await Promise.all(partitions.map((partition) => cluster!.partitionOwner(partition)));
  expect(new Set(owners.filter(Boolean).map((owner) => owner!.replicaId)).size).toBeGreaterThan(1);
}, 180_000);
