// Scheduled messages are delivered exactly once when the worker dies around delivery: the
// worker runs as a real process (the built bundle) and is killed -9 while its delayed jobs
// are being delivered, then started again. Every message reaches its recipient once (its
// event queue and the message table), because delivery is idempotent in the database; the
// jobs in flight are taken over (stalled) or redone by the poll of due rows, and a job run
// again for a delivered message sends nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import {
  buildServices,
  freePort,
  registerEventQueue,
  settleEvents,
  waitFor,
  type ServiceProcess,
} from '@teamchat/testing';
import { startWorkerProcess } from './support/worker-process';

jest.setTimeout(180_000);

/**
 * Waits here outlast a killed worker's replacement booting and taking its jobs over: a minute, not
 * waitFor's 30 s; checked every 25 ms, so a kill follows closely what it waited for.
 */
const WORKER_RESTART_PATIENCE = { timeoutMs: 60_000, intervalMs: 25 };

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let general: { id: number };
let worker: ServiceProcess | undefined;
let workerPort: number;

async function startWorker(): Promise<ServiceProcess> {
  return startWorkerProcess(stack, workerPort, { SCHEDULED_MESSAGES_POLL_MS: '1000' });
}

beforeAll(async () => {
  buildServices(['worker']);
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  workerPort = await freePort();
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
});

test('kill -9 of the worker around delivery: every scheduled message is delivered exactly once', async () => {
  const COUNT = 24;
  const queue = await registerEventQueue(bob.client, { event_types: JSON.stringify(['message']) });
  // Far enough ahead for all of them to be scheduled first on a busy machine (8 s was not, once).
  const at = Math.floor(Date.now() / 1000) + 20;
  const ids: number[] = [];
  for (let i = 0; i < COUNT; i++) {
    const response = await alice.client.post('/api/v1/scheduled_messages', {
      type: 'stream',
      to: String(general.id),
      topic: 'kill',
      content: `scheduled ${i}`,
      scheduled_delivery_timestamp: at,
    });
    expect(response.status).toBe(200);
    ids.push(response.body.scheduled_message_id);
  }
  const deliveredCount = () => stack.db.scheduledMessage.count({ where: { id: { in: ids }, delivered: true } });

  // The kill lands while the due jobs are being delivered: after the first one, before the last.
  await waitFor(async () => (await deliveredCount()) > 0, WORKER_RESTART_PATIENCE);
  worker!.child.kill('SIGKILL');
  await worker!.exited;
  const atKill = await deliveredCount();
  await sleep(500);
  worker = await startWorker();

  await waitFor(async () => (await deliveredCount()) === COUNT, WORKER_RESTART_PATIENCE);
  await settleEvents(stack);
  const received: string[] = [];
  for (;;) {
    const events = await queue.drain();
    if (events.length === 0) break;
    received.push(...events.map((event) => event.message.content as string));
  }
  const expected = ids.map((_, i) => `scheduled ${i}`);
  expect(received.sort()).toEqual(expected.sort());
  const messages = await stack.db.message.findMany({ where: { topic: 'kill' }, select: { id: true, content: true } });
  expect(messages.map((message) => message.content).sort()).toEqual(expected.sort());
  // Each row names its one message.
  const rows = await stack.db.scheduledMessage.findMany({ where: { id: { in: ids } } });
  expect(new Set(rows.map((row) => row.delivered_message_id)).size).toBe(COUNT);
  expect(rows.every((row) => !row.failed)).toBe(true);
  console.log(`scheduled delivery kill: ${atKill} of ${COUNT} delivered when the worker was killed`);

  // A job run again for a delivered message (a retry, a duplicate) sends nothing.
  const jobs = stack.deps.jobs.queue('scheduled-message');
  const repeats = await Promise.all(
    rows
      .slice(0, 3)
      .map((row) =>
        jobs.add(
          'scheduled-message',
          { realmId: row.realm_id, scheduledMessageId: row.id, senderId: row.sender_id },
          { jobId: `repeat-${row.id}` },
        ),
      ),
  );
  for (const job of repeats) {
    // finishedOn and returnvalue are written together: a job read with one has the other.
    const state = await waitFor(async () => {
      const current = await jobs.getJob(job.id!);
      return current?.finishedOn ? current : undefined;
    }, WORKER_RESTART_PATIENCE);
    expect(state.returnvalue).toMatchObject({ outcome: 'skipped' });
  }
  expect(await stack.db.message.count({ where: { topic: 'kill' } })).toBe(COUNT);
  await settleEvents(stack);
  expect(await queue.drain()).toEqual([]);
});
