// Background jobs on BullMQ: a request enqueues a job with a deterministic id,
// waits up to a time budget, and answers whether the job finished. A repeated request while
// the job runs joins it instead of starting another. Queues are typed by their payload
// (JobData in job-data.ts): adding a job of the wrong shape does not compile.

import { Queue, QueueEvents, type JobsOptions } from 'bullmq';
import type { JobData, JobQueueName } from './job-data';
import type { Redis } from './redis';

/** A BullMQ queue whose jobs carry `JobData[Name]` (job names stay free: a scheduler names its own). */
export type JobQueue<Name extends JobQueueName> = Queue<JobData[Name], unknown, string, JobData[Name], unknown, string>;

/** A call to an outgoing webhook and Zulip's MAX_REQUEST_RETRIES (zerver/lib/queue.py) retries of it. */
const OUTGOING_WEBHOOK_ATTEMPTS = 1 + 3;

export class JobClient {
  private readonly queues = new Map<JobQueueName, Queue>();
  private readonly events = new Map<string, QueueEvents>();
  private readonly ownConnections: Redis[] = [];

  /** `connection` may be shared; QueueEvents gets its own blocking connection. */
  constructor(
    private readonly connection: Redis,
    private readonly blockingConnection: () => Redis,
    private readonly prefixOf: (queue: JobQueueName) => string,
  ) {}

  queue<Name extends JobQueueName>(name: Name): JobQueue<Name> {
    let queue = this.queues.get(name) as JobQueue<Name> | undefined;
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: this.prefixOf(name) });
      this.queues.set(name, queue);
    }
    return queue;
  }

  /**
   * Has the worker decide who gets a push notification or an email for a message (just sent,
   * or edited: `occasion` tells the edits apart, one job each).
   */
  async enqueueMessageNotifications(data: JobData['message-notifications'], occasion = 'send'): Promise<void> {
    await this.queue('message-notifications').add('message-notifications', data, {
      jobId: `message-notifications-${data.messageId}${occasion === 'send' ? '' : `-${occasion}`}`,
      attempts: 8,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: true,
      removeOnFail: 1000,
    });
  }

  /**
   * Has the worker call an outgoing webhook bot's service about a message (one job per message
   * and bot). Tried OUTGOING_WEBHOOK_ATTEMPTS times: Zulip retries a call that timed out or could
   * not connect MAX_REQUEST_RETRIES (3) times; the worker tells the bot's owner after the last.
   */
  async enqueueOutgoingWebhook(data: JobData['outgoing-webhook']): Promise<void> {
    await this.queue('outgoing-webhook').add('outgoing-webhook', data, {
      jobId: `outgoing-webhook-${data.messageId}-${data.botId}`,
      attempts: OUTGOING_WEBHOOK_ATTEMPTS,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: true,
      removeOnFail: 1000,
    });
  }

  /**
   * Has the worker make an image upload's thumbnails (and re-render the messages showing its
   * placeholder). No fixed job id: a second request (a send that saw the first job finish while
   * it rendered) must run even while the first is still marked active; a repeat does nothing.
   */
  async enqueueThumbnail(data: JobData['thumbnail']): Promise<void> {
    await this.queue('thumbnail').add('thumbnail', data, {
      attempts: 3,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    });
  }

  /**
   * Tells users' phones to remove the push notifications of these messages (read or deleted):
   * one push-removal job per user, retried until the bouncer takes it, as a phone would
   * otherwise keep showing the notification.
   */
  async enqueuePushRemovals(removals: JobData['push-removal'][]): Promise<void> {
    if (removals.length === 0) return;
    await this.queue('push-removal').addBulk(
      removals.map((data) => ({
        name: 'push-removal',
        data,
        opts: {
          attempts: 10,
          backoff: { type: 'exponential', delay: 1000 },
          removeOnComplete: true,
          removeOnFail: 1000,
        },
      })),
    );
  }

  private async queueEvents(name: JobQueueName): Promise<QueueEvents> {
    let events = this.events.get(name);
    if (!events) {
      const connection = this.blockingConnection();
      this.ownConnections.push(connection);
      events = new QueueEvents(name, { connection, prefix: this.prefixOf(name) });
      this.events.set(name, events);
      await events.waitUntilReady();
    }
    return events;
  }

  /**
   * Adds (or joins) the job `jobId` and waits up to `budgetMs` for it to finish.
   * Returns true if it completed in time; false if it is still running (it goes on).
   * A failed job throws its error.
   *
   * A job joined because it was already running may have passed the rows this request is
   * about (a message sent just before it came): once that job is done, a fresh one runs, so
   * true always means "everything up to this request is done".
   */
  async runWithBudget<Name extends JobQueueName>(
    name: Name,
    jobId: string,
    data: JobData[Name],
    budgetMs: number,
    options: JobsOptions = {},
  ): Promise<boolean> {
    const deadline = Date.now() + budgetMs;
    const first = await this.addAndWait(name, jobId, data, budgetMs, options);
    if (first !== 'joined-done') return first === 'done';
    // Whatever job runs now started after this request did.
    return (await this.addAndWait(name, jobId, data, Math.max(0, deadline - Date.now()), options)) !== 'running';
  }

  /** One add-or-join and wait: 'joined-done' when the job that finished had started by the time of this call. */
  private async addAndWait<Name extends JobQueueName>(
    name: Name,
    jobId: string,
    data: JobData[Name],
    budgetMs: number,
    options: JobsOptions,
  ): Promise<'done' | 'joined-done' | 'running'> {
    const requestedAt = Date.now();
    const events = await this.queueEvents(name);
    const added = await this.queue(name).add(name, data, {
      jobId,
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 5,
      backoff: { type: 'exponential', delay: 500 },
      ...options,
    });
    // add() answers a local copy; the stored job tells whether it had started by now (already
    // gone: it finished, and may have been one we joined). What matters is when it started, not
    // when it was added: a joined job still waiting will see this request's rows. The same
    // millisecond counts as before (an extra run at worst; comparing add times with "<" let a job
    // started in the request's millisecond pass for a fresh one).
    const job = await this.queue(name).getJob(added.id!);
    if (!job) return 'joined-done';
    const finished = job.processedOn && job.processedOn <= requestedAt ? 'joined-done' : 'done';
    const state = await job.getState();
    if (state === 'completed' || state === 'unknown') return finished;
    try {
      await job.waitUntilFinished(events, budgetMs);
      return finished;
    } catch (error) {
      const message = (error as Error).message;
      if (/timed out|ttl/i.test(message)) return 'running';
      // The job finished (and was removed: removeOnComplete) between getState and the wait's own
      // check, so no event was left to see: gone means done, as 'unknown' above.
      if (/^Missing key for job /.test(message)) return finished;
      throw error;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.events.values()].map((events) => events.close()));
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
    await Promise.all(this.ownConnections.map((connection) => connection.quit().catch(() => connection.disconnect())));
  }
}
