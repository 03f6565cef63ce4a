// JobClient.runWithBudget against real Redis and a real BullMQ worker.
import crypto from 'node:crypto';
import { Job, Worker } from 'bullmq';
import { deleteTestRedisKeys, testRedisConnection, sleep } from '@teamchat/testing';
import { JobClient, JOB_QUEUES, type Redis } from '../src';

// One hash tag for every queue's keys: BullMQ's scripts touch several keys of a queue at once (a Cluster's rule).
const prefix = `t:{${crypto.randomBytes(6).toString('hex')}}:bull`;
let connections: Redis[] = [];
let client: JobClient;
let worker: Worker;

beforeAll(async () => {
  const connection = testRedisConnection();
  connections.push(connection);
  client = new JobClient(
    connection,
    () => {
      const blocking = testRedisConnection({ blocking: true });
      connections.push(blocking);
      return blocking;
    },
    () => prefix,
  );
  const workerConnection = testRedisConnection({ blocking: true });
  connections.push(workerConnection);
  worker = new Worker(JOB_QUEUES.uploadsCleanup, async () => ({ done: true }), {
    connection: workerConnection,
    prefix,
  });
  await worker.waitUntilReady();
});

afterAll(async () => {
  await worker.close();
  await client.close();
  await deleteTestRedisKeys(connections[0], `${prefix}*`);
  for (const connection of connections) connection.disconnect();
  connections = [];
});

test('a job that completes before the wait begins counts as done (it was removed on completion)', async () => {
  // The worst timing, made certain: the job is still running when its state is read, and
  // finished and removed by the time the wait starts.
  const getState = jest.spyOn(Job.prototype, 'getState').mockImplementation(async function (this: Job) {
    const queue = client.queue(JOB_QUEUES.uploadsCleanup);
    for (let i = 0; i < 200 && (await queue.getJob(this.id!)); i++) await sleep(10);
    return 'active';
  });
  try {
    await expect(client.runWithBudget(JOB_QUEUES.uploadsCleanup, 'race-1', { attachmentIds: [] }, 5_000)).resolves.toBe(
      true,
    );
  } finally {
    getState.mockRestore();
  }
});

test('a job that finishes within the budget answers true, and a repeated id runs again once removed', async () => {
  await expect(client.runWithBudget(JOB_QUEUES.uploadsCleanup, 'plain-1', { attachmentIds: [] }, 5_000)).resolves.toBe(
    true,
  );
  await expect(client.runWithBudget(JOB_QUEUES.uploadsCleanup, 'plain-1', { attachmentIds: [] }, 5_000)).resolves.toBe(
    true,
  );
});

test('joining a job that was already running waits for it, then runs a fresh one', async () => {
  const runs: { id: string; startedAt: number; endedAt: number }[] = [];
  let firstStarted!: () => void;
  const started = new Promise<void>((resolve) => (firstStarted = resolve));
  const connection = testRedisConnection({ blocking: true });
  const slow = new Worker(
    JOB_QUEUES.markAllRead,
    async (job) => {
      const startedAt = Date.now();
      firstStarted();
      await sleep(400);
      runs.push({ id: job.id!, startedAt, endedAt: Date.now() });
    },
    { connection, prefix },
  );
  await slow.waitUntilReady();
  try {
    // Another request's job is running when this one arrives: it may have passed our rows.
    const queue = client.queue(JOB_QUEUES.markAllRead);
    const payload = { userId: 1, realmId: 1, batchSize: 1, pauseMs: 0 };
    await queue.add(JOB_QUEUES.markAllRead, payload, { jobId: 'join-1', removeOnComplete: true });
    await started;
    const requestedAt = Date.now();
    await expect(client.runWithBudget(JOB_QUEUES.markAllRead, 'join-1', payload, 10_000)).resolves.toBe(true);
    expect(runs).toHaveLength(2);
    expect(runs[0].startedAt).toBeLessThanOrEqual(requestedAt);
    expect(runs[1].startedAt).toBeGreaterThanOrEqual(runs[0].endedAt);
  } finally {
    await slow.close();
    connection.disconnect();
  }
});
