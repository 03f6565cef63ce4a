// The repeatable clean-up of uploads no message links: the uploads service owns the policy
// (how old, how often) and registers it with BullMQ at boot; the worker's uploads-cleanup job
// runs it. Every replica registers the same scheduler id, so there is one schedule.

import { JOB_QUEUES } from '@teamchat/bus';
import type { BaseDeps } from '@teamchat/runtime';
import type { UploadsConfig } from '../env';

export const UNREFERENCED_CLEANUP_SCHEDULER = 'delete-unreferenced-uploads';

/** What the scheduled job carries (the worker's job also takes {attachmentIds}). */
export interface UnreferencedCleanupData {
  unreferencedOlderThanWeeks: number;
}

export async function scheduleUnreferencedCleanup(deps: Pick<BaseDeps, 'jobs'>, config: UploadsConfig): Promise<void> {
  const data: UnreferencedCleanupData = {
    unreferencedOlderThanWeeks: config.env.UPLOADS_DELETE_UNREFERENCED_AFTER_WEEKS,
  };
  await deps.jobs.queue(JOB_QUEUES.uploadsCleanup).upsertJobScheduler(
    UNREFERENCED_CLEANUP_SCHEDULER,
    { every: config.env.UPLOADS_CLEANUP_EVERY_MS },
    {
      name: 'delete-unreferenced',
      data,
      opts: { removeOnComplete: true, removeOnFail: 100, attempts: 3, backoff: { type: 'exponential', delay: 1000 } },
    },
  );
}
