// Zulip's notification rules as a table (zerver/tests/test_notification_data.py covers the same
// ground): who gets a push notification or an email, and why.
import {
  NotificationTrigger as T,
  notificationTrigger,
  USER_SETTING_DEFAULTS_FOR_TESTS,
  VisibilityPolicy,
  type RecipientFacts,
} from './support';

const SENDER = 1;

function recipient(
  overrides: Partial<Omit<RecipientFacts, 'settings'>> & { settings?: Partial<RecipientFacts['settings']> } = {},
): RecipientFacts {
  const { settings, ...rest } = overrides;
  return {
    userId: 2,
    isBot: false,
    channel: null,
    mentioned: false,
    streamWildcardMentioned: false,
    topicWildcardMentioned: false,
    senderMuted: false,
    ...rest,
    settings: { ...USER_SETTING_DEFAULTS_FOR_TESTS, ...settings },
  };
}

const channel = (overrides: Partial<NonNullable<RecipientFacts['channel']>> = {}) => ({
  streamMuted: false,
  visibilityPolicy: VisibilityPolicy.INHERIT,
  pushNotifications: null,
  emailNotifications: null,
  wildcardMentionsNotify: null,
  ...overrides,
});

type Case = [string, RecipientFacts, { push: string | null; email: string | null; pushWhileActive?: string | null }];

const CASES: Case[] = [
  [
    'direct message',
    recipient(),
    { push: T.DIRECT_MESSAGE, email: T.DIRECT_MESSAGE, pushWhileActive: T.DIRECT_MESSAGE },
  ],
  [
    'direct message, offline push off',
    recipient({ settings: { enable_offline_push_notifications: false } }),
    { push: null, email: T.DIRECT_MESSAGE },
  ],
  [
    'direct message, online push off: pushed only while idle',
    recipient({ settings: { enable_online_push_notifications: false } }),
    { push: T.DIRECT_MESSAGE, email: T.DIRECT_MESSAGE, pushWhileActive: null },
  ],
  [
    'direct message, offline email off',
    recipient({ settings: { enable_offline_email_notifications: false } }),
    { push: T.DIRECT_MESSAGE, email: null },
  ],
  ['from the recipient themself', recipient({ userId: SENDER }), { push: null, email: null }],
  ['to a bot', recipient({ isBot: true }), { push: null, email: null }],
  ['from a muted user', recipient({ senderMuted: true }), { push: null, email: null }],
  ['channel message, no mention', recipient({ channel: channel() }), { push: null, email: null }],
  ['personal mention', recipient({ channel: channel(), mentioned: true }), { push: T.MENTION, email: T.MENTION }],
  [
    'personal mention in a muted topic still notifies',
    recipient({ channel: channel({ visibilityPolicy: VisibilityPolicy.MUTED }), mentioned: true }),
    { push: T.MENTION, email: T.MENTION },
  ],
  [
    'personal mention, offline push off',
    recipient({ channel: channel(), mentioned: true, settings: { enable_offline_push_notifications: false } }),
    { push: null, email: T.MENTION },
  ],
  [
    'channel wildcard mention',
    recipient({ channel: channel(), streamWildcardMentioned: true }),
    { push: T.STREAM_WILDCARD_MENTION, email: T.STREAM_WILDCARD_MENTION },
  ],
  [
    'channel wildcard mention, wildcard_mentions_notify off',
    recipient({ channel: channel(), streamWildcardMentioned: true, settings: { wildcard_mentions_notify: false } }),
    { push: null, email: null },
  ],
  [
    'channel wildcard mention, the subscription turns wildcards back on',
    recipient({
      channel: channel({ wildcardMentionsNotify: true }),
      streamWildcardMentioned: true,
      settings: { wildcard_mentions_notify: false },
    }),
    { push: T.STREAM_WILDCARD_MENTION, email: T.STREAM_WILDCARD_MENTION },
  ],
  [
    'channel wildcard mention in a muted channel',
    recipient({ channel: channel({ streamMuted: true }), streamWildcardMentioned: true }),
    { push: null, email: null },
  ],
  [
    'topic wildcard mention',
    recipient({ channel: channel(), topicWildcardMentioned: true }),
    { push: T.TOPIC_WILDCARD_MENTION, email: T.TOPIC_WILDCARD_MENTION },
  ],
  [
    'wildcard mention in a followed topic',
    recipient({ channel: channel({ visibilityPolicy: VisibilityPolicy.FOLLOWED }), streamWildcardMentioned: true }),
    { push: T.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC, email: T.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC },
  ],
  [
    'topic wildcard mention in a followed topic',
    recipient({ channel: channel({ visibilityPolicy: VisibilityPolicy.FOLLOWED }), topicWildcardMentioned: true }),
    { push: T.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC, email: T.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC },
  ],
  [
    'followed topic',
    recipient({ channel: channel({ visibilityPolicy: VisibilityPolicy.FOLLOWED }) }),
    { push: T.FOLLOWED_TOPIC, email: T.FOLLOWED_TOPIC },
  ],
  [
    'followed topic, followed-topic push off',
    recipient({
      channel: channel({ visibilityPolicy: VisibilityPolicy.FOLLOWED }),
      settings: { enable_followed_topic_push_notifications: false },
    }),
    { push: null, email: T.FOLLOWED_TOPIC },
  ],
  [
    'followed topic in a muted channel',
    recipient({ channel: channel({ streamMuted: true, visibilityPolicy: VisibilityPolicy.FOLLOWED }) }),
    { push: T.FOLLOWED_TOPIC, email: T.FOLLOWED_TOPIC },
  ],
  [
    'channel with push on (subscription)',
    recipient({ channel: channel({ pushNotifications: true }) }),
    { push: T.STREAM, email: null },
  ],
  [
    'channel with push and email on (user defaults)',
    recipient({
      channel: channel(),
      settings: { enable_stream_push_notifications: true, enable_stream_email_notifications: true },
    }),
    { push: T.STREAM, email: T.STREAM },
  ],
  [
    'channel push on, the subscription turns it off',
    recipient({ channel: channel({ pushNotifications: false }), settings: { enable_stream_push_notifications: true } }),
    { push: null, email: null },
  ],
  [
    'channel push on, topic muted',
    recipient({ channel: channel({ pushNotifications: true, visibilityPolicy: VisibilityPolicy.MUTED }) }),
    { push: null, email: null },
  ],
  [
    'channel push on, channel muted',
    recipient({ channel: channel({ pushNotifications: true, streamMuted: true }) }),
    { push: null, email: null },
  ],
  [
    'channel push on, channel muted, topic unmuted',
    recipient({
      channel: channel({ pushNotifications: true, streamMuted: true, visibilityPolicy: VisibilityPolicy.UNMUTED }),
    }),
    { push: T.STREAM, email: null },
  ],
  [
    'mention wins over channel push',
    recipient({ channel: channel({ pushNotifications: true }), mentioned: true }),
    { push: T.MENTION, email: T.MENTION },
  ],
];

test.each(CASES)('%s', (_name, facts, expected) => {
  expect(notificationTrigger(facts, SENDER, 'push', true)).toBe(expected.push);
  expect(notificationTrigger(facts, SENDER, 'email', true)).toBe(expected.email);
  // Not idle: no email ever; push only with enable_online_push_notifications.
  expect(notificationTrigger(facts, SENDER, 'email', false)).toBeNull();
  const whileActive = expected.pushWhileActive !== undefined ? expected.pushWhileActive : expected.push;
  expect(notificationTrigger(facts, SENDER, 'push', false)).toBe(whileActive);
});
