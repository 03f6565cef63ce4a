// The outbox relay of the event tier (the happy path does the work once; docs/adr/0002): with
// producers publishing after COMMIT and deleting their own rows, the relay publishes nothing;
// it publishes only a row whose publish failed, once, and reports the backlog meanwhile.
import Redis from 'ioredis';
import { EventBus } from '@teamchat/bus';
import { transaction } from '@teamchat/db';
import { eventTierMetrics } from '@teamchat/telemetry';
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, settleEvents, sleep, until } from '@teamchat/testing';
import { alertWords } from './support/producers';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events', 'messages'], env: { EVENTS_RELAY_INTERVAL_MS: '100' } });
});
afterAll(() => stack.close());

const value = async (metric: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await metric.get()).values[0]?.value ?? 0;
const outboxRows = async () =>
  Number((await stack.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM event_outbox`)[0].n);

test('in a healthy run every event is published once by its producer, which deletes its row; the relay publishes none', async () => {
  const metrics = eventTierMetrics();
  const relayedBefore = await value(metrics.relayPublished);
  const alice = await stack.createUser();
  const bob = await stack.createUser();
  const queue = await registerEventQueue(bob.client, { event_types: ['message'] });
  const sent: number[] = [];
  for (let i = 0; i < 20; i++) {
    const response = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content: `healthy ${i}`,
    });
    sent.push(response.body.id);
  }
  const received = await queue.next(sent.length);
  expect(received.map((event) => event.message.id)).toEqual(sent);
  // Deleted by the producer after the hold (1.5 s), well within the relay's grace (5 s).
  expect(await until(async () => (await outboxRows()) === 0, 5_000)).toBe(true);
  // Past the grace, with the relay running every 100 ms: it found nothing to do.
  await sleep(stack.deps.env.EVENT_RELAY_GRACE_MS);
  expect(await value(metrics.relayPublished)).toBe(relayedBefore);
  expect(await value(metrics.outboxBacklog)).toBe(0);
  expect(await value(metrics.outboxOldestSeconds)).toBe(0);
  await settleEvents(stack);
  expect(await queue.drain()).toEqual([]);
});

test('a row whose publish failed stays, shows as backlog past the grace, and is published once by the relay', async () => {
  const metrics = eventTierMetrics();
  const relayedBefore = await value(metrics.relayPublished);
  const user = await stack.createUser();
  const queue = await registerEventQueue(user.client, { event_types: ['alert_words'] });
  const unreachable = new Redis('redis://127.0.0.1:9', {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  unreachable.on('error', () => undefined);
  let failures = 0;
  const deadBus = new EventBus(unreachable, stack.deps.env.REDIS_PREFIX, stack.deps.env.EVENT_PARTITIONS, {
    db: stack.db,
    onPublishFailure: () => failures++,
  });
  const committed = Date.now();
  await transaction(stack.db, (tx) =>
    deadBus.sendEventOnCommit(tx, stack.realm.id, alertWords(['relayed']), [user.id]),
  );
  expect(failures).toBe(1);

  // Every value the relay sets the gauges to, each round (sampling them could miss the one round
  // of 100 ms that shows the row: it publishes it in that same round).
  const backlogSets = jest.spyOn(metrics.outboxBacklog, 'set');
  const oldestSets = jest.spyOn(metrics.outboxOldestSeconds, 'set');
  const [event] = await queue.next(1, 30_000);
  const seen = (spy: jest.SpyInstance) => Math.max(0, ...spy.mock.calls.map((call) => Number(call.at(-1))));
  const backlogSeen = seen(backlogSets);
  const oldestSeen = seen(oldestSets);
  backlogSets.mockRestore();
  oldestSets.mockRestore();
  expect(event).toMatchObject({ type: 'alert_words', alert_words: ['relayed'] });
  expect(backlogSeen).toBe(1);
  expect(oldestSeen).toBeGreaterThanOrEqual(stack.deps.env.EVENT_RELAY_GRACE_MS / 1000);
  // Not before the grace: the relay leaves rows to their producers until then.
  expect(Date.now() - committed).toBeGreaterThanOrEqual(stack.deps.env.EVENT_RELAY_GRACE_MS);
  // The relay counts and deletes the row after its publish, so the event can arrive first.
  expect(
    await until(async () => (await value(metrics.relayPublished)) > relayedBefore && (await outboxRows()) === 0, 5_000),
  ).toBe(true);
  await sleep(500);
  expect(await value(metrics.relayPublished)).toBe(relayedBefore + 1);
  expect(await outboxRows()).toBe(0);
  expect(await value(metrics.outboxBacklog)).toBe(0);
  await settleEvents(stack);
  expect(await queue.drain()).toEqual([]);
  await deadBus.close();
  unreachable.disconnect();
});
