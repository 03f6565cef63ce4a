// The event tier's check that Redis never went back in time (lib/rollback-watch.ts), in process:
// a Redis epoch below the one PostgreSQL recorded as acknowledged drops every queue, once.
import crypto from 'node:crypto';
import { crossSlotPipeline } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { startStack, type Stack } from '@teamchat/stack';
import { EventQueue, registerEventQueue, settleEvents } from '@teamchat/testing';
import { alertWords, commitEvent } from './support/producers';
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

function watchOf(prefix: string, replicaId?: string, store = storeOf(prefix)) {
  return new RollbackWatch(stack.redis, stack.db, store, `${prefix}events:epoch`, silent, replicaId);
}

function storeOf(prefix: string) {
  return new QueueStore(stack.redis, prefix, { maxEvents: 100, parkAllowanceMs: 1000, indexMarginMs: 1000 });
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

// Every replica runs the watch: one rollback must be acted on by one of them, else each drops
// every queue in turn, and queues registered after the first drop are dropped again (their
// clients re-register twice).
test('two replicas watching one rollback: exactly one drops the queues', async () => {
  const prefix = `rollback-${crypto.randomBytes(3).toString('hex')}:`;
  const stores = [storeOf(prefix), storeOf(prefix)];
  const drops = stores.map((store) => jest.spyOn(store, 'dropAll'));
  const [one, two] = stores.map((store, i) => watchOf(prefix, `replica-${i}`, store));
  for (let i = 0; i < 2; i++) expect([await one.round(), await two.round()]).toEqual(['ok', 'ok']);
  for (let rollback = 0; rollback < 3; rollback++) {
    await stack.redis.decr(`${prefix}events:epoch`);
    // Both rounds at once, and again: the second pair finds it handled.
    const outcomes = [
      ...(await Promise.all([one.round(), two.round()])),
      ...(await Promise.all([two.round(), one.round()])),
    ];
    expect(outcomes.filter((outcome) => outcome === 'rolled-back')).toHaveLength(1);
    expect(drops.reduce((sum, drop) => sum + drop.mock.calls.length, 0)).toBe(rollback + 1);
    // Then both find Redis caught up.
    expect([await one.round(), await two.round()]).toEqual(['ok', 'ok']);
  }
});

test('deployments with different Redis prefixes on one database keep separate epochs', async () => {
  const one = watchOf(`rollback-${crypto.randomBytes(3).toString('hex')}:`);
  const two = watchOf(`rollback-${crypto.randomBytes(3).toString('hex')}:`);
  for (let i = 0; i < 3; i++) {
    expect(await one.round()).toBe('ok');
    expect(await two.round()).toBe('ok');
  }
});

// A dropped queue answers BAD_EVENT_QUEUE_ID at once, so clients re-register while the drop still
// runs. A queue registered then must be dropped too (its client re-registers) or keep its place
// in the indexes: a queue that lives unlisted answers polls but never receives an event (a CI
// run of tests/faults/redis-rollback.test.ts saw one wait 15 s with heartbeats only).
test('queues registered while every queue is dropped are refused or receive their events, never left unlisted', async () => {
  const prefix = stack.deps.env.REDIS_PREFIX;
  const watch = watchOf(prefix);
  expect(await watch.round()).toBe('ok');
  const user = await stack.createUser();
  // Keys of queues for the drop to go through, so that it lasts while clients register.
  const filler = crossSlotPipeline(stack.redis);
  for (let i = 0; i < 30_000; i++) filler.set(`${prefix}{q:filler-${i}}:x`, '1');
  await filler.exec();

  await stack.redis.decr(`${prefix}events:epoch`);
  let dropping = true;
  const round = watch.round().finally(() => (dropping = false));
  const registeredMeanwhile: EventQueue[] = [];
  const failures: string[] = [];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (dropping)
        await registerEventQueue(user.client, { event_types: ['alert_words'] }).then(
          (queue) => registeredMeanwhile.push(queue),
          (error: Error) => failures.push(error.message),
        );
    }),
  );
  expect(await round).toBe('rolled-back');
  expect(failures).toEqual([]);
  expect(registeredMeanwhile.length).toBeGreaterThan(4);

  await commitEvent(stack, alertWords(['after the drop']), [user.id]);
  await settleEvents(stack);
  const outcomes = { received: 0, refused: 0, unlisted: 0 };
  for (const queue of registeredMeanwhile) {
    const polled = await user.client.get('/api/v1/events', {
      queue_id: queue.queueId,
      last_event_id: queue.lastEventId,
      dont_block: true,
    });
    if (polled.status === 400 && polled.body.code === 'BAD_EVENT_QUEUE_ID') outcomes.refused++;
    else if ((polled.body.events as { type: string }[]).some((event) => event.type === 'alert_words'))
      outcomes.received++;
    else outcomes.unlisted++;
  }
  expect(outcomes).toEqual({ ...outcomes, unlisted: 0 });
  console.log(`registered during the drop: ${JSON.stringify(outcomes)}`);
});
