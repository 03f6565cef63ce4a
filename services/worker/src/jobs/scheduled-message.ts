// scheduled-message: delivers a scheduled message at its time, for the messages service
// (POST/PATCH /scheduled_messages enqueue the job delayed until then).
//
// The messages service owns `message` and the send path, so the worker asks it to deliver
// (POST /internal/scheduled_messages/{id}/deliver, as the sender). That call is idempotent in
// the database: it locks the row and sends only a due, undelivered, not failed message, marking
// it delivered in the same transaction. A retried job, a stalled job taken over after a
// kill -9, a stale job of a time since changed, and the worker's poll of due rows
// (pollDueScheduledMessages) may all ask: the message is sent once.

import type { Job } from 'bullmq';
import { callService, type Requester } from '@teamchat/core';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import type { JobProcessor, WorkerDeps } from './processor';

type ScheduledMessageJobData = JobData['scheduled-message'];

export type DeliveryOutcome =
  | { outcome: 'delivered'; message_id: number }
  | { outcome: 'failed'; failure_message: string }
  | { outcome: 'skipped' };

/** Asks the messages service to deliver one scheduled message (at most once, only when due). */
export async function deliverScheduledMessage(
  deps: Pick<WorkerDeps, 'db' | 'env' | 'config'>,
  data: ScheduledMessageJobData,
): Promise<DeliveryOutcome> {
  const sender = await deps.db.userProfile.findUnique({ where: { id: data.senderId } });
  if (!sender) return { outcome: 'skipped' };
  const actingAs: Requester = {
    userId: sender.id,
    realmId: sender.realm_id,
    role: sender.role,
    email: sender.email,
    isBot: sender.is_bot,
  };
  const {
    result: _result,
    msg: _msg,
    ...outcome
  } = await callService<DeliveryOutcome & { result: string; msg: string }>(
    deps.config.MESSAGES_URL,
    deps.env.INTERNAL_JWT_SECRET,
    { method: 'POST', path: `/internal/scheduled_messages/${data.scheduledMessageId}/deliver`, actingAs },
  );
  return outcome as DeliveryOutcome;
}

async function processScheduledMessage(job: Job<ScheduledMessageJobData>, deps: WorkerDeps): Promise<DeliveryOutcome> {
  return deliverScheduledMessage(deps, job.data);
}

export const scheduledMessageProcessor: JobProcessor<typeof JOB_QUEUES.scheduledMessage> = {
  queue: JOB_QUEUES.scheduledMessage,
  concurrency: 4,
  process: processScheduledMessage,
};

/**
 * Delivers every due, undelivered, not failed scheduled message (Zulip's
 * deliver_scheduled_messages polls the table the same way). The delayed jobs deliver on time;
 * this poll is what makes delivery survive losing them: a Redis that lost its delayed set (no
 * AOF, a failover), an enqueue that failed after the row committed, a job that failed on a
 * messages service that was down. The table is the truth, so polling it every few seconds is
 * simpler and more robust than reconciling BullMQ's state with it; delivery being idempotent,
 * a poll racing a job (or another worker's poll) sends nothing twice.
 */
export async function pollDueScheduledMessages(
  deps: Pick<WorkerDeps, 'db' | 'env' | 'config' | 'logger'>,
  batch = 100,
): Promise<number> {
  const due = await deps.db.$queryRaw<{ id: number; realm_id: number; sender_id: number }[]>`
    SELECT id, realm_id, sender_id FROM scheduled_message
    WHERE NOT delivered AND NOT failed AND delivery_type = 1 AND scheduled_timestamp <= now()
    ORDER BY scheduled_timestamp, id LIMIT ${batch}`;
  let delivered = 0;
  for (const row of due) {
    try {
      const result = await deliverScheduledMessage(deps, {
        realmId: row.realm_id,
        scheduledMessageId: row.id,
        senderId: row.sender_id,
      });
      if (result.outcome === 'delivered') delivered++;
    } catch (error) {
      deps.logger.warn({ err: error, scheduled_message_id: row.id }, 'delivering a due scheduled message failed');
    }
  }
  return delivered;
}
