// POST /mark_all_as_read: a BullMQ job run by the worker in batches, newest first, each batch
// its own transaction with its own event; complete:false while it runs; repeated requests join
// it; a worker killed mid-job leaves nothing half done and its successor finishes the job.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { JOB_QUEUES } from '@teamchat/bus';
import { MessageFlag } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, ofType, waitFor, type CapturedEvent } from '@teamchat/testing';
import { bulkChannelMessages } from './helpers';

const root = path.resolve(__dirname, '../../..');

async function unreadCount(stack: Stack, userId: number): Promise<number> {
  const rows = await stack.db.$queryRaw<{ count: bigint }[]>`
    SELECT count(*) AS count FROM user_message WHERE user_profile_id = ${userId} AND (flags & 1) = 0`;
  return Number(rows[0].count);
}

async function jobGone(stack: Stack, userId: number): Promise<boolean> {
  return (await stack.deps.jobs.queue(JOB_QUEUES.markAllRead).getJob(`mark-all-read-${userId}`)) === undefined;
}

/** The read-flag events a mark-all-read committed for `userId`, among those captured. */
function readEvents(captured: CapturedEvent[], userId: number): number[][] {
  const events = ofType(captured, 'update_message_flags');
  for (const { event, recipientIds } of events) {
    expect(recipientIds).toEqual([userId]);
    expect(event).toMatchObject({ op: 'add', operation: 'add', flag: 'read', all: false });
  }
  return events.map(({ event }) => event.messages as number[]);
}

async function setup(stack: Stack, count: number) {
  const sender = await stack.createUser();
  const reader = await stack.createUser();
  const stream = await stack.createStream({
    name: `bulk ${reader.id}`,
    creatorId: sender.id,
    subscribers: [sender.id, reader.id],
  });
  const ids = await bulkChannelMessages(stack, {
    senderId: sender.id,
    streamId: stream.id,
    count,
    recipientIds: [reader.id],
  });
  return { reader, ids };
}

describe('with the worker in process', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ services: ['messages', 'worker'], env: { MARK_ALL_READ_BATCH_SIZE: '2000' } });
  });
  afterAll(() => stack.close());

  test('marks everything read in batches of 2000, newest first, one event per batch', async () => {
    const { reader, ids } = await setup(stack, 4500);
    // Already-read messages are left alone and not announced.
    await stack.db.userMessage.updateMany({
      where: { user_profile_id: reader.id, message_id: { in: ids.slice(0, 100) } },
      data: { flags: MessageFlag.read | MessageFlag.starred },
    });
    const captured = await captureEvents(stack, async () => {
      const response = await reader.client.post('/api/v1/mark_all_as_read');
      expect(response.body).toEqual({ result: 'success', msg: '', complete: true });
    });
    expect(await unreadCount(stack, reader.id)).toBe(0);
    expect(
      (await stack.db.userMessage.findFirstOrThrow({ where: { user_profile_id: reader.id, message_id: ids[0] } }))
        .flags,
    ).toBe(MessageFlag.read | MessageFlag.starred);

    const batches = readEvents(captured, reader.id);
    expect(batches.map((batch) => batch.length)).toEqual([2000, 2000, 400]);
    expect(batches[0]).toEqual(ids.slice(2500));
    expect(batches[1]).toEqual(ids.slice(500, 2500));
    expect(batches[2]).toEqual(ids.slice(100, 500));

    // Nothing left: the job runs again, finds nothing and announces nothing.
    const again = await captureEvents(stack, async () => {
      expect((await reader.client.post('/api/v1/mark_all_as_read')).body.complete).toBe(true);
    });
    expect(again).toEqual([]);
  });
});

describe('past the time budget', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      services: ['messages', 'worker'],
      env: { MARK_ALL_READ_BUDGET_MS: '100', MARK_ALL_READ_BATCH_SIZE: '500', MARK_ALL_READ_BATCH_PAUSE_MS: '300' },
    });
  });
  afterAll(() => stack.close());

  test('answers complete:false, and a repeated request joins the running job', async () => {
    const { reader, ids } = await setup(stack, 2000);
    const captured = await captureEvents(stack, async () => {
      const first = await reader.client.post('/api/v1/mark_all_as_read');
      expect(first.body).toEqual({ result: 'success', msg: '', complete: false });
      const repeat = await reader.client.post('/api/v1/mark_all_as_read');
      expect(repeat.body.complete).toBe(false);
      const queue = stack.deps.jobs.queue(JOB_QUEUES.markAllRead);
      expect((await queue.getJobs(['waiting', 'active', 'delayed'])).map((job) => job.id)).toEqual([
        `mark-all-read-${reader.id}`,
      ]);

      await waitFor(() => jobGone(stack, reader.id), { what: 'the job to finish', timeoutMs: 90_000 });
      expect(await unreadCount(stack, reader.id)).toBe(0);
    });
    const batches = readEvents(captured, reader.id);
    expect(batches).toHaveLength(4);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(ids);
  });
});

describe('a worker that dies mid-job', () => {
  let stack: Stack;
  const workers: ChildProcess[] = [];

  function startWorker(): ChildProcess {
    const env = stack.deps.env;
    const child = spawn(process.execPath, [path.join(root, 'services/worker/dist/main.js')], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: stack.database.url,
        REDIS_URL: env.REDIS_URL,
        ...(env.REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: env.REDIS_CLUSTER_NODES } : {}),
        REDIS_PREFIX: env.REDIS_PREFIX,
        EVENT_PARTITIONS: String(env.EVENT_PARTITIONS),
        INTERNAL_JWT_SECRET: env.INTERNAL_JWT_SECRET,
        LOG_LEVEL: 'silent',
        PORT: '0',
        HOST: '127.0.0.1',
      },
      stdio: 'ignore',
    });
    workers.push(child);
    return child;
  }

  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build.mjs', 'worker'], { cwd: root, stdio: 'ignore' });
    stack = await startStack({
      services: ['messages'],
      env: { MARK_ALL_READ_BUDGET_MS: '200', MARK_ALL_READ_BATCH_SIZE: '1000', MARK_ALL_READ_BATCH_PAUSE_MS: '400' },
    });
  });
  afterAll(async () => {
    for (const worker of workers) {
      if (worker.exitCode !== null || worker.signalCode !== null) continue;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGKILL');
      await exited;
    }
    await stack.close();
  });

  test('is replaced by another, which finishes: nothing left unread, no event twice', async () => {
    const { reader, ids } = await setup(stack, 6000);
    const captured = await captureEvents(stack, async () => {
      const first = startWorker();
      expect((await reader.client.post('/api/v1/mark_all_as_read')).body.complete).toBe(false);

      // Kill it once some batches are done and some are not.
      await waitFor(async () => (await unreadCount(stack, reader.id)) <= 4000, {
        what: 'two batches',
        timeoutMs: 90_000,
      });
      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('exit', resolve));
      const leftUnread = await unreadCount(stack, reader.id);
      expect(leftUnread).toBeGreaterThan(0);
      expect(leftUnread % 1000).toBe(0);

      // The job is still the one running (its dead worker holds it): a repeat joins it.
      expect((await reader.client.post('/api/v1/mark_all_as_read')).body.complete).toBe(false);
      startWorker();
      await waitFor(() => jobGone(stack, reader.id), {
        what: 'the replacement worker to finish the stalled job',
        timeoutMs: 90_000,
      });
    });
    expect(await unreadCount(stack, reader.id)).toBe(0);
    const batches = readEvents(captured, reader.id);
    const announced = batches.flat();
    expect(announced).toHaveLength(ids.length);
    expect(new Set(announced).size).toBe(ids.length);
    expect(announced.sort((a, b) => a - b)).toEqual(ids);
  }, 150_000);
});
