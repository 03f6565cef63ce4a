// A parked poll's heartbeat is its only way out when no event comes: if the heartbeat's script
// fails (Redis unreachable for longer than the command retries), the poll must still be answered
// with a heartbeat once Redis answers again, never left parked with no heartbeat at all (retried
// as a mere wake-up, it was: a wake-up answers only when events are queued).
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, testRedisConnection } from '@teamchat/testing';
import { PollHub } from '../src/lib/polls';
import { QueueStore, type PollMode } from '../src/lib/queue-store';

const HEARTBEAT_MS = 300;

/** The real store, whose first `failures` heartbeat scripts fail as an unreachable Redis's would. */
class FailingHeartbeats extends QueueStore {
  readonly heartbeats: ('failed' | 'ran')[] = [];
  constructor(
    redis: Redis,
    prefix: string,
    private failures: number,
  ) {
    super(redis, prefix, { maxEvents: 1000, parkAllowanceMs: 10_000, indexMarginMs: 5000 });
  }

  override async poll(queueId: string, mode: PollMode, userId: number, lastEventIdOrSeq: number) {
    if (mode === 'heartbeat' && this.failures > 0) {
      this.failures--;
      this.heartbeats.push('failed');
      throw new Error('Reached the max retries per request limit (which is 50)');
    }
    if (mode === 'heartbeat') this.heartbeats.push('ran');
    return super.poll(queueId, mode, userId, lastEventIdOrSeq);
  }
}

let stack: Stack;
const connections: Redis[] = [];
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
});
afterAll(async () => {
  for (const connection of connections) connection.disconnect();
  await stack.close();
});

/** A poll hub over `store` behind an HTTP server of its own: GET /?queue_id&user_id&last_event_id. */
async function serveHub(store: QueueStore): Promise<{ url: string; close(): Promise<void> }> {
  const subscriber = testRedisConnection({ blocking: true });
  connections.push(subscriber);
  await once(subscriber, 'ready');
  const hub = new PollHub(
    store,
    subscriber,
    { heartbeatMinMs: HEARTBEAT_MS, heartbeatJitterMs: 0, subscriptionLingerMs: 5000 },
    createLogger('heartbeat-retry-test', 'silent'),
  );
  hub.start();
  const server = http.createServer((req, res) => {
    const query = new URL(req.url!, 'http://hub').searchParams;
    void hub.poll({
      queueId: query.get('queue_id')!,
      userId: Number(query.get('user_id')),
      lastEventId: Number(query.get('last_event_id')),
      dontBlock: false,
      ignored: [],
      res,
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      hub.close();
      server.close();
      server.closeAllConnections();
      await once(server, 'close');
    },
  };
}

test.each([1, 3])(
  'a parked poll whose heartbeat fails %i time(s) is answered with a heartbeat once Redis answers',
  async (failures) => {
    const user = await stack.createUser();
    const queue = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
    const commands = testRedisConnection();
    connections.push(commands);
    const store = new FailingHeartbeats(commands, stack.deps.env.REDIS_PREFIX, failures);
    const hub = await serveHub(store);
    try {
      const answer = await fetch(
        `${hub.url}/?queue_id=${queue.queueId}&user_id=${user.id}&last_event_id=${queue.lastEventId}`,
        { signal: AbortSignal.timeout(20_000) },
      );
      const body = (await answer.json()) as { result: string; events: { type: string; id: number }[] };
      expect(body.result).toBe('success');
      expect(body.events.map((event) => event.type)).toEqual(['heartbeat']);
      expect(body.events[0].id).toBeGreaterThan(queue.lastEventId);
      expect(store.heartbeats).toEqual([...Array<string>(failures).fill('failed'), 'ran']);
    } finally {
      await hub.close();
    }
  },
);
