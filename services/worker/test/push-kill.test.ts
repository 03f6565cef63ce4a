// Push notifications survive a kill -9 of the worker mid-send: the worker runs as a real
// process (the built bundle), it is killed while notify requests are in flight, and a new
// worker takes over the stalled jobs. Nothing is lost: every message reaches the bouncer. And
// nothing is sent twice except what no protocol can avoid without an idempotency key (which the
// bouncer does not have): a request the bouncer took whose answer the killed worker never
// recorded. A job that got its answer records it (its BullMQ progress) and sends nothing again.
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { buildServices, freePort, waitFor, type ServiceProcess } from '@teamchat/testing';
import { BouncerStandIn, type BouncerRequest } from './support/bouncer';
import { startWorkerProcess } from './support/worker-process';

jest.setTimeout(180_000);

/**
 * Waits here outlast a killed worker's replacement booting and taking its jobs over: a minute, not
 * waitFor's 30 s; checked every 25 ms, so a kill follows closely what it waited for.
 */
const WORKER_RESTART_PATIENCE = { timeoutMs: 60_000, intervalMs: 25 };

const ORG_ID = '0f8e3c52-4bd5-4a4b-a3a9-7b1fbf0c1d10';
const ORG_KEY = 'b'.repeat(64);

let stack: Stack;
let bouncer: BouncerStandIn;
let alice: TestUser;
let bob: TestUser;
let worker: ServiceProcess | undefined;
let workerPort: number;

async function startWorker(): Promise<ServiceProcess> {
  return startWorkerProcess(stack, workerPort, {
    PUSH_NOTIFICATION_BOUNCER_URL: bouncer.url,
    ZULIP_ORG_ID: ORG_ID,
    ZULIP_ORG_KEY: ORG_KEY,
    PUSH_NOTIFICATION_DELAY_MS: '200',
    EMAIL_LOG_DIR: '/tmp/teamchat-push-kill-emails',
  });
}

beforeAll(async () => {
  buildServices(['worker']);
  bouncer = await new BouncerStandIn(ORG_ID, ORG_KEY).start();
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  expect((await bob.client.post('/api/v1/users/me/android_gcm_reg_id', { token: 'bob-phone' })).status).toBe(200);
  workerPort = await freePort();
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await bouncer?.close();
});

/** Sends `count` direct messages to Bob and returns their ids. */
async function sendDirectMessages(count: number, label: string): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content: `${label} ${i}`,
    });
    expect(response.status).toBe(200);
    ids.push(response.body.id);
  }
  return ids;
}

/** The message notify requests the bouncer took for `ids`. */
const notifiesOf = (ids: number[]) =>
  bouncer
    .notifies()
    .filter((request) => request.body.gcm_payload.event === 'message')
    .filter((request) => ids.includes(request.body.gcm_payload.zulip_message_id as number));
const messageIdOf = (request: BouncerRequest) => request.body.gcm_payload.zulip_message_id as number;

async function killWorker(): Promise<void> {
  worker!.child.kill('SIGKILL');
  await worker!.exited;
}

/**
 * Messages of `ids` whose push job's journal (its BullMQ progress, in Redis) says "sending":
 * read after a kill, before a new worker runs, it is what the killed worker had recorded.
 */
async function sendingJobs(ids: number[]): Promise<Set<number>> {
  const jobs = await stack.deps.jobs
    .queue('push-notification')
    .getJobs(['active', 'waiting', 'delayed', 'prioritized', 'failed']);
  return new Set(
    jobs
      .filter((job) => job !== undefined && job.progress === 'sending' && ids.includes(job.data.messageId))
      .map((job) => job.data.messageId),
  );
}

/** Waits until every message of `ids` was notified and no push job is left, taken-over ones included. */
async function settle(ids: number[]) {
  await waitFor(() => new Set(notifiesOf(ids).map(messageIdOf)).size === ids.length, WORKER_RESTART_PATIENCE);
  await waitFor(async () => {
    const counts = await stack.deps.jobs
      .queue('push-notification')
      .getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return Object.values(counts).every((n) => n === 0);
  }, WORKER_RESTART_PATIENCE);
  await sleep(1000);
}

/** Message ids notified more than once. */
function duplicatedIds(ids: number[]): number[] {
  const counts = new Map<number, number>();
  for (const request of notifiesOf(ids)) counts.set(messageIdOf(request), (counts.get(messageIdOf(request)) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([id]) => id);
}

async function flaggedCount(ids: number[]): Promise<number> {
  const [{ flagged }] = await stack.db.$queryRaw<{ flagged: number }[]>`
    SELECT count(*)::int AS flagged FROM user_message
    WHERE user_profile_id = ${bob.id} AND message_id = ANY(${ids}::int[]) AND (flags & 4096) <> 0`;
  return flagged;
}

test('kill -9 while the bouncer holds every answer: each in-flight notification is sent again, the rest once', async () => {
  // The bouncer holds its answers: the worker's push jobs (8 at once) each wait on a request the
  // bouncer has taken, and the kill lands on all of them mid-send.
  bouncer.holdAnswers = true;
  const ids = await sendDirectMessages(30, 'held');
  await waitFor(() => notifiesOf(ids).length === 8, WORKER_RESTART_PATIENCE);
  await sleep(300);
  await killWorker();
  const inFlight = notifiesOf(ids).map(messageIdOf);
  bouncer.release();
  bouncer.answerDelayMs = 50;
  worker = await startWorker();

  await settle(ids);
  expect(new Set(notifiesOf(ids).map(messageIdOf))).toEqual(new Set(ids));
  // The killed worker never heard the bouncer's answers, so it cannot know they were taken: those
  // are sent again (a kill before the request left would otherwise lose them), and only those.
  expect(duplicatedIds(ids).sort((a, b) => a - b)).toEqual([...inFlight].sort((a, b) => a - b));
  expect(notifiesOf(ids).length).toBe(ids.length + inFlight.length);
  expect(bouncer.violations).toEqual([]);
  // Each one recorded as shown on the phone (what a read will remove).
  expect(await flaggedCount(ids)).toBe(ids.length);
});

test('kill -9 at random moments mid-send: nothing lost, a repeat only for a request whose answer was not back', async () => {
  bouncer.answerDelayMs = 40;
  const rounds = 4;
  const summary: string[] = [];
  for (let round = 0; round < rounds; round++) {
    const ids = await sendDirectMessages(20, `round ${round}`);
    // Somewhere inside the burst of sends (the jobs are due 200 ms after their message).
    await waitFor(() => notifiesOf(ids).length >= 1, WORKER_RESTART_PATIENCE);
    await sleep(Math.floor(Math.random() * 400));
    await killWorker();
    const sendingAtKill = await sendingJobs(ids);
    worker = await startWorker();
    await settle(ids);

    expect(new Set(notifiesOf(ids).map(messageIdOf))).toEqual(new Set(ids));
    // A repeat is allowed only for a job the kill caught between "sending" and "sent" in its
    // journal (its answer, if the bouncer took the request, never recorded). A job that recorded
    // its answer, or had not started, sends exactly once.
    const duplicated = duplicatedIds(ids);
    expect(duplicated.filter((id) => !sendingAtKill.has(id))).toEqual([]);
    expect(await flaggedCount(ids)).toBe(ids.length);
    summary.push(`${sendingAtKill.size} sending at the kill, ${duplicated.length} sent again`);
  }
  expect(bouncer.violations).toEqual([]);
  console.log(`push random kills (20 messages each): ${summary.join('; ')}`);
});
