// A poll's parked mark (field k of {q:ID}:m) outlives the poll when nobody answers it: its client
// went away, or its replica stopped or crashed. The per-user queue cap collects queues with a
// parked poll last, so abandoned queues whose mark was never cleared were taken for parked and
// kept, while the queues the client had just registered (not polled yet) were collected. That is
// how `npm run bench -- events` lost some of its 10,000 fresh queues to the earlier phases'
// abandoned ones: their polls answered BAD_EVENT_QUEUE_ID, retried every 100 ms, and
// never parked. A mark counts only within the park allowance (heartbeat max + 5 s): a poll still
// parked is answered by then and parks again with a fresh mark. Heartbeats here are 1 s, so the
// test runs past that horizon.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { until } from '@teamchat/testing';
import { liveQueues, registerQueue as register } from './support/queue-cap';

const LIMIT = 4;
const HEARTBEAT_MS = 1000;
/** parkAllowanceMs in app.ts: heartbeat min + jitter + 5 s. */
const PARK_ALLOWANCE_MS = HEARTBEAT_MS + 5000;
const EVENTS = '/api/v1/events';

jest.setTimeout(60_000);

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: {
      EVENTS_MAX_QUEUES_PER_USER: String(LIMIT),
      EVENTS_HEARTBEAT_MIN_MS: String(HEARTBEAT_MS),
      EVENTS_HEARTBEAT_JITTER_MS: '0',
    },
  });
});
afterAll(() => stack.close());

const metaKey = (queueId: string) => `${stack.deps.env.REDIS_PREFIX}{q:${queueId}}:m`;

/**
 * Parks a poll on the queue straight at the event replica (as the Ingress sends it), waits for its
 * mark in Redis, then drops the connection without waiting for an answer, as a closed browser tab does.
 */
async function parkAndAbandon(user: TestUser, queueId: string): Promise<void> {
  const url = new URL(`${EVENTS}?queue_id=${queueId}&last_event_id=-1`, stack.serviceUrls.events!);
  const req = http.get(url, {
    headers: {
      host: stack.realm.host,
      authorization: `Basic ${Buffer.from(`${user.deliveryEmail}:${user.apiKey}`).toString('base64')}`,
    },
  });
  req.on('error', () => undefined);
  expect(await until(async () => (await stack.redis.hexists(metaKey(queueId), 'k')) === 1, 10_000)).toBe(true);
  req.destroy();
}

test('queues whose parked polls were abandoned past the park allowance are collected before fresh ones', async () => {
  const user = await stack.createUser();
  const abandoned = [await register(user), await register(user)];
  for (const queueId of abandoned) await parkAndAbandon(user, queueId);
  // Nobody answers those polls now, and nobody clears their marks.
  await sleep(PARK_ALLOWANCE_MS + 1000);
  for (const queueId of abandoned) expect(await stack.redis.hexists(metaKey(queueId), 'k')).toBe(1);
  // The client registers afresh, up to the limit and beyond: the abandoned queues go, the new stay.
  const fresh: string[] = [];
  for (let i = 0; i < LIMIT; i++) fresh.push(await register(user));
  expect(await liveQueues(user, [...abandoned, ...fresh])).toEqual(fresh);
});
