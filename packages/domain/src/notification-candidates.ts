// Who could be notified of a message (Zulip's get_recipient_info sets, before the rules of
// packages/notifications triggers.ts): an unread recipient other than the sender who is
// mentioned (personally, by a group or a wildcard), or, in a channel, has channel notifications
// on (by the subscription or their own default) or follows the topic. Two readers must agree
// on it: a send enqueues the notification job only when someone could be notified, and the job
// reads these candidates' facts. Everyone else is left out of both, which keeps a message to a
// channel of thousands from loading everyone's settings, or queueing a job for nobody.

import { MessageFlag } from './messages';

/** user_topic.visibility_policy */
export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;

/** The user_message flags that make a recipient a candidate by themselves. */
const MENTION_FLAGS =
  MessageFlag.mentioned | MessageFlag.stream_wildcard_mentioned | MessageFlag.topic_wildcard_mentioned;

/**
 * SQL: whether a channel recipient could be notified without a mention, over `s` (their
 * subscription row, null when they have none), for the recipient, channel and topic given as SQL
 * expressions. Null counts as no. The users whose own defaults turn channel notifications on
 * come from a partial index over exactly this predicate (migration 20261128100000), not from
 * reading every recipient's settings.
 */
export function channelNotifiableSql(userId: string, streamId: string, topic: string): string {
  return `(s.push_notifications OR s.email_notifications
    OR ${userId} IN (SELECT d.id FROM user_profile d
                     WHERE d.realm_id = (SELECT realm_id FROM stream WHERE id = ${streamId}) AND d.is_active
                       AND (d.settings->>'enable_stream_push_notifications' = 'true'
                            OR d.settings->>'enable_stream_email_notifications' = 'true'))
    OR ${userId} IN (SELECT t.user_profile_id FROM user_topic t WHERE t.stream_id = ${streamId}
                     AND lower(t.topic_name) = lower(${topic}) AND t.visibility_policy = ${VisibilityPolicy.FOLLOWED}))`;
}

/**
 * Whether a recipient (not the sender) with these user_message flags could be notified.
 * `notifiableUnmentioned`: true for a direct message; for a channel message, what
 * channelNotifiableSql says of them.
 */
export function mayBeNotified(flags: number, notifiableUnmentioned: boolean): boolean {
  return (flags & MessageFlag.read) === 0 && ((flags & MENTION_FLAGS) !== 0 || notifiableUnmentioned);
}

/** mayBeNotified in SQL, over SQL expressions of the flags and of `notifiableUnmentioned`. */
export function mayBeNotifiedSql(flags: string, notifiableUnmentioned: string): string {
  return `((${flags} & ${MessageFlag.read}) = 0 AND ((${flags} & ${MENTION_FLAGS}) <> 0 OR ${notifiableUnmentioned}))`;
}
