// Every background job the worker runs: one processor per BullMQ queue, each in its own file.
import type { Job } from 'bullmq';
import type { JobQueueName } from '@teamchat/bus';
import type { BaseDeps } from '@teamchat/runtime';
import { deleteTopicProcessor } from './delete-topic';
import { markAllReadProcessor } from './mark-all-read';
import { uploadsCleanupProcessor } from './uploads-cleanup';

export interface JobProcessor {
  queue: JobQueueName;
  /** Jobs of this queue run at once in one worker process. */
  concurrency: number;
  process(job: Job, deps: BaseDeps): Promise<unknown>;
}

export const JOB_PROCESSORS: JobProcessor[] = [deleteTopicProcessor, uploadsCleanupProcessor, markAllReadProcessor];
