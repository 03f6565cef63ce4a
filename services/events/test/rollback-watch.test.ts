// The event tier's check that Redis never went back in time (lib/rollback-watch.ts), in process:
// a Redis epoch below the one PostgreSQL recorded as acknowledged drops every queue, once.
import crypto from 'node:crypto';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue } from '@teamchat/testing';
import { QueueStore } from '../src/lib/queue-store';
import { RollbackWatch } from '../src/lib/rollback-watch';

let stack: Stack;
beforeAll(async () => {
  // The stack's own watch is off: the test drives rounds itself.
  stack = await startStack({ services: ['events'], env: { EVENTS_ROLLBACK_CHECK_MS: '0' } });
});
afterAll(async () => {
  await stack.close();
});

const silent = createLogger('rollback-watch-test', 'silent');

function watchOf(prefix: string) {
  const store = new QueueStore(stack.redis, prefix, { maxEvents: 100, parkAllowanceMs: 1000, indexMarginMs: 1000 });
  return new RollbackWatch(stack.redis, stack.db, store, `${prefix}events:epoch`, silent);
}

test('an epoch lost from Redis drops every queue once; clients are told BAD_EVENT_QUEUE_ID', async () => {
  const prefix = stack.deps.env.REDIS_PREFIX;
  const watch = watchOf(prefix);
  expect(await watch.round()).toBe('ok');
  expect(await watch.round()).toBe('ok');
  const user = await stack.createUser();
  const queue = await registerEventQueue(user.client, { event_types: ['message'] });

  // Redis as it was before the last round: its acknowledged epoch is gone.
  await stack.redis.decr(`${prefix}events:epoch`);
  expect(await watch.round()).toBe('rolled-back');
  const polled = await user.client.get('/api/v1/events', {
    queue_id: queue.queueId,
    last_event_id: queue.lastEventId,
    dont_block: true,
  });
  expect(polled.status).toBe(400);
  expect(polled.body.code).toBe('BAD_EVENT_QUEUE_ID');
  // Detected once: the next rounds find Redis caught up again, and new queues live.
  expect(await watch.round()).toBe('ok');
  const again = await registerEventQueue(user.client, { event_types: ['message'] });
  expect(await watch.round()).toBe('ok');
  expect((await again.poll({ dontBlock: true })).length).toBe(0);
});

test('deployments with different Redis prefixes on one database keep separate epochs', async () => {
  const one = watchOf(`rollback-${crypto.randomBytes(3).toString('hex')}:`);
  const two = watchOf(`rollback-${crypto.randomBytes(3).toString('hex')}:`);
  for (let i = 0; i < 3; i++) {
    expect(await one.round()).toBe('ok');
    expect(await two.round()).toBe('ok');
  }
});
