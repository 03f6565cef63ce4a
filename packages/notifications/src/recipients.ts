// The inputs of the notification rules (triggers.ts) for one message, from the database: its
// unread recipients other than the sender, their settings, subscription overrides, the topic's
// visibility policy and whether they muted the sender.

import { queryRows, type Db, type Message } from '@teamchat/db';
import { channelNotifiableSql, MessageFlag, mayBeNotifiedSql, userSettings, VisibilityPolicy } from '@teamchat/domain';
import type { NotificationSettings, RecipientFacts } from './triggers';

/** What the notification jobs need of the message itself. */
export type NotifiedMessage = Pick<Message, 'id' | 'realm_id' | 'sender_id' | 'stream_id' | 'topic'>;

// What the rules need of the message, then its unread recipients other than the sender (or only
// those of $3) whom the rules could notify (packages/domain notification-candidates.ts: for a
// channel message, only those mentioned, following the topic, or with channel notifications on).
// Named statements on the pool: they run for most messages that concern someone, and through
// Prisma its engine cost a millisecond of CPU each. The message's rows are read first (OFFSET 0
// keeps the planner from merging the subquery): with the flags test beside message_id,
// PostgreSQL chose the partial unread index (user_profile_id, message_id) and read all of it for
// the one message, every unread row of every user: 29 ms at 1.5 million rows, growing with the
// table.
const MESSAGE = 'SELECT id, realm_id, sender_id, stream_id, topic FROM message WHERE id = $1';
const candidates = (channelJoins: string, notifiableUnmentioned: string) => `
  SELECT coalesce(json_agg(json_build_array(um.user_profile_id, um.flags)), '[]') AS unread
  FROM (SELECT user_profile_id, flags FROM user_message WHERE message_id = $1 OFFSET 0) um ${channelJoins}
  WHERE um.user_profile_id <> $2
    AND ${mayBeNotifiedSql('um.flags', notifiableUnmentioned)}
    AND ($3::int[] IS NULL OR um.user_profile_id = ANY($3::int[]))`;
const UNREAD = candidates('', 'true');
const CHANNEL_UNREAD = candidates(
  'LEFT JOIN subscription s ON s.user_profile_id = um.user_profile_id AND s.stream_id = $4',
  channelNotifiableSql('um.user_profile_id', '$4', '$5'),
);

/**
 * The message and its unread recipients (not the sender; of `onlyUserIds` when given) the rules
 * could notify, with what the rules need; null when the message is gone.
 */
export async function messageRecipientFacts(
  db: Db,
  messageId: number,
  onlyUserIds?: number[],
): Promise<{ message: NotifiedMessage; facts: RecipientFacts[] } | null> {
  const [message] = await queryRows<NotifiedMessage>(db, 'notified_message', MESSAGE, [messageId]);
  if (!message) return null;
  const only = onlyUserIds ?? null;
  const [{ unread }] =
    message.stream_id === null
      ? await queryRows<{ unread: [number, number][] }>(db, 'notification_candidates_direct', UNREAD, [
          message.id,
          message.sender_id,
          only,
        ])
      : await queryRows<{ unread: [number, number][] }>(db, 'notification_candidates_channel', CHANNEL_UNREAD, [
          message.id,
          message.sender_id,
          only,
          message.stream_id,
          message.topic,
        ]);
  return { message, facts: await recipientFacts(db, message, unread) };
}

async function recipientFacts(
  db: Db,
  message: NotifiedMessage,
  unread: [userId: number, flags: number][],
): Promise<RecipientFacts[]> {
  if (unread.length === 0) return [];
  const userIds = unread.map(([userId]) => userId);
  const [users, muters, subscriptions, topics] = await Promise.all([
    db.userProfile.findMany({
      where: { id: { in: userIds }, is_active: true },
      select: {
        id: true,
        is_bot: true,
        settings: true,
        timezone: true,
        default_language: true,
        email_address_visibility: true,
      },
    }),
    db.mutedUser.findMany({
      where: { muted_user_id: message.sender_id, user_profile_id: { in: userIds } },
      select: { user_profile_id: true },
    }),
    message.stream_id === null
      ? Promise.resolve([])
      : db.subscription.findMany({
          where: { stream_id: message.stream_id, user_profile_id: { in: userIds }, active: true },
          select: {
            user_profile_id: true,
            is_muted: true,
            push_notifications: true,
            email_notifications: true,
            wildcard_mentions_notify: true,
          },
        }),
    message.stream_id === null
      ? Promise.resolve([])
      : db.userTopic.findMany({
          where: {
            stream_id: message.stream_id,
            user_profile_id: { in: userIds },
            topic_name: { equals: message.topic, mode: 'insensitive' },
          },
          select: { user_profile_id: true, visibility_policy: true },
        }),
  ]);
  const flagsOf = new Map(unread);
  const muting = new Set(muters.map((row) => row.user_profile_id));
  const subscriptionOf = new Map(subscriptions.map((row) => [row.user_profile_id, row]));
  const policyOf = new Map(topics.map((row) => [row.user_profile_id, row.visibility_policy]));
  return users.map((user) => {
    const flags = flagsOf.get(user.id)!;
    const subscription = subscriptionOf.get(user.id);
    return {
      userId: user.id,
      isBot: user.is_bot,
      settings: notificationSettings(user),
      channel:
        message.stream_id === null
          ? null
          : {
              // A recipient without a subscription (a mentioned bot) inherits every setting.
              streamMuted: subscription?.is_muted ?? false,
              visibilityPolicy: policyOf.get(user.id) ?? VisibilityPolicy.INHERIT,
              pushNotifications: subscription?.push_notifications ?? null,
              emailNotifications: subscription?.email_notifications ?? null,
              wildcardMentionsNotify: subscription?.wildcard_mentions_notify ?? null,
            },
      mentioned: (flags & MessageFlag.mentioned) !== 0,
      streamWildcardMentioned: (flags & MessageFlag.stream_wildcard_mentioned) !== 0,
      topicWildcardMentioned: (flags & MessageFlag.topic_wildcard_mentioned) !== 0,
      senderMuted: muting.has(user.id),
    };
  });
}

export function notificationSettings(user: Parameters<typeof userSettings>[0]): NotificationSettings & {
  email_notifications_batching_period_seconds: number;
  message_content_in_email_notifications: boolean;
} {
  const settings = userSettings(user);
  return {
    enable_offline_push_notifications: settings.enable_offline_push_notifications,
    enable_online_push_notifications: settings.enable_online_push_notifications,
    enable_offline_email_notifications: settings.enable_offline_email_notifications,
    enable_stream_push_notifications: settings.enable_stream_push_notifications,
    enable_stream_email_notifications: settings.enable_stream_email_notifications,
    wildcard_mentions_notify: settings.wildcard_mentions_notify,
    enable_followed_topic_push_notifications: settings.enable_followed_topic_push_notifications,
    enable_followed_topic_email_notifications: settings.enable_followed_topic_email_notifications,
    enable_followed_topic_wildcard_mentions_notify: settings.enable_followed_topic_wildcard_mentions_notify,
    email_notifications_batching_period_seconds: settings.email_notifications_batching_period_seconds,
    message_content_in_email_notifications: settings.message_content_in_email_notifications,
  };
}
