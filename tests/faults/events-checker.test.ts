// The event tier's checker (support/checker.ts, the same as `npm run soak`) in short form: about
// 2.5 minutes with short horizons — a 1 s lease, 1 s heartbeats, queue lifespans of 20–60 s —
// and each fault kind once. Sticky clients register ONCE (20 s and 60 s lifespans) and keep
// long-polling for the whole run, past their queue's lifespan and past the TTL their user's
// index got at register (lifespan + park allowance + 60 s = 86 s and 126 s before the fix; now
// the polls must extend it): a queue listed only by an index that expired silently stops
// receiving (the "12 minutes" bug) and shows up as lost messages. Two of them are alone on their
// user: another queue's register would extend the index and hide it.
// Session clients come and go (20–60 s lifespans, 10–40 s sessions, deleting or abandoning their
// queues). The verdict must be clean: nothing lost, duplicated or out of order, every client told
// BAD_EVENT_QUEUE_ID recovered, no 500, every replica gone promptly on SIGTERM.

import { FAULT_KINDS, printReport, runChecker } from './support/checker';

jest.setTimeout(900_000);

const RUN_SECS = 150;
const STICKY_LIFESPANS = [20, 60];
const PARK_ALLOWANCE_SECS = (1000 + 100 + 5000) / 1000;

test('the event tier under every fault kind: nothing lost, duplicated or reordered; every client recovers', async () => {
  // The run outlasts the longest sticky queue's index horizon by a margin, so messages sent after it are judged.
  expect(RUN_SECS).toBeGreaterThan(Math.max(...STICKY_LIFESPANS) + PARK_ALLOWANCE_SECS + 60 + 15);
  const report = await runChecker({
    runSecs: RUN_SECS,
    rounds: 1,
    kinds: FAULT_KINDS,
    replicas: 2,
    users: 5,
    stickyClients: 6,
    sessionClients: 10,
    stickyLifespansSecs: STICKY_LIFESPANS,
    loneLifespansSecs: STICKY_LIFESPANS,
    sessionLifespanSecs: [20, 60],
    sessionSecs: [10, 40],
    leaseMs: 1000,
    heartbeatMinMs: 1000,
    heartbeatJitterMs: 100,
    faultMs: 2500,
    downMs: 1000,
    termGraceMs: 15_000,
    sendPauseMs: 500,
    sampleEveryMs: 5000,
    settleMs: 30_000,
    seed: 7,
    log: (message) => console.log(`[checker] ${message}`),
  });
  const lines: string[] = [];
  printReport(report, (text) => lines.push(text));
  console.log(lines.join('\n'));
  // Every kind was injected, the sticky queues lived past their index horizon, and the verdict is clean.
  expect(Object.values(report.faults).every((count) => count >= 1)).toBe(true);
  expect(report.sessions.some((row) => row.bucket === '2 – 5 min' && row.queues > 0)).toBe(true);
  expect(report.failures).toEqual([]);
});
