// delete_topic survives a worker crash: a real worker process is killed (SIGKILL) after some
// batches; another worker resumes the same job and nothing is deleted or announced twice.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, ofType, testRedisTarget, sleep } from '@teamchat/testing';
import { Role } from '@teamchat/domain';
import type { RunningService } from '@teamchat/runtime';
import { insertMessages, uniqueName } from './helpers';

const ROOT = path.resolve(__dirname, '../../..');
const TOTAL = 5000;

let stack: Stack;
let child: ChildProcess | undefined;
let worker: RunningService | undefined;

beforeAll(async () => {
  stack = await startStack({ services: ['channels'], env: { DELETE_TOPIC_BUDGET_MS: '200' } });
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await worker?.drain?.();
  await worker?.close();
  await stack?.close();
});

/** The worker service as a separate process, as `npm start` runs it. */
function startWorkerProcess(): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'services/worker/src/main.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: stack.database.url,
      ...testRedisTarget(),
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      INTERNAL_JWT_SECRET: stack.deps.env.INTERNAL_JWT_SECRET,
      PORT: '0',
      LOG_LEVEL: 'silent',
    },
    stdio: 'ignore',
  });
}

test('killed mid-job, resumed by another worker: every message deleted once, every deletion announced once', async () => {
  const admin: TestUser = await stack.createUser({ role: Role.ADMINISTRATOR });
  const member: TestUser = await stack.createUser({ role: Role.MEMBER });
  const name = uniqueName('crash');
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name }],
    principals: [admin.id, member.id],
  });
  const streamId = (await stack.db.stream.findFirstOrThrow({ where: { name } })).id;
  const ids = await insertMessages(stack, {
    streamId,
    senderId: admin.id,
    topic: 'huge',
    count: TOTAL,
    recipients: [admin.id, member.id],
  });
  const remaining = async () => stack.db.message.count({ where: { stream_id: streamId } });
  const captured = await captureEvents(stack, async () => {
    // No worker yet: the job waits.
    const request = () => admin.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: 'huge' });
    expect((await request()).body.complete).toBe(false);

    child = startWorkerProcess();
    const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
    // Kill it as soon as its first batches are committed.
    for (let i = 0; i < 6000 && (await remaining()) === TOTAL && child.exitCode === null; i++) await sleep(5);
    child.kill('SIGKILL');
    await exited;
    const left = await remaining();
    expect(left).toBeLessThan(TOTAL);
    expect(left).toBeGreaterThan(0);
    // Each batch is one transaction: only whole batches of 100 went.
    expect(left % 100).toBe(0);
    const job = (await stack.deps.jobs.queue('delete-topic').getJobs(['active']))[0];
    expect(job).toBeDefined();
    // Progress is reported every 10 batches, behind the deletions.
    expect(Number(job.progress) % 1000).toBe(0);
    expect(TOTAL - left - Number(job.progress)).toBeGreaterThanOrEqual(0);
    expect(TOTAL - left - Number(job.progress)).toBeLessThanOrEqual(1100);

    // The dead worker's lock would expire after its lockDuration; expire it now.
    await stack.redis.del(`${stack.deps.bus.keys.bullmq('delete-topic')}:delete-topic:${job.id}:lock`);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createService } = require('@teamchat/service-worker') as {
      createService: (deps: unknown) => Promise<RunningService>;
    };
    worker = await createService(stack.deps);
    let complete = false;
    for (let attempt = 0; attempt < 150 && !complete; attempt++) complete = (await request()).body.complete;
    expect(complete).toBe(true);
    expect(await remaining()).toBe(0);
  });

  const deletions = ofType(captured, 'delete_message');
  const announced = deletions.flatMap((e) => e.event.message_ids as number[]);
  expect(announced.length).toBe(TOTAL);
  expect(new Set(announced).size).toBe(TOTAL);
  expect([...announced].sort((a, b) => a - b)).toEqual(ids);
  expect(deletions.every((e) => e.event.message_ids.length === 100)).toBe(true);
  // Newest first, across the crash too.
  const firsts = deletions.map((e) => e.event.message_ids[0] as number);
  expect(firsts).toEqual([...firsts].sort((a, b) => b - a));
}, 120_000);
