// Push notifications survive a kill -9 of the worker mid-send: the worker runs as a real
// process (the built bundle), the bouncer stand-in holds its answers so that every job the
// worker is running has its notify request in flight when the worker is killed, and a new
// worker takes over the stalled jobs. Every message reaches the bouncer exactly once: a
// notification whose request was made is recorded by the active_mobile_push_notification flag
// (set before the request, as Zulip does), so the taken-over job sends nothing; the others are
// sent by the new worker. (A kill between the flag's commit and the request leaving loses that
// one notification: at most once, as in Zulip; docs/operations.md, "Notifications".)
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { buildServices, freePort, type ServiceProcess } from '@teamchat/testing';
import { BouncerStandIn } from './support/bouncer';
import { startWorkerProcess, waitFor } from './support/worker-process';

jest.setTimeout(180_000);

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

test('kill -9 of the worker while notifications are in flight: each is sent exactly once', async () => {
  const COUNT = 30;
  // The bouncer holds its answers: the worker's push jobs (8 at once) each wait on a request the
  // bouncer has taken, and the kill lands on all of them mid-send.
  bouncer.holdAnswers = true;
  const ids: number[] = [];
  for (let i = 0; i < COUNT; i++) {
    const response = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content: `push ${i}`,
    });
    expect(response.status).toBe(200);
    ids.push(response.body.id);
  }
  const notifiedIds = () =>
    bouncer
      .notifies()
      .filter((request) => request.body.gcm_payload.event === 'message')
      .map((request) => request.body.gcm_payload.zulip_message_id as number);

  await waitFor(() => notifiedIds().length === 8);
  await sleep(300);
  worker!.child.kill('SIGKILL');
  await worker!.exited;
  const atKill = notifiedIds().length;
  bouncer.release();
  bouncer.answerDelayMs = 50;
  worker = await startWorker();

  await waitFor(() => new Set(notifiedIds()).size === COUNT);
  // Let the taken-over jobs (stalled after the kill) run: they must send nothing.
  await waitFor(async () => {
    const counts = await stack.deps.jobs
      .queue('push-notification')
      .getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return Object.values(counts).every((n) => n === 0);
  });
  await sleep(1000);
  expect(notifiedIds().sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
  expect(bouncer.violations).toEqual([]);
  // Each one recorded as shown on the phone (what a read will remove).
  const [{ flagged }] = await stack.db.$queryRaw<{ flagged: number }[]>`
    SELECT count(*)::int AS flagged FROM user_message
    WHERE user_profile_id = ${bob.id} AND message_id = ANY(${ids}::int[]) AND (flags & 4096) <> 0`;
  expect(flagged).toBe(COUNT);
  console.log(`push kill: ${atKill} of ${COUNT} notify requests made when the worker was killed`);
});
