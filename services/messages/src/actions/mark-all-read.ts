// POST /mark_all_as_read enqueues the mark-all-read job (run by the worker, in batches of
// MARK_ALL_READ_BATCH_SIZE, newest first) under a deterministic id (BullMQ ids may not contain ":"), so a repeated request
// joins the running job, and waits up to MARK_ALL_READ_BUDGET_MS for it.
import { JOB_QUEUES, type MarkAllReadJobData } from '@teamchat/bus';
import type { MessagesDeps } from '../deps';

/** True when every unread message is now read; false while the job is still running. */
export async function doMarkAllAsRead(deps: MessagesDeps, user: { id: number; realm_id: number }): Promise<boolean> {
  const data: MarkAllReadJobData = {
    userId: user.id,
    realmId: user.realm_id,
    batchSize: deps.config.MARK_ALL_READ_BATCH_SIZE,
    pauseMs: deps.config.MARK_ALL_READ_BATCH_PAUSE_MS,
  };
  return deps.jobs.runWithBudget(
    JOB_QUEUES.markAllRead,
    `mark-all-read-${user.id}`,
    data,
    deps.config.MARK_ALL_READ_BUDGET_MS,
  );
}
