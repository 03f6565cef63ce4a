// push-notification: one message's push notification to one user's devices, through the
// bouncer (Zulip's handle_push_notification).
//
// Sent at least once, and never twice but for one window no protocol closes. The user_message
// flag active_mobile_push_notification is the claim (set only on an unread message without it,
// committed before the bouncer is asked), so another job for the same notification sends
// nothing. Before claiming, the job records in its own BullMQ progress that it is sending: when
// its worker is killed, the job is taken over (stalled) and a taken-over job that was sending
// sends again, since its request may never have left (Zulip sends at most once and loses that
// notification instead). The one duplicate left: a kill after the bouncer took the request and
// before its answer came back (the bouncer has no idempotency key). When the bouncer could not
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
  messageRecipientFacts,
  TokenKind,
  type ActivityReader,
  type BouncerClient,
} from '@teamchat/notifications';
import { notificationContext } from './notifications-context';
import type { JobProcessor, WorkerDeps } from './processor';

type PushNotificationJobData = JobData['push-notification'];

export type PushOutcome = 'sent' | 'skipped' | 'refused';

/**
 * What the job knows of its own earlier runs: whether one of them was sending when it stopped
 * (its worker killed), and how to record that this run is about to send.
 */
export interface SendJournal {
  wasSending: boolean;
  markSending(): Promise<void>;
  /** The bouncer answered: a takeover from here on sends nothing. */
  markSent(): Promise<void>;
}

/** The journal kept in the job's progress (stored with the job in Redis, kept across a takeover). */
export function jobJournal(job: Job): SendJournal {
  return {
    wasSending: job.progress === 'sending',
    markSending: () => job.updateProgress('sending'),
    markSent: () => job.updateProgress('sent'),
  };
}

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
          avatar_key: true,
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
  journal: SendJournal,
): Promise<PushOutcome> {
  const user = await deps.db.userProfile.findUnique({
    where: { id: data.userId },
    include: { realm: { select: { id: true, host: true, name: true } } },
  });
  if (!user || !user.is_active || user.is_bot) return 'skipped';
  const settings = notificationSettings(user);
  if (!settings.enable_offline_push_notifications && !settings.enable_online_push_notifications) return 'skipped';
  // Decided now, after the delay: the user's settings, the message still unread, and whether they are idle.
  const read = await messageRecipientFacts(deps.db, data.messageId, [user.id]);
  if (!read) return 'skipped';
  const { message } = read;
  const [facts] = read.facts;
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

  // Journal first, then the claim: a kill between the two leaves an unclaimed notification that
  // the taken-over job claims and sends, never a claimed one that nobody sends.
  if (!journal.wasSending) await journal.markSending();
  // The claim: unread, not notified yet (or claimed by this job's own run that was killed).
  const active = MessageFlag.active_mobile_push_notification;
  const claimed = await deps.db.$executeRaw(Prisma.sql`
    UPDATE user_message SET flags = flags | ${active}
    WHERE user_profile_id = ${user.id} AND message_id = ${data.messageId}
      AND (flags & ${MessageFlag.read}) = 0 AND ((flags & ${active}) = 0 OR ${journal.wasSending})`);
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
    await journal.markSent();
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
  return sendPushNotification(deps, { bouncer, activity }, job.data, jobJournal(job));
}

export const pushNotificationProcessor: JobProcessor<typeof JOB_QUEUES.pushNotification> = {
  queue: JOB_QUEUES.pushNotification,
  concurrency: 8,
  process: processPushNotification,
};
