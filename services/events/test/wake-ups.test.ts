// Wake-ups are never lost while Redis is healthy: many queues re-parking their polls while
// events arrive at random moments. With heartbeats far away (120 s), an event whose wake-up was
// lost would reach its queue only at the next heartbeat (about 120 s after its poll parked, a
// few seconds before the event); every one must arrive well before it. The bound is half the
// heartbeat: a saturated run took 31.6 s for its slowest delivery (p50 2.2 s, two suites at once
// on two cores), which is slowness, not loss; a heartbeat could not deliver sooner than ~110 s.
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue, type EventQueue, sleep } from '@teamchat/testing';
import { alertWords, commitEvent } from './support/producers';

jest.setTimeout(300_000);

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: { EVENTS_HEARTBEAT_MIN_MS: '120000', EVENTS_HEARTBEAT_JITTER_MS: '0' },
  });
});
afterAll(() => stack.close());

test('every event reaches every re-parking poll by its wake-up, never at the heartbeat', async () => {
  const QUEUES = 100;
  const EVENTS = 60;
  const users = await Promise.all(Array.from({ length: 10 }, () => stack.createUser()));
  const queues: EventQueue[] = [];
  for (let i = 0; i < QUEUES; i++)
    queues.push(
      await registerEventQueue(users[i % users.length].client, { event_types: ['alert_words'], fetch_event_types: [] }),
    );
  const sentAt = new Map<string, number>();
  const delays: number[] = [];
  let done = false;
  const pollers = queues.map(async (queue) => {
    const seen = new Set<string>();
    while (seen.size < EVENTS && !done) {
      const events = await queue.poll();
      const now = Date.now();
      for (const event of events) {
        if (event.type !== 'alert_words') continue;
        const word = event.alert_words[0] as string;
        seen.add(word);
        delays.push(now - sentAt.get(word)!);
      }
    }
  });
  for (let n = 0; n < EVENTS; n++) {
    await sleep(Math.random() * 60);
    const word = `w${n}`;
    sentAt.set(word, Date.now());
    await commitEvent(
      stack,
      alertWords([word]),
      users.map((user) => user.id),
    );
  }
  // Before the heartbeat: a delivery never woken is then missing from the count.
  const timeout = setTimeout(() => (done = true), 100_000);
  await Promise.all(pollers);
  clearTimeout(timeout);
  delays.sort((a, b) => a - b);
  console.log(`wake-ups: ${delays.length} deliveries, p50 ${delays[delays.length >> 1]} ms, max ${delays.at(-1)} ms`);
  expect(delays.length).toBe(QUEUES * EVENTS);
  expect(delays.at(-1)!).toBeLessThan(60_000);
});
