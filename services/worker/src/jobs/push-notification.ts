// push-notification: one message's push notification to one user's devices, through the
// bouncer (Zulip's handle_push_notification).
//
// Sent at most once, as Zulip does: the user_message flag active_mobile_push_notification is
// set (only on an unread message without it) and committed before the bouncer is asked; a
// retried, duplicated or stalled job finds it set and sends nothing. When the bouncer could not
// take the notification (unreachable, 5xx) the flag is cleared again and the job retried with
// backoff. The flag also records which notifications the devices show, for push-removal.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import { Prisma } from '@teamchat/db';
import { MessageFlag } from '@teamchat/domain';
import {
  BouncerRefusedError,
  BouncerRetryLaterError,
  messagePayloadApns,
  messagePayloadGcm,
  mentionedUserGroup,
  NotificationTrigger,
  notificationSettings,
  notificationTrigger,
  recipientFacts,
  TokenKind,
  type ActivityReader,
  type BouncerClient,
} from '@teamchat/notifications';
import { notificationContext } from './notifications-context';
import type { JobProcessor, WorkerDeps } from './processor';

type PushNotificationJobData = JobData['push-notification'];

export type PushOutcome = 'sent' | 'skipped' | 'refused';

/** The message, its sender and where it went, as the payload builders need them. */
async function loadPayloadMessage(deps: WorkerDeps, messageId: number) {
  const message = await deps.db.message.findUnique({
    where: { id: messageId },
    select: {
      id: true,
      stream_id: true,
      topic: true,
      dm_key: true,
      rendered_content: true,
      content: true,
      date_sent: true,
      sender: {
        select: {
          id: true,
          email: true,
          full_name: true,
          avatar_source: true,
          delivery_email: true,
          avatar_version: true,
          realm_id: true,
        },
      },
      stream: { select: { id: true, name: true } },
    },
  });
  if (!message) return null;
  const participantIds = message.dm_key ? message.dm_key.split(',').map(Number) : [];
  const participants =
    participantIds.length > 2
      ? await deps.db.userProfile.findMany({
          where: { id: { in: participantIds } },
          select: { id: true, full_name: true },
        })
      : participantIds.map((id) => ({ id, full_name: '' }));
  return { message, sender: message.sender, stream: message.stream, participants };
}

/** Deletes the tokens the bouncer says are gone (Zulip's send_notifications_to_bouncer does the same). */
export async function forgetDeletedDevices(
  deps: WorkerDeps,
  userId: number,
  deleted: { android_devices: string[]; apple_devices: string[] },
) {
  if (deleted.android_devices.length + deleted.apple_devices.length === 0) return;
  deps.logger.info({ user_id: userId, ...deleted }, 'deleting push tokens the bouncer no longer knows');
  await deps.db.pushDeviceToken.deleteMany({
    where: {
      user_profile_id: userId,
      OR: [
        { kind: TokenKind.FCM, token: { in: deleted.android_devices } },
        { kind: TokenKind.APNS, token: { in: deleted.apple_devices } },
      ],
    },
  });
}

export async function sendPushNotification(
  deps: WorkerDeps,
  { bouncer, activity }: { bouncer: BouncerClient; activity: ActivityReader },
  data: PushNotificationJobData,
): Promise<PushOutcome> {
  const user = await deps.db.userProfile.findUnique({
    where: { id: data.userId },
    include: { realm: { select: { id: true, host: true, name: true } } },
  });
  if (!user || !user.is_active || user.is_bot) return 'skipped';
  const settings = notificationSettings(user);
  if (!settings.enable_offline_push_notifications && !settings.enable_online_push_notifications) return 'skipped';
  // Decided now, after the delay: the user's settings, the message still unread, and whether they are idle.
  const message = await deps.db.message.findUnique({
    where: { id: data.messageId },
    select: { id: true, sender_id: true, stream_id: true, topic: true },
  });
  if (!message) return 'skipped';
  const [facts] = await recipientFacts(deps.db, message, [user.id]);
  if (!facts) return 'skipped';
  const idle = (await activity.idleUserIds([user.id])).has(user.id);
  const trigger = notificationTrigger(facts, message.sender_id, 'push', idle);
  if (trigger === null) return 'skipped';
  const devices = await deps.db.pushDeviceToken.findMany({
    where: { user_profile_id: user.id },
    orderBy: { id: 'asc' },
    select: { kind: true, token: true },
  });
  if (devices.length === 0) return 'skipped';
  const payloadMessage = await loadPayloadMessage(deps, data.messageId);
  if (!payloadMessage) return 'skipped';

  // The claim: unread, not notified yet. Committed before the bouncer hears of it.
  const active = MessageFlag.active_mobile_push_notification;
  const claimed = await deps.db.$executeRaw(Prisma.sql`
    UPDATE user_message SET flags = flags | ${active}
    WHERE user_profile_id = ${user.id} AND message_id = ${data.messageId}
      AND (flags & ${MessageFlag.read | active}) = 0`);
  if (claimed === 0) return 'skipped';

  const context = { realm: user.realm, scheme: deps.env.EXTERNAL_SCHEME, user };
  const mentioned =
    trigger === NotificationTrigger.MENTION
      ? await mentionedUserGroup(deps.db, payloadMessage.message.rendered_content ?? '', user.id)
      : null;
  const data_ = { ...payloadMessage, trigger, mentionedUserGroup: mentioned };
  const [gcm, gcmOptions] = messagePayloadGcm(context, data_);
  const apns = messagePayloadApns(context, data_);
  try {
    const result = await bouncer.notify({ id: user.id, realmId: user.realm_id }, { apns, gcm, gcmOptions }, devices);
    await forgetDeletedDevices(deps, user.id, result.deleted_devices);
    return 'sent';
  } catch (error) {
    if (error instanceof BouncerRefusedError) {
      deps.logger.warn(
        { err: error, user_id: user.id, message_id: data.messageId },
        'the bouncer refused a push notification',
      );
      await unclaim(deps, user.id, data.messageId);
      return 'refused';
    }
    // Not taken (BouncerRetryLaterError, or anything unexpected before the answer): clear the claim, retry later.
    await unclaim(deps, user.id, data.messageId);
    throw error instanceof BouncerRetryLaterError ? error : new BouncerRetryLaterError(String(error));
  }
}

function unclaim(deps: WorkerDeps, userId: number, messageId: number) {
  return deps.db.$executeRaw(Prisma.sql`
    UPDATE user_message SET flags = flags & ${~MessageFlag.active_mobile_push_notification}
    WHERE user_profile_id = ${userId} AND message_id = ${messageId}`);
}

async function processPushNotification(job: Job<PushNotificationJobData>, deps: WorkerDeps): Promise<PushOutcome> {
  const { bouncer, activity } = notificationContext(deps);
  if (!bouncer) return 'skipped';
  return sendPushNotification(deps, { bouncer, activity }, job.data);
}

export const pushNotificationProcessor: JobProcessor<typeof JOB_QUEUES.pushNotification> = {
  queue: JOB_QUEUES.pushNotification,
  concurrency: 8,
  process: processPushNotification,
};
