// The cap on live event queues per user: each queue receives a copy of
// every event of its user for up to 7 days, so a user who registers without end (300 queues in a
// second before the cap) would hold Redis memory without end. Past EVENTS_MAX_QUEUES_PER_USER,
// registering collects the least recently polled queue; a queue with a parked poll goes last.

import { startStack, type Stack } from '@teamchat/stack';
import { expectError, sleep } from '@teamchat/testing';
import { loadEventsEnv } from '../src/env';
import { liveQueues, pollQueue as poll, registerQueue as register } from './support/queue-cap';

const LIMIT = 3;
const EVENTS = '/api/v1/events';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: { EVENTS_MAX_QUEUES_PER_USER: String(LIMIT), EVENTS_HEARTBEAT_MIN_MS: '60000' },
  });
});
afterAll(() => stack.close());

test(`registering past ${LIMIT} queues collects the least recently polled one`, async () => {
  const user = await stack.createUser();
  const [first, second, third] = [await register(user), await register(user), await register(user)];
  // The first is polled again: the second is now the one polled longest ago.
  expect((await poll(user, first)).status).toBe(200);
  await sleep(20);
  const fourth = await register(user);
  expect(await liveQueues(user, [first, second, third, fourth])).toEqual([first, third, fourth]);
  // Another user's queues are not touched.
  const other = await stack.createUser();
  const theirs = await register(other);
  expect(await liveQueues(other, [theirs])).toEqual([theirs]);
});

test('30 non-blocking GET /events without a queue: only the newest queues up to the limit stay', async () => {
  const user = await stack.createUser();
  const created: string[] = [];
  for (let i = 0; i < 30; i++) {
    const response = await user.client.get(EVENTS, { dont_block: true, event_types: JSON.stringify(['message']) });
    expect(response.status).toBe(200);
    created.push(response.body.queue_id);
  }
  expect(await liveQueues(user, created)).toEqual(created.slice(-LIMIT));
  const index = await stack.redis.smembers(`${stack.deps.env.REDIS_PREFIX}events:user:${user.id}`);
  expect(index.sort()).toEqual(created.slice(-LIMIT).sort());
});

test('a queue with a parked poll is collected after the idle ones; its poll is answered when it goes, and the next is BAD_EVENT_QUEUE_ID', async () => {
  const user = await stack.createUser();
  const oldest = await register(user);
  const idle = [await register(user), await register(user)];
  // The oldest queue's client is waiting on it (parked), the two others are idle.
  const parked = user.client.get(EVENTS, { queue_id: oldest, last_event_id: -1 });
  await sleep(300);
  const fourth = await register(user);
  expectError(await poll(user, idle[0]), 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${idle[0]}`);
  // Every other queue gets a parked poll too: the one parked longest ago goes, and its client hears it.
  const others = [idle[1], fourth].map((queueId) =>
    user.client.get(EVENTS, { queue_id: queueId, last_event_id: -1 }).catch(() => undefined),
  );
  await sleep(300);
  await register(user);
  // Answered with no events as its queue goes (Zulip's cleanup of a parked handler); the client
  // hears of it on its next poll.
  const answered = await parked;
  expect([answered.status, answered.body.events]).toEqual([200, []]);
  expectError(await poll(user, oldest), 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${oldest}`);
  expect(await liveQueues(user, [idle[1], fourth])).toEqual([idle[1], fourth]);
  await Promise.all(others);
});

test('the default limit is 100 queues per user', () => {
  expect(loadEventsEnv({}).EVENTS_MAX_QUEUES_PER_USER).toBe(100);
});
