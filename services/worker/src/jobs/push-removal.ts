// push-removal: a user read messages whose push notifications their devices show, or those
// messages were deleted; tell the devices to remove them (Zulip's handle_remove_push_notification), then clear the
// active_mobile_push_notification flags. The flags are cleared only after the bouncer took the
// removal, so a retried job sends it again (a removal twice is harmless; none would leave the
// notification on the phone).

import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import { Prisma } from '@teamchat/db';
import { MessageFlag } from '@teamchat/domain';
import {
  BouncerRefusedError,
  MAX_REMOVED_MESSAGE_IDS,
  removePayloadApns,
  removePayloadGcm,
} from '@teamchat/notifications';
import { notificationContext } from './notifications-context';
import { forgetDeletedDevices } from './push-notification';
import type { JobProcessor, WorkerDeps } from './processor';

type PushRemovalJobData = JobData['push-removal'];

async function processPushRemoval(job: Job<PushRemovalJobData>, deps: WorkerDeps): Promise<{ removed: number }> {
  const { bouncer } = notificationContext(deps);
  const { userId, messageIds } = job.data;
  const active = MessageFlag.active_mobile_push_notification;
  const rows = job.data.deleted
    ? messageIds.map((id) => ({ message_id: id }))
    : await deps.db.$queryRaw<{ message_id: number }[]>(Prisma.sql`
        SELECT message_id FROM user_message
        WHERE user_profile_id = ${userId} AND message_id = ANY(${messageIds}::int[])
          AND (flags & ${active}) <> 0 AND (flags & ${MessageFlag.read}) <> 0`);
  const ids = rows.map((row) => row.message_id).sort((a, b) => a - b);
  if (ids.length === 0) return { removed: 0 };
  const user = await deps.db.userProfile.findUnique({
    where: { id: userId },
    include: { realm: { select: { id: true, host: true, name: true } } },
  });
  const devices = user
    ? await deps.db.pushDeviceToken.findMany({
        where: { user_profile_id: userId },
        orderBy: { id: 'asc' },
        select: { kind: true, token: true },
      })
    : [];
  if (bouncer && user && devices.length > 0) {
    const context = { realm: user.realm, scheme: deps.env.EXTERNAL_SCHEME, user };
    // The newest 200: APNs takes 4 KB; older ones were most likely dismissed on the phone already.
    const shown = ids.slice(-MAX_REMOVED_MESSAGE_IDS);
    const [gcm, gcmOptions] = removePayloadGcm(context, shown);
    const apns = removePayloadApns(context, shown);
    try {
      const result = await bouncer.notify({ id: user.id, realmId: user.realm_id }, { apns, gcm, gcmOptions }, devices);
      await forgetDeletedDevices(deps, user.id, result.deleted_devices);
    } catch (error) {
      if (!(error instanceof BouncerRefusedError)) throw error;
      deps.logger.warn({ err: error, user_id: userId }, 'the bouncer refused a notification removal');
    }
  }
  await deps.db.$executeRaw(Prisma.sql`
    UPDATE user_message SET flags = flags & ${~active}
    WHERE user_profile_id = ${userId} AND message_id = ANY(${ids}::int[])`);
  return { removed: ids.length };
}

export const pushRemovalProcessor: JobProcessor<typeof JOB_QUEUES.pushRemoval> = {
  queue: JOB_QUEUES.pushRemoval,
  concurrency: 4,
  process: processPushRemoval,
};
