// The worker: BullMQ workers for every queue in jobs/index.ts, and health endpoints.
// Stalled jobs (a worker that died mid-job) are picked up again by BullMQ, so every
// processor must be idempotent and resumable.

import http from 'node:http';
import { Worker, type Job } from 'bullmq';
import { env, loadEnv } from '@teamchat/core';
import { storesReachable, type BaseDeps, type RunningService } from '@teamchat/runtime';
import { notificationsEnvSpec } from '@teamchat/notifications';
import { THUMBNAIL_TIMEOUT_SECONDS } from '@teamchat/images';
import { JOB_PROCESSORS } from './jobs';
import type { JobProcessor, WorkerDeps } from './jobs/processor';
import { pollDueScheduledMessages } from './jobs/scheduled-message';

export const workerEnvSpec = {
  // A worker renews the locks of its jobs every half lock; a job whose worker died (kill -9, a
  // lost node) is taken over by another worker once its lock expired and the next stalled-job
  // check ran: this lock plus WORKER_STALLED_CHECK_MS is how long a crash delays a job.
  WORKER_JOB_LOCK_MS: env.int('how long a job stays locked by a worker that stopped renewing the lock', 30_000),
  WORKER_STALLED_CHECK_MS: env.int('how often jobs locked by a dead worker are looked for', 5_000),
  MESSAGES_URL: env.url(
    'base URL of the messages service (scheduled messages are sent through it)',
    'http://127.0.0.1:9102',
  ),
  SCHEDULED_MESSAGES_POLL_MS: env.int(
    'how often due scheduled messages whose delivery job was lost are looked for (0: never)',
    5_000,
  ),
  // Outgoing webhook bots' services (jobs/outgoing-webhook.ts, lib/outgoing-http.ts): where they may be.
  OUTGOING_WEBHOOK_ALLOWED_HOSTS: env.string(
    'hosts (name or address, optionally :port; comma-separated) outgoing webhooks may call although they resolve to a loopback, link-local or private address (refused by default)',
    '',
  ),
  OUTGOING_WEBHOOK_TIMEOUT_SECONDS: env.int("how long an outgoing webhook's service has to answer", 10),
  THUMBNAIL_TIMEOUT_SECONDS: env.int('how long making one thumbnail of an image may take', THUMBNAIL_TIMEOUT_SECONDS),
  // Push notifications (bouncer) and email (SMTP): packages/notifications, docs/operations.md.
  ...notificationsEnvSpec,
};

export async function createService(deps: BaseDeps, source: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const config = loadEnv(workerEnvSpec, source);
  const workerDeps: WorkerDeps = { ...deps, config };
  const workers = JOB_PROCESSORS.map(
    (processor) =>
      new Worker(processor.queue, (job) => runJob(processor, job, workerDeps), {
        connection: deps.newBlockingRedis(`worker:${processor.queue}`),
        prefix: deps.bus.keys.bullmq(processor.queue),
        concurrency: processor.concurrency,
        lockDuration: config.WORKER_JOB_LOCK_MS,
        stalledInterval: config.WORKER_STALLED_CHECK_MS,
        maxStalledCount: 3,
      }),
  );
  for (const worker of workers) {
    worker.on('failed', (job, error) =>
      deps.logger.error({ err: error, queue: worker.name, job_id: job?.id }, 'job failed'),
    );
  }
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  const poller = startScheduledMessagePoller(workerDeps, config.SCHEDULED_MESSAGES_POLL_MS);

  const respond = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    if (req.url === '/health/live') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (req.url === '/health/ready') {
      // Ready = every BullMQ worker is consuming, and Redis and PostgreSQL answer.
      const stores = await storesReachable(deps).then(
        () => true,
        () => false,
      );
      const ready = stores && workers.every((worker) => worker.isRunning());
      res
        .writeHead(ready ? 200 : 503, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ status: ready ? 'ok' : 'unavailable' }));
      return;
    }
    res
      .writeHead(404, { 'Content-Type': 'application/json' })
      .end('{"result":"error","msg":"Not found","code":"BAD_REQUEST"}');
  };
  // Fire-and-forget: respond cannot reject (the readiness probe's failure is caught as "not ready").
  const handler: http.RequestListener = (req, res) => void respond(req, res);

  return {
    handler,
    // Finish the jobs in hand (their batches are transactions), take no new ones.
    drain: async () => {
      await poller.stop();
      await Promise.all(workers.map((worker) => worker.close()));
    },
    close: async () => {
      await poller.stop();
      await Promise.all(workers.map((worker) => worker.close()));
    },
  };
}

/** Runs a job; then records its organisation's write position, as a write request does (the read replica's rule). */
async function runJob(processor: JobProcessor, job: Job, deps: WorkerDeps): Promise<unknown> {
  const result = await processor.process(job, deps);
  const realmId = (job.data as { realmId?: unknown }).realmId;
  if (typeof realmId === 'number') await deps.reads.recordWrite(realmId).catch(() => undefined);
  return result;
}

/**
 * Polls for due scheduled messages (see pollDueScheduledMessages): once at start, then every
 * `intervalMs`, one poll at a time. Failures are logged and retried at the next poll.
 */
function startScheduledMessagePoller(deps: WorkerDeps, intervalMs: number): { stop(): Promise<void> } {
  if (intervalMs <= 0) return { stop: async () => {} };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = pollDueScheduledMessages(deps)
      .then(() => undefined)
      .catch((error) => deps.logger.warn({ err: error }, 'polling due scheduled messages failed'))
      .finally(() => {
        if (stopped) return;
        timer = setTimeout(tick, intervalMs);
        timer.unref();
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
