// Background jobs on BullMQ (design §5): a request enqueues a job with a deterministic id,
// waits up to a time budget, and answers whether the job finished. A repeated request while
// the job runs joins it instead of starting another.

import { Queue, QueueEvents, type JobsOptions } from 'bullmq';
import type { Redis } from './redis';

export const JOB_QUEUES = {
  markAllRead: 'mark-all-read',
  deleteTopic: 'delete-topic',
  uploadsCleanup: 'uploads-cleanup',
} as const;

export type JobQueueName = (typeof JOB_QUEUES)[keyof typeof JOB_QUEUES];

export class JobClient {
  private readonly queues = new Map<string, Queue>();
  private readonly events = new Map<string, QueueEvents>();
  private readonly ownConnections: Redis[] = [];

  /** `connection` may be shared; QueueEvents gets its own blocking connection. */
  constructor(
    private readonly connection: Redis,
    private readonly blockingConnection: () => Redis,
    private readonly prefix: string,
  ) {}

  queue(name: JobQueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: this.prefix });
      this.queues.set(name, queue);
    }
    return queue;
  }

  private async queueEvents(name: JobQueueName): Promise<QueueEvents> {
    let events = this.events.get(name);
    if (!events) {
      const connection = this.blockingConnection();
      this.ownConnections.push(connection);
      events = new QueueEvents(name, { connection, prefix: this.prefix });
      this.events.set(name, events);
      await events.waitUntilReady();
    }
    return events;
  }

  /**
   * Adds (or joins) the job `jobId` and waits up to `budgetMs` for it to finish.
   * Returns true if it completed in time; false if it is still running (it goes on).
   * A failed job throws its error.
   */
  async runWithBudget<T>(name: JobQueueName, jobId: string, data: T, budgetMs: number, options: JobsOptions = {}): Promise<boolean> {
    const events = await this.queueEvents(name);
    const job = await this.queue(name).add(name, data, {
      jobId,
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 5,
      backoff: { type: 'exponential', delay: 500 },
      ...options,
    });
    const state = await job.getState();
    if (state === 'completed' || state === 'unknown') return true;
    try {
      await job.waitUntilFinished(events, budgetMs);
      return true;
    } catch (error) {
      const message = (error as Error).message;
      if (/timed out|ttl/i.test(message)) return false;
      // The job finished (and was removed: removeOnComplete) between getState and the wait's own
      // check, so no event was left to see: gone means done, as 'unknown' above.
      if (/^Missing key for job /.test(message)) return true;
      throw error;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.events.values()].map((events) => events.close()));
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
    await Promise.all(this.ownConnections.map((connection) => connection.quit().catch(() => connection.disconnect())));
  }
}
