// email: the emails Teamchat sends, each at most once.
//
// - invitation: an email invitation (users service, POST /invites and POST /invites/{id}/resend)
//   with the link that accepts it. Its job id names the invitation (and the resend), so a
//   repeated enqueue joins the job; a marker in Redis, set before sending, keeps a retried
//   job from sending it again.
// - missed-messages: a user's unread direct messages and mentions gathered while they were away
//   (message-notifications.ts), sent after their batching period (Zulip's
//   email_notifications_batching_period_seconds) as one email with links back. The job starts
//   the next batch (its number), takes the gathered one, drops what was read meanwhile, and
//   marks the batch sent before sending.
// - password-reset: the link asked for on the web service's form (Zulip's password_reset email),
//   made when it is sent (its age counts from then); an address without an active account in the
//   organisation is told so instead. Sent once per job, as an invitation.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import { makePasswordResetToken, MessageFlag, passwordResetPath, realmUrl } from '@teamchat/domain';
import {
  invitationEmail,
  passwordResetEmail,
  missedMessageEmail,
  mobilePushContent,
  notificationSettings,
  type MissedMessage,
} from '@teamchat/notifications';
import { missedMessageKeys, notificationContext } from './notifications-context';
import type { JobProcessor, WorkerDeps } from './processor';

type EmailJobData = JobData['email'];

/** How long "already sent" is remembered: longer than any retry of the job. */
const SENT_MARKER_TTL_SECONDS = 30 * 24 * 3600;

/** Marks a job's email as sent, once: its marker's key, or null when a run of the job sent it already. */
async function markSent(deps: WorkerDeps, job: Job<EmailJobData>): Promise<string | null> {
  const marker = `${deps.env.REDIS_PREFIX}notifications:email-sent:${job.id}`;
  return (await deps.redis.set(marker, '1', 'EX', SENT_MARKER_TTL_SECONDS, 'NX')) === null ? null : marker;
}

/** A Message-ID's right-hand side: the organisation's host without its port. */
const messageIdDomain = (realm: { host: string }) => realm.host.replace(/:\d+$/, '');

async function sendInvitation(
  deps: WorkerDeps,
  job: Job<EmailJobData>,
  data: Extract<EmailJobData, { kind: 'invitation' }>,
) {
  const invite = await deps.db.preregistrationUser.findUnique({
    where: { id: data.preregistrationId },
    include: { realm: true, referred_by: true },
  });
  // Revoked or used before the email went: nothing to invite to.
  if (!invite || invite.status !== 0) return 'skipped';
  const marker = await markSent(deps, job);
  if (marker === null) return 'already-sent';
  const url = realmUrl(invite.realm, deps.env.EXTERNAL_SCHEME);
  const email = invitationEmail({
    to: invite.email,
    inviterName: invite.referred_by.full_name,
    inviterEmail: invite.referred_by.delivery_email,
    realmName: invite.realm.name,
    realmUrl: url,
    activateUrl: `${url}/join/${invite.confirmation_key}/`,
    messageId: `<invitation-${invite.id}-${job.id}@${messageIdDomain(invite.realm)}>`,
    resend: data.resend,
  });
  await sendOrForget(deps, marker, email);
  return 'sent';
}

/** Sends; a failure before the SMTP server took it clears the marker so that the retry sends. */
async function sendOrForget(
  deps: WorkerDeps,
  marker: string,
  email: Parameters<ReturnType<typeof notificationContext>['mailer']['send']>[0],
) {
  try {
    await notificationContext(deps).mailer.send(email);
  } catch (error) {
    await deps.redis.del(marker);
    throw error;
  }
}

function conversationName(message: { stream: { name: string } | null; topic: string; participants: string[] }): string {
  if (message.stream) return `#${message.stream.name} > ${message.topic}`;
  return message.participants.length > 0
    ? `Direct messages with ${message.participants.join(', ')}`
    : 'Direct messages';
}

async function sendMissedMessages(deps: WorkerDeps, data: Extract<EmailJobData, { kind: 'missed-messages' }>) {
  const keys = missedMessageKeys(deps, data.userId, data.batch);
  // The next batch starts now: messages gathered from here on get their own job.
  const batchNow = Number((await deps.redis.get(keys.batch)) ?? 0);
  if (batchNow <= data.batch) await deps.redis.set(keys.batch, String(data.batch + 1));
  // Sent already (a job of this batch enqueued again after it ran): the gathered messages are the next batch's.
  if ((await deps.redis.exists(keys.sent)) === 1) {
    await deps.redis.del(keys.claimed);
    return 'already-sent';
  }
  // Take the gathered batch (a retried job finds it taken already).
  if ((await deps.redis.exists(keys.claimed)) === 0) {
    try {
      await deps.redis.rename(keys.pending, keys.claimed);
    } catch {
      return 'empty';
    }
  }
  const entries = await deps.redis.zrange(keys.claimed, 0, -1);
  const messageIds = [...new Set(entries.map((entry) => Number(entry.split(':')[0])))];
  const user = await deps.db.userProfile.findUnique({ where: { id: data.userId }, include: { realm: true } });
  const unread = user
    ? await deps.db.userMessage.findMany({
        where: { user_profile_id: user.id, message_id: { in: messageIds } },
        select: { message_id: true, flags: true },
      })
    : [];
  const stillUnread = unread.filter((row) => (row.flags & MessageFlag.read) === 0).map((row) => row.message_id);
  if (!user || !user.is_active || stillUnread.length === 0) {
    await deps.redis.del(keys.claimed);
    return 'nothing-unread';
  }
  const marker = keys.sent;
  if ((await deps.redis.set(marker, '1', 'EX', SENT_MARKER_TTL_SECONDS, 'NX')) === null) {
    await deps.redis.del(keys.claimed);
    return 'already-sent';
  }
  const messages = await deps.db.message.findMany({
    where: { id: { in: stillUnread } },
    orderBy: { id: 'asc' },
    include: { sender: { select: { full_name: true } }, stream: { select: { id: true, name: true } } },
  });
  const participantIds = [...new Set(messages.flatMap((m) => (m.dm_key ? m.dm_key.split(',').map(Number) : [])))];
  const names = new Map(
    (
      await deps.db.userProfile.findMany({
        where: { id: { in: participantIds } },
        select: { id: true, full_name: true },
      })
    ).map((row) => [row.id, row.full_name]),
  );
  const base = realmUrl(user.realm, deps.env.EXTERNAL_SCHEME);
  const withContent = notificationSettings(user).message_content_in_email_notifications;
  const missed: MissedMessage[] = messages.map((message) => {
    const others = (message.dm_key ? message.dm_key.split(',').map(Number) : []).filter((id) => id !== user.id);
    const narrow = message.stream
      ? `#narrow/channel/${message.stream.id}-${encodeURIComponent(message.stream.name)}/topic/${encodeURIComponent(message.topic)}/near/${message.id}`
      : `#narrow/dm/${[...others, user.id].sort((a, b) => a - b).join(',')}-dm/near/${message.id}`;
    return {
      id: message.id,
      senderName: message.sender.full_name,
      conversation: conversationName({
        stream: message.stream,
        topic: message.topic,
        participants: others.map((id) => names.get(id) ?? ''),
      }),
      content: withContent ? mobilePushContent(message.rendered_content ?? message.content) : null,
      url: `${base}/${narrow}`,
    };
  });
  const email = missedMessageEmail({
    to: user.delivery_email,
    realmName: user.realm.name,
    realmUrl: base,
    messages: missed,
    messageId: `<missed-${user.id}-${data.batch}@${messageIdDomain(user.realm)}>`,
  });
  await sendOrForget(deps, marker, email);
  await deps.redis.del(keys.claimed);
  return 'sent';
}

async function sendPasswordReset(
  deps: WorkerDeps,
  job: Job<EmailJobData>,
  data: Extract<EmailJobData, { kind: 'password-reset' }>,
) {
  const realm = await deps.db.realm.findUnique({ where: { id: data.realmId } });
  if (!realm) return 'skipped';
  const user = await deps.db.userProfile.findFirst({
    where: { realm_id: realm.id, delivery_email: data.email, is_bot: false },
    select: { id: true, password_hash: true, delivery_email: true, is_active: true },
  });
  const marker = await markSent(deps, job);
  if (marker === null) return 'already-sent';
  const url = realmUrl(realm, deps.env.EXTERNAL_SCHEME);
  const account = !user
    ? 'none'
    : !user.is_active
      ? 'deactivated'
      : {
          resetUrl: `${url}${passwordResetPath(user.id, makePasswordResetToken(deps.env.INTERNAL_JWT_SECRET, user))}`,
        };
  const email = passwordResetEmail({
    to: data.email,
    realmName: realm.name,
    realmUrl: url,
    account,
    messageId: `<password-reset-${job.id}@${messageIdDomain(realm)}>`,
  });
  await sendOrForget(deps, marker, email);
  return 'sent';
}

async function processEmail(job: Job<EmailJobData>, deps: WorkerDeps): Promise<string> {
  const data = job.data;
  if (data.kind === 'invitation') return sendInvitation(deps, job, data);
  if (data.kind === 'password-reset') return sendPasswordReset(deps, job, data);
  return sendMissedMessages(deps, data);
}

export const emailProcessor: JobProcessor<typeof JOB_QUEUES.email> = {
  queue: JOB_QUEUES.email,
  concurrency: 4,
  process: processEmail,
};
