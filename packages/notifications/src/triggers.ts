// Who gets a push notification or an email for a message, and why: Zulip's
// zerver/lib/notification_data.py (UserMessageNotificationsData) with the per-recipient sets
// get_recipient_info computes (zerver/actions/message_send.py). Pure rules, so they can be
// tested as a table; recipients.ts gathers their inputs from the database.

import { VisibilityPolicy } from '@teamchat/domain';

/** Zulip's NotificationTriggers, most salient first (that order picks the trigger). */
export const NotificationTrigger = {
  DIRECT_MESSAGE: 'direct_message',
  MENTION: 'mentioned',
  TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC: 'topic_wildcard_mentioned_in_followed_topic',
  STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC: 'stream_wildcard_mentioned_in_followed_topic',
  TOPIC_WILDCARD_MENTION: 'topic_wildcard_mentioned',
  STREAM_WILDCARD_MENTION: 'stream_wildcard_mentioned',
  FOLLOWED_TOPIC: 'followed_topic',
  STREAM: 'stream',
} as const;

export type NotificationTriggerName = (typeof NotificationTrigger)[keyof typeof NotificationTrigger];

/** The user settings the rules read (Zulip's UserBaseSettings). */
export interface NotificationSettings {
  enable_offline_push_notifications: boolean;
  enable_online_push_notifications: boolean;
  enable_offline_email_notifications: boolean;
  enable_stream_push_notifications: boolean;
  enable_stream_email_notifications: boolean;
  wildcard_mentions_notify: boolean;
  enable_followed_topic_push_notifications: boolean;
  enable_followed_topic_email_notifications: boolean;
  enable_followed_topic_wildcard_mentions_notify: boolean;
}

/** One recipient of a channel message: their subscription's overrides (null: the user's setting) and the topic's policy. */
export interface ChannelRecipient {
  streamMuted: boolean;
  visibilityPolicy: number;
  pushNotifications: boolean | null;
  emailNotifications: boolean | null;
  wildcardMentionsNotify: boolean | null;
}

export interface RecipientFacts {
  userId: number;
  isBot: boolean;
  settings: NotificationSettings;
  /** null for a direct message. */
  channel: ChannelRecipient | null;
  /** user_message flags. */
  mentioned: boolean;
  streamWildcardMentioned: boolean;
  topicWildcardMentioned: boolean;
  /** The recipient muted the sender. */
  senderMuted: boolean;
}

/** Zulip's user_allows_notifications_in_StreamTopic. */
export function allowsNotificationsInTopic(
  streamMuted: boolean,
  visibilityPolicy: number,
  channelSetting: boolean | null,
  userSetting: boolean,
): boolean {
  if (visibilityPolicy === VisibilityPolicy.MUTED) return false;
  if (streamMuted && visibilityPolicy !== VisibilityPolicy.UNMUTED && visibilityPolicy !== VisibilityPolicy.FOLLOWED) {
    return false;
  }
  return channelSetting ?? userSetting;
}

type Medium = 'push' | 'email';

/**
 * The reason `recipient` gets a notification by `medium`, or null. `idle`: the recipient has no
 * client receiving messages now (Zulip's receiver_is_off_zulip or presence idle): email needs
 * it; push needs it unless enable_online_push_notifications.
 */
export function notificationTrigger(
  recipient: RecipientFacts,
  senderId: number,
  medium: Medium,
  idle: boolean,
): NotificationTriggerName | null {
  const { settings, channel } = recipient;
  if (recipient.isBot || recipient.userId === senderId || recipient.senderMuted) return null;
  if (medium === 'email' && !idle) return null;
  if (medium === 'push' && !idle && !settings.enable_online_push_notifications) return null;

  // Direct messages and mentions follow the "offline" setting of the medium.
  const personal =
    medium === 'push' ? settings.enable_offline_push_notifications : settings.enable_offline_email_notifications;
  if (channel === null) return personal ? NotificationTrigger.DIRECT_MESSAGE : null;
  if (personal && recipient.mentioned) return NotificationTrigger.MENTION;

  const followed = channel.visibilityPolicy === VisibilityPolicy.FOLLOWED;
  const wildcardsNotify = allowsNotificationsInTopic(
    channel.streamMuted,
    channel.visibilityPolicy,
    channel.wildcardMentionsNotify,
    settings.wildcard_mentions_notify,
  );
  const followedWildcardsNotify = followed && settings.enable_followed_topic_wildcard_mentions_notify;
  if (personal) {
    if (recipient.topicWildcardMentioned && followedWildcardsNotify) {
      return NotificationTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC;
    }
    if (recipient.streamWildcardMentioned && followedWildcardsNotify) {
      return NotificationTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC;
    }
    if (recipient.topicWildcardMentioned && wildcardsNotify) return NotificationTrigger.TOPIC_WILDCARD_MENTION;
    if (recipient.streamWildcardMentioned && wildcardsNotify) return NotificationTrigger.STREAM_WILDCARD_MENTION;
  }
  const followedSetting =
    medium === 'push'
      ? settings.enable_followed_topic_push_notifications
      : settings.enable_followed_topic_email_notifications;
  if (followed && followedSetting) return NotificationTrigger.FOLLOWED_TOPIC;
  const channelAllows = allowsNotificationsInTopic(
    channel.streamMuted,
    channel.visibilityPolicy,
    medium === 'push' ? channel.pushNotifications : channel.emailNotifications,
    medium === 'push' ? settings.enable_stream_push_notifications : settings.enable_stream_email_notifications,
  );
  return channelAllows ? NotificationTrigger.STREAM : null;
}

/** Whether the recipient would get a notification by any medium if they were idle: who is worth a look. */
export function mayNotify(recipient: RecipientFacts, senderId: number): boolean {
  return (
    notificationTrigger(recipient, senderId, 'push', true) !== null ||
    notificationTrigger(recipient, senderId, 'email', true) !== null
  );
}
