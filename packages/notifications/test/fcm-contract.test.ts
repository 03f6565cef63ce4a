// The FCM payloads we hand the bouncer, as the official mobile app parses them. The parser below
// follows zulip-flutter's lib/api/notifications.dart and its generated notifications.g.dart
// (commit e989e4f, 2026-08-18): LegacyFcmMessage.fromJson picks the class by `event`;
// MessageLegacyFcmMessage needs realm_url (or realm_uri), user_id, sender_id,
// sender_avatar_url, sender_full_name, zulip_message_id, content and time, all strings (FCM data
// values are strings), ints in base 10, plus the recipient: stream_id (and stream, topic) for a
// channel, pm_users for a group DM, or nothing more for a 1:1 DM (sender_id and user_id name
// it); RemoveLegacyFcmMessage needs realm_url, user_id and zulip_message_ids ("1,2,3").
import { renderMessageMarkdown } from '@teamchat/domain';
import {
  fcmData,
  messagePayloadApns,
  messagePayloadGcm,
  mobilePushContent,
  NotificationTrigger,
  removePayloadApns,
  removePayloadGcm,
  truncateContent,
  type PayloadContext,
  type PayloadMessage,
} from '../src';

function str(json: Record<string, unknown>, key: string): string {
  const value = json[key];
  if (typeof value !== 'string') throw new Error(`${key}: expected a String, got ${JSON.stringify(value)}`);
  return value;
}
function optionalStr(json: Record<string, unknown>, key: string): string | null {
  return json[key] === undefined || json[key] === null ? null : str(json, key);
}
function int(json: Record<string, unknown>, key: string): number {
  const value = str(json, key);
  if (!/^[+-]?\d+$/.test(value)) throw new Error(`${key}: not an int: ${value}`);
  return parseInt(value, 10);
}
function uri(value: string): string {
  return new URL(value).toString();
}
const intList = (value: string) =>
  value.split(',').map((part) => {
    if (!/^[+-]?\d+$/.test(part)) throw new Error(`not an int: ${part}`);
    return parseInt(part, 10);
  });

/** zulip-flutter's LegacyFcmMessage.fromJson, field for field. */
function parseLegacyFcmMessage(json: Record<string, unknown>) {
  const identity = () => ({
    realmUrl: uri(String(json.realm_url ?? json.realm_uri)),
    realmName: optionalStr(json, 'realm_name'),
    userId: int(json, 'user_id'),
  });
  switch (json.event) {
    case 'message': {
      let recipient;
      if ('stream_id' in json) {
        recipient = {
          channelId: int(json, 'stream_id'),
          channelName: optionalStr(json, 'stream'),
          topic: str(json, 'topic'),
        };
      } else if (typeof json.pm_users === 'string') {
        recipient = { allRecipientIds: intList(json.pm_users) };
      } else if (typeof json.sender_id === 'string' && typeof json.user_id === 'string') {
        recipient = {
          allRecipientIds: [...new Set([int(json, 'sender_id'), int(json, 'user_id')])].sort((a, b) => a - b),
        };
      } else {
        throw new Error('bad recipient');
      }
      return {
        type: 'message' as const,
        ...identity(),
        senderId: int(json, 'sender_id'),
        senderAvatarUrl: uri(str(json, 'sender_avatar_url')),
        senderFullName: str(json, 'sender_full_name'),
        recipient,
        messageId: int(json, 'zulip_message_id'),
        content: str(json, 'content'),
        time: int(json, 'time'),
      };
    }
    case 'remove':
      return { type: 'remove' as const, ...identity(), messageIds: intList(str(json, 'zulip_message_ids')) };
    default:
      return { type: 'unexpected' as const };
  }
}

const context: PayloadContext = {
  realm: { id: 3, host: 'chat.example.com', name: 'Example Org' },
  scheme: 'https',
  user: { id: 12 },
};
const sender = {
  id: 7,
  email: 'alice@example.com',
  full_name: 'Alice Liddell',
  avatar_source: 'G',
  avatar_key: null,
  delivery_email: 'alice@example.com',
  avatar_version: 1,
  realm_id: 3,
};
const date = new Date('2026-11-26T12:00:00Z');

function message(overrides: Partial<PayloadMessage>): PayloadMessage {
  return {
    message: {
      id: 1001,
      stream_id: null,
      topic: '',
      dm_key: '7,12',
      content: 'hi',
      rendered_content:
        '<p>Hello <strong>there</strong> &amp; welcome <span aria-label="wave" class="emoji emoji-1f44b" role="img" title="wave">:wave:</span></p>',
      date_sent: date,
    },
    sender,
    stream: null,
    participants: [
      { id: 7, full_name: 'Alice Liddell' },
      { id: 12, full_name: 'Bob' },
    ],
    trigger: NotificationTrigger.DIRECT_MESSAGE,
    ...overrides,
  };
}

test('a 1:1 direct message: the app parses every field', () => {
  const [gcm, options] = messagePayloadGcm(context, message({}));
  expect(options).toEqual({ priority: 'high' });
  const parsed = parseLegacyFcmMessage(fcmData(gcm));
  expect(parsed).toEqual({
    type: 'message',
    realmUrl: 'https://chat.example.com/',
    realmName: 'Example Org',
    userId: 12,
    senderId: 7,
    senderAvatarUrl: expect.stringMatching(
      /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/,
    ),
    senderFullName: 'Alice Liddell',
    recipient: { allRecipientIds: [7, 12] },
    messageId: 1001,
    content: 'Hello there & welcome 👋',
    time: Math.floor(date.getTime() / 1000),
  });
  expect(gcm).toMatchObject({
    recipient_type: 'private',
    event: 'message',
    content_truncated: false,
    server: 'chat.example.com',
  });
  expect(gcm).not.toHaveProperty('pm_users');
});

test('a group direct message carries pm_users', () => {
  const participants = [
    { id: 7, full_name: 'Alice Liddell' },
    { id: 12, full_name: 'Bob' },
    { id: 9, full_name: 'Carol' },
  ];
  const data = message({ participants, message: { ...message({}).message, dm_key: '7,9,12' } });
  const parsed = parseLegacyFcmMessage(fcmData(messagePayloadGcm(context, data)[0]));
  expect(parsed).toMatchObject({ type: 'message', recipient: { allRecipientIds: [7, 9, 12] } });
  const apns = messagePayloadApns(context, data);
  expect(apns.alert).toEqual({
    title: 'Alice Liddell, Bob, Carol',
    subtitle: 'Alice Liddell:',
    body: 'Hello there & welcome 👋',
  });
});

test('a channel message names the channel and topic; APNs has the alert Zulip builds', () => {
  const data = message({
    stream: { id: 5, name: 'general' },
    message: { ...message({}).message, stream_id: 5, topic: 'lunch', dm_key: null },
    participants: [],
    trigger: NotificationTrigger.MENTION,
  });
  const gcm = messagePayloadGcm(context, data)[0];
  expect(parseLegacyFcmMessage(fcmData(gcm))).toMatchObject({
    type: 'message',
    recipient: { channelId: 5, channelName: 'general', topic: 'lunch' },
  });
  expect(gcm.recipient_type).toBe('stream');
  const apns = messagePayloadApns(context, data);
  expect(apns).toMatchObject({
    alert: { title: '#general > lunch', subtitle: 'Alice Liddell mentioned you:' },
    sound: 'default',
    badge: 0,
    custom: {
      zulip: { message_ids: [1001], stream_id: 5, topic: 'lunch', user_id: 12, realm_url: 'https://chat.example.com' },
    },
  });
});

test('a removal: the app parses the message ids', () => {
  const [gcm, options] = removePayloadGcm(context, [1001, 1003]);
  expect(options).toEqual({ priority: 'normal' });
  expect(parseLegacyFcmMessage(fcmData(gcm))).toEqual({
    type: 'remove',
    realmUrl: 'https://chat.example.com/',
    realmName: 'Example Org',
    userId: 12,
    messageIds: [1001, 1003],
  });
  expect(removePayloadApns(context, [1001, 1003])).toEqual({
    badge: 0,
    custom: { zulip: expect.objectContaining({ event: 'remove', zulip_message_ids: '1001,1003', user_id: 12 }) },
  });
});

test('a payload missing what the app needs does not parse (the parser checks)', () => {
  const gcm = fcmData(messagePayloadGcm(context, message({}))[0]);
  for (const key of ['user_id', 'sender_avatar_url', 'zulip_message_id', 'content', 'time']) {
    const { [key]: _dropped, ...rest } = gcm;
    expect(() => parseLegacyFcmMessage(rest)).toThrow();
  }
});

test("content: Zulip's plain text of the rendered message, 200 characters at most", () => {
  expect(mobilePushContent('<blockquote>\n<p>quoted</p>\n</blockquote>\n<p>reply</p>')).toBe('> quoted\n\nreply');
  expect(mobilePushContent('<p><img alt=":party:" src="/x.png"> <a href="https://x.example">link</a></p>')).toBe(
    ':party: link',
  );
  expect(mobilePushContent('<ol start="3">\n<li>one</li>\n<li>two</li>\n</ol>')).toBe('3. one\n4. two');
  // Math reads as its TeX, as in Zulip's test_message_notification_emails.
  const math = renderMessageMarkdown('Equation: $$d^* = +\\infty$$ is correct.\n\n```math\na < b\n```', {
    usersByName: new Map(),
    usersById: new Map(),
    groupsByName: new Map(),
    channelsByName: new Map(),
    linkifiers: [],
  }).html;
  expect(mobilePushContent(math)).toBe('Equation: $$d^* = +\\infty$$ is correct.\n$$a < b$$');
  const long = 'x'.repeat(250);
  expect(truncateContent(long)).toEqual(['x'.repeat(200) + '…', true]);
  expect(truncateContent('short')).toEqual(['short', false]);
});
