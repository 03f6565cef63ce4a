// Redis restored from an older copy while the stack runs. The restored queues hold only what was
// appended before the copy; a client whose last acknowledged event is in that copy would poll on
// and never receive what was sent after it. The event tier must notice that Redis went back in
// time (services/events/src/lib/rollback-watch.ts) and answer BAD_EVENT_QUEUE_ID, so the client
// re-registers and gets the current state — which holds the message the old queue lost.
//
// A PRIVATE Redis (append-only file, fsync always) and PostgreSQL database; the stack as processes.

import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase } from '@teamchat/testing';
import { ProcessCluster, type ClusterUser } from './support/cluster';
import { OwnRedis } from './support/instances';

jest.setTimeout(180_000);

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let redis: OwnRedis;
let cluster: ProcessCluster;
let reader: ClusterUser;
let sender: ClusterUser;

beforeAll(async () => {
  database = await createTestDatabase();
  redis = await OwnRedis.start({ persistent: true });
  cluster = await ProcessCluster.start({ databaseUrl: database.url, redisUrl: redis.url, eventReplicas: 2 });
  reader = await cluster.createUser();
  sender = await cluster.createUser();
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  await redis?.stop();
  await database?.drop();
});

async function sendDirect(content: string): Promise<number> {
  const sent = await sender.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify([reader.id]),
    content,
  });
  expect(sent.status).toBe(200);
  return sent.body.id as number;
}

/** Polls until a message event arrives or the queue is refused; heartbeats and 502s (a Redis restart) are polled through. */
async function pollUntilMessageOrRefused(queueId: string, lastEventId: number, deadlineMs: number) {
  const deadline = Date.now() + deadlineMs;
  let last = lastEventId;
  const answers: string[] = [];
  while (Date.now() < deadline) {
    const response = await reader.client.get('/api/v1/events', { queue_id: queueId, last_event_id: last });
    answers.push(
      `${response.status}${response.status === 200 ? `:${(response.body.events as { type: string }[]).map((event) => event.type).join(',')}` : ''}`,
    );
    if (response.status === 400) return { refused: response.body.code as string, messages: [] as number[], last };
    if (response.status !== 200) {
      await sleep(200);
      continue;
    }
    const events = response.body.events as { id: number; type: string; message?: { id: number } }[];
    for (const event of events) last = Math.max(last, event.id);
    const messages = events.filter((event) => event.type === 'message').map((event) => event.message!.id);
    if (messages.length) return { refused: undefined, messages, last };
  }
  throw new Error(
    `neither a message nor BAD_EVENT_QUEUE_ID within ${deadlineMs} ms; answers: ${answers.join(' ')}; ` +
      `the event replicas' warnings:\n${cluster.problems('events')}`,
  );
}

test('Redis restored from an older copy: the stale queue answers BAD_EVENT_QUEUE_ID, and re-registering shows what it lost', async () => {
  const registered = await reader.client.post('/api/v1/register', { event_types: JSON.stringify(['message']) });
  expect(registered.status).toBe(200);
  const queueId = registered.body.queue_id as string;
  const before = await sendDirect('before the copy');
  const first = await pollUntilMessageOrRefused(queueId, registered.body.last_event_id as number, 15_000);
  expect(first.messages).toEqual([before]);

  // The copy is taken with the first message acknowledged; later epochs are confirmed after it.
  const copy = redis.snapshot();
  await sleep(2000);
  const lost = await sendDirect('after the copy');
  // Long enough for the fan-out, the outbox hold and the relay: nothing outside Redis has the event now.
  await sleep(4000);

  await redis.restore(copy);
  const after = await pollUntilMessageOrRefused(queueId, first.last, 30_000);
  expect([after.refused, after.messages]).toEqual(['BAD_EVENT_QUEUE_ID', []]);

  // Re-registering hands over the current state, which includes the message the old queue lost.
  const again = await reader.client.post('/api/v1/register', {
    event_types: JSON.stringify(['message']),
    fetch_event_types: JSON.stringify(['message']),
  });
  expect(again.status).toBe(200);
  expect(again.body.max_message_id).toBeGreaterThanOrEqual(lost);
  // And the new queue receives what is sent next.
  const next = await sendDirect('on the new queue');
  expect((await pollUntilMessageOrRefused(again.body.queue_id, again.body.last_event_id, 15_000)).messages).toEqual([
    next,
  ]);
  expect(cluster.unexpectedExits(new Set())).toEqual([]);
});
