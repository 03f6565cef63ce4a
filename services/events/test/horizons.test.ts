// Every horizon a long session outlives (docs/events.md lists each TTL with what refreshes it: a
// key that outlives its creator must be refreshed by whatever keeps the thing alive). With
// lifespans of a second and an index margin of 100 ms, the queue's keys and its user's and
// realm's indexes would each expire several times over during this test unless the polls that
// keep the queue alive also keep it listed.
// The margin is shorter than the time between two polls (the heartbeat, 500-600 ms), as in
// production when a client comes back after a while: the poll that finds the index's time short
// must not extend the queue past it before it has extended the index.
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, sleep, waitFor } from '@teamchat/testing';
import { PollingClient } from './support/cluster';
import { alertWords, commitEvent, streamMessageEvent } from './support/producers';

const HEARTBEAT_MIN_MS = 500;
const HEARTBEAT_JITTER_MS = 100;
const INDEX_MARGIN_MS = 100;
const LIFESPAN_SECS = 1;
/** A polled queue's keys live this long after a poll (app.ts: the park allowance). */
const QUEUE_TTL_MS = LIFESPAN_SECS * 1000 + HEARTBEAT_MIN_MS + HEARTBEAT_JITTER_MS + 5000;
/** The longest an index may live without a refresh (queue-store.ts: 2 x the queue's TTL + margin). */
const INDEX_HORIZON_MS = 2 * QUEUE_TTL_MS + INDEX_MARGIN_MS;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: {
      EVENTS_HEARTBEAT_MIN_MS: String(HEARTBEAT_MIN_MS),
      EVENTS_HEARTBEAT_JITTER_MS: String(HEARTBEAT_JITTER_MS),
      EVENTS_INDEX_MARGIN_MS: String(INDEX_MARGIN_MS),
    },
  });
});
afterAll(() => stack.close());

test('a client that registers once and keeps polling gets every event, long past every lifespan and index TTL', async () => {
  const prefix = stack.deps.env.REDIS_PREFIX;
  const direct = await stack.createUser();
  const watcher = await stack.createUser();
  const sender = await stack.createUser();
  // A public channel the watcher is not subscribed to: only its realm-wide queue (all_public_streams) sees it.
  const stream = await stack.createStream({ name: 'horizons', subscribers: [sender.id] });
  const directQueue = await registerEventQueue(direct.client, {
    event_types: ['alert_words'],
    fetch_event_types: [],
    queue_lifespan_secs: LIFESPAN_SECS,
  });
  const watcherQueue = await registerEventQueue(watcher.client, {
    event_types: ['message'],
    fetch_event_types: [],
    all_public_streams: true,
    queue_lifespan_secs: LIFESPAN_SECS,
  });
  const clients = [
    new PollingClient(direct.client, directQueue.queueId, directQueue.lastEventId).start(),
    new PollingClient(watcher.client, watcherQueue.queueId, watcherQueue.lastEventId).start(),
  ];
  const indexes = [`${prefix}events:user:${direct.id}`, `${prefix}events:realm-wide:${stack.realm.id}`];
  const queueKeys = [directQueue.queueId, watcherQueue.queueId].map((queueId) => `${prefix}{q:${queueId}}:m`);

  const words: string[] = [];
  const messageIds: number[] = [];
  const runMs = 3 * INDEX_HORIZON_MS;
  const started = Date.now();
  // The mechanism itself: each index outlives the queue it lists, at every moment, also in the
  // millisecond between a poll extending the queue and the same poll extending the indexes.
  // Sampled every few ms for the whole run.
  const outlived: string[] = [];
  let samples = 0;
  const sampler = (async () => {
    while (Date.now() - started < runMs) {
      for (const [i, index] of indexes.entries()) {
        // Absolute expiry times, the queue's read first: a poll between the reads only pushes both
        // later, so the index read after the queue must end no earlier (holds in a Cluster too,
        // where the two keys live in different slots and no MULTI can read them together).
        const queueExpires = await stack.redis.pexpiretime(queueKeys[i]);
        const indexExpires = await stack.redis.pexpiretime(index);
        if (!(queueExpires > 0 && indexExpires >= queueExpires))
          outlived.push(`${index}: ${indexExpires} < queue ${queueExpires} at ${Date.now() - started} ms`);
      }
      samples++;
      await sleep(2);
    }
  })().catch((error) => outlived.push(`sampling failed: ${error}`));
  try {
    for (let n = 0; Date.now() - started < runMs; n++) {
      words.push(`word-${n}`);
      await commitEvent(stack, alertWords([`word-${n}`]), [direct.id]);
      const message = streamMessageEvent(sender, stream);
      messageIds.push((message.message as { id: number }).id);
      await commitEvent(stack, message, [sender.id]);
      await sleep(1500);
    }
    await sampler;
    expect(samples).toBeGreaterThan(1000);
    expect(outlived).toEqual([]);
    await waitFor(() => clients[0].received.length >= words.length && clients[1].received.length >= messageIds.length, {
      what: () =>
        `received ${clients[0].received.length}/${words.length} words, ${clients[1].received.length}/${messageIds.length} messages; ${clients.flatMap((c) => c.failures).join('; ')}`,
      timeoutMs: 20_000,
    });
    expect(clients[0].received.map((event) => event.alert_words[0])).toEqual(words);
    expect(clients[1].received.map((event) => event.message.id)).toEqual(messageIds);
    expect(clients.flatMap((client) => client.failures)).toEqual([]);
  } finally {
    await Promise.all(clients.map((client) => client.stop()));
  }
}, 120_000);
