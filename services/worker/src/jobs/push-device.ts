// push-device: a device token added or removed (users service, POST/DELETE
// /users/me/{apns_device_token,android_gcm_reg_id}) is registered with or removed from the
// bouncer (Zulip's add_push_device_token / remove_push_device_token). Both are idempotent at the
// bouncer, so a retried job is harmless; an unreachable bouncer is retried with backoff.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import { BouncerRefusedError } from '@teamchat/notifications';
import { notificationContext } from './notifications-context';
import type { JobProcessor, WorkerDeps } from './processor';

type PushDeviceJobData = JobData['push-device'];

async function processPushDevice(job: Job<PushDeviceJobData>, deps: WorkerDeps): Promise<string> {
  const { bouncer } = notificationContext(deps);
  if (!bouncer) return 'skipped';
  const { userId, realmId, op, kind, token, iosAppId } = job.data;
  const user = { id: userId, realmId };
  try {
    if (op === 'register') await bouncer.registerDevice(user, { kind, token, iosAppId });
    else await bouncer.unregisterDevice(user, { kind, token });
    return op;
  } catch (error) {
    if (!(error instanceof BouncerRefusedError)) throw error;
    deps.logger.warn({ err: error, user_id: userId, op }, 'the bouncer refused a device token');
    return 'refused';
  }
}

export const pushDeviceProcessor: JobProcessor<typeof JOB_QUEUES.pushDevice> = {
  queue: JOB_QUEUES.pushDevice,
  concurrency: 4,
  process: processPushDevice,
};
