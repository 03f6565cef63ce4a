// The replica's wake-up subscriber connection dropping (a Redis restart, a network reset) while
// polls arrive: for a moment after the reconnect ioredis refuses SUBSCRIBE ("Connection in
// subscriber mode, only subscriber commands may be used"). A poll caught there is answered with
// no events (its client polls again), never a 500; later polls park and get their events.
import crypto from 'node:crypto';
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, testRedisServers, type EventQueue, sleep } from '@teamchat/testing';
import { alertWords, commitEvent } from './support/producers';

const REPLICA_ID = `wake-test-${crypto.randomBytes(4).toString('hex')}`;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: { EVENTS_REPLICA_ID: REPLICA_ID, EVENTS_HEARTBEAT_MIN_MS: '300', EVENTS_HEARTBEAT_JITTER_MS: '0' },
  });
});
afterAll(() => stack.close());

/** Drops this replica's subscriber connection (only this test's replica: its id is unique). */
async function killSubscriber(): Promise<number> {
  let killed = 0;
  // On every server: in a Cluster the replica subscribes on each master (shard channels).
  for (const { server } of testRedisServers(stack.redis)) {
    const clients = (await server.client('LIST')) as string;
    for (const line of clients.split('\n')) {
      if (!line.includes(`name=events:${REPLICA_ID}:wake`)) continue;
      const id = /\bid=(\d+)/.exec(line)?.[1];
      if (id) killed += Number(await server.client('KILL', 'ID', id));
    }
  }
  return killed;
}

test('polls during a subscriber reconnect are answered (no events), never with a 500', async () => {
  const user = await stack.createUser();
  const statuses = new Map<number, number>();
  let killed = 0;
  for (let round = 0; round < 10; round++) {
    // Fresh queues: each poll must subscribe to its queue's wake-up channel.
    const queues: EventQueue[] = [];
    for (let i = 0; i < 10; i++)
      queues.push(await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] }));
    killed += await killSubscriber();
    const answers = await Promise.all(
      queues.map((queue) => user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: -1 })),
    );
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
  }
  expect(killed).toBeGreaterThan(0);
  expect(Object.fromEntries(statuses)).toEqual({ 200: 100 });

  // After the reconnect, a parked poll still gets its event.
  const queue = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  const events: string[] = [];
  const deadline = Date.now() + 10_000;
  let sent = false;
  while (events.length === 0 && Date.now() < deadline) {
    const polling = user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: queue.lastEventId });
    if (!sent) {
      await sleep(100);
      await commitEvent(stack, alertWords(['after the reconnect']), [user.id]);
      sent = true;
    }
    const { status, body } = await polling;
    expect(status).toBe(200);
    for (const event of body.events) {
      queue.lastEventId = Math.max(queue.lastEventId, event.id);
      if (event.type === 'alert_words') events.push(event.alert_words[0]);
    }
  }
  expect(events).toEqual(['after the reconnect']);
});
