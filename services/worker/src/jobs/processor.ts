// What a job module exports for the worker: the queue it serves and how to run one of its jobs.
// Kept apart from the registry (index.ts), which imports every job module.
import type { Job } from 'bullmq';
import type { JobData, JobQueueName } from '@teamchat/bus';
import type { BaseDeps } from '@teamchat/runtime';
import type { NotificationsConfig } from '@teamchat/notifications';

/** What a job gets: the common dependencies and the worker's settings (workerEnvSpec in app.ts). */
export type WorkerDeps = BaseDeps & {
  config: {
    MESSAGES_URL: string;
    OUTGOING_WEBHOOK_ALLOWED_HOSTS: string;
    OUTGOING_WEBHOOK_TIMEOUT_SECONDS: number;
    THUMBNAIL_TIMEOUT_SECONDS: number;
  } & NotificationsConfig;
};

export interface JobProcessor<Name extends JobQueueName = JobQueueName> {
  queue: Name;
  /** Jobs of this queue run at once in one worker process. */
  concurrency: number;
  /** The payload type is the producers' (JobData), so both sides agree or fail to compile. */
  process(job: Job<JobData[Name]>, deps: WorkerDeps): Promise<unknown>;
}
