// message-notifications: who may get a push notification or an email for a message just sent.
//
// The messages service enqueues it after the send commits. The rules are Zulip's
// (packages/notifications triggers.ts), with "idle" read from the event queues and presence
// (activity.ts). Pushes are one job per user (push-notification, idempotent per message and
// user), delayed by PUSH_NOTIFICATION_DELAY_MS: a user who is reading gets the message on their
// client and may read it meanwhile, and whether they are idle is decided then. Emails are
// gathered into the user's missed-message batch, sent by one email job after the user's
// batching period.
//
// A retried or duplicated job adds nothing twice: push jobs have the message and user as their
// id and check the user_message flag; a batch is a set keyed by message.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import { notificationSettings, notificationTrigger, mayNotify, messageRecipientFacts } from '@teamchat/notifications';
import { missedMessageKeys, notificationContext } from './notifications-context';
import type { JobProcessor, WorkerDeps } from './processor';

type MessageNotificationsJobData = JobData['message-notifications'];

/** How long a gathered batch may wait in Redis before it is dropped (a lost email job). */
const BATCH_TTL_SECONDS = 7 * 24 * 3600;

export const PUSH_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: 1000,
} as const;

async function processMessageNotifications(job: Job<MessageNotificationsJobData>, deps: WorkerDeps) {
  const context = notificationContext(deps);
  const read = await messageRecipientFacts(deps.db, job.data.messageId, job.data.onlyUserIds);
  if (!read) {
    // A message sent inside a longer transaction (a scheduled message's delivery) is enqueued
    // before its COMMIT: look again a few times before taking it as deleted.
    if (job.attemptsMade < 3) throw new Error(`message ${job.data.messageId} is not visible yet`);
    return { pushes: 0, emails: 0 };
  }
  const { message } = read;
  const candidates = read.facts.filter((facts) => mayNotify(facts, message.sender_id));
  if (candidates.length === 0) return { pushes: 0, emails: 0 };
  const userIds = candidates.map((facts) => facts.userId);
  // Email is for users away now (their batch waits its period anyway); push waits
  // PUSH_NOTIFICATION_DELAY_MS and decides then (push-notification.ts).
  const emailCandidates = candidates
    .filter((facts) => notificationTrigger(facts, message.sender_id, 'email', true) !== null)
    .map((facts) => facts.userId);
  const [idle, devices, users] = await Promise.all([
    context.activity.idleUserIds(emailCandidates),
    context.bouncer
      ? deps.db.pushDeviceToken.findMany({
          where: { user_profile_id: { in: userIds } },
          select: { user_profile_id: true },
          distinct: ['user_profile_id'],
        })
      : Promise.resolve([]),
    deps.db.userProfile.findMany({
      where: { id: { in: userIds } },
      select: { id: true, settings: true, timezone: true, default_language: true, email_address_visibility: true },
    }),
  ]);
  const withDevices = new Set(devices.map((row) => row.user_profile_id));
  const periodOf = new Map(
    users.map((user) => [user.id, notificationSettings(user).email_notifications_batching_period_seconds]),
  );
  const pushes: { userId: number; trigger: string }[] = [];
  const emails: { userId: number; trigger: string }[] = [];
  for (const facts of candidates) {
    const isIdle = idle.has(facts.userId);
    if (withDevices.has(facts.userId)) {
      const trigger = notificationTrigger(facts, message.sender_id, 'push', true);
      if (trigger) pushes.push({ userId: facts.userId, trigger });
    }
    const emailTrigger = notificationTrigger(facts, message.sender_id, 'email', isIdle);
    if (emailTrigger) emails.push({ userId: facts.userId, trigger: emailTrigger });
  }

  if (pushes.length > 0) {
    await deps.jobs.queue(JOB_QUEUES.pushNotification).addBulk(
      pushes.map(({ userId, trigger }) => ({
        name: JOB_QUEUES.pushNotification,
        data: { realmId: message.realm_id, userId, messageId: message.id, trigger },
        opts: {
          jobId: `push-${message.id}-${userId}`,
          delay: deps.config.PUSH_NOTIFICATION_DELAY_MS,
          ...PUSH_JOB_OPTIONS,
        },
      })),
    );
  }
  for (const { userId, trigger } of emails) {
    // Into the batch first, then the batch's number: an email job takes the number before the
    // batch, so this message is either in the batch it takes or in the next one, whose job this adds.
    const keys = missedMessageKeys(deps, userId);
    await deps.redis.zadd(keys.pending, message.id, `${message.id}:${trigger}`);
    await deps.redis.expire(keys.pending, BATCH_TTL_SECONDS);
    const batch = Number((await deps.redis.get(keys.batch)) ?? 0);
    await deps.jobs.queue(JOB_QUEUES.email).add(
      JOB_QUEUES.email,
      { kind: 'missed-messages', realmId: message.realm_id, userId, batch },
      {
        jobId: `missed-messages-${userId}-${batch}`,
        delay: (periodOf.get(userId) ?? 120) * 1000,
        attempts: 10,
        backoff: { type: 'exponential', delay: 2000 },
        removeOnComplete: true,
        removeOnFail: 1000,
      },
    );
  }
  return { pushes: pushes.length, emails: emails.length };
}

export const messageNotificationsProcessor: JobProcessor<typeof JOB_QUEUES.messageNotifications> = {
  queue: JOB_QUEUES.messageNotifications,
  concurrency: 8,
  process: processMessageNotifications,
};
