// Zulip's system bots (settings.INTERNAL_BOTS) and what the server writes into a feed as one of
// them: the notification bot's channel announcements, topic-move breadcrumbs, resolved-topic
// notices, failed scheduled messages and signups (Zulip's internal_send_*_message).
//
// As in Zulip, the bots live in an organisation of their own (zulipinternal, created by the
// system_bots migration) and send into every other one: a message keeps its own realm_id, the
// sender's row is looked up by id wherever messages are read, and clients know the bots from
// register's cross_realm_bots. One set of bots for the server, never a row in an
// organisation's realm_users, its user counts or its permission groups.
//
// writeInternalMessage writes the message and its deliveries in the caller's transaction and
// answers the events for the caller's action to send after commit (as every action does).

import type { Stream, TxClient, UserProfile } from '@teamchat/db';
import { loadMarkdownData, renderMessageMarkdown, topicLinks } from './message-markdown';
import { flagsList, MessageFlag, wideMessageDict, type WideMessageDict } from './messages';
import { Role } from './roles';
import { activeSubscriberIds, metadataAccessUserIds, type Viewer } from './streams';
import { apiUserDict, type ApiUser } from './users';

/** The organisation of the system bots (Zulip's SYSTEM_BOT_REALM). */
export const SYSTEM_BOT_REALM = 'zulipinternal';

/** Zulip's settings.NOTIFICATION_BOT and the other INTERNAL_BOTS, by email. */
export const NOTIFICATION_BOT = 'notification-bot@zulip.com';
export const EMAIL_GATEWAY_BOT = 'emailgateway@zulip.com';
export const WELCOME_BOT = 'welcome-bot@zulip.com';
export const INTERNAL_BOT_EMAILS = [
  NOTIFICATION_BOT,
  EMAIL_GATEWAY_BOT,
  'nagios-send-bot@zulip.com',
  'nagios-receive-bot@zulip.com',
  WELCOME_BOT,
] as const;

/** Zulip's Realm.STREAM_EVENTS_NOTIFICATION_TOPIC_NAME. */
export const STREAM_EVENTS_NOTIFICATION_TOPIC_NAME = 'channel events';
/** Zulip's RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS (production default). */
export const RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS = 60;

type BotReader = Pick<TxClient, 'userProfile'>;

/** A system bot by email (Zulip's get_system_bot): the migration creates them on every deployment. */
export async function getSystemBot(db: BotReader, email: string = NOTIFICATION_BOT): Promise<UserProfile> {
  const bot = await db.userProfile.findFirst({
    where: { delivery_email: email, is_bot: true, realm: { string_id: SYSTEM_BOT_REALM } },
  });
  if (!bot) throw new Error(`system bot ${email} is missing: the system_bots migration was not applied`);
  return bot;
}

/** register's cross_realm_bots (Zulip's get_cross_realm_dicts): by name, self-owned shown as no owner. */
export async function crossRealmBotDicts(
  db: BotReader,
  viewer: { id: number; role: number },
): Promise<(ApiUser & { is_system_bot: true })[]> {
  const bots = await db.userProfile.findMany({
    where: { is_bot: true, delivery_email: { in: [...INTERNAL_BOT_EMAILS] }, realm: { string_id: SYSTEM_BOT_REALM } },
    orderBy: [{ full_name: 'asc' }, { id: 'asc' }],
  });
  return bots.map((bot) => ({
    ...apiUserDict(bot, viewer, { clientGravatar: false }),
    bot_owner_id: null,
    is_system_bot: true as const,
  }));
}

/** Zulip's silent_mention_syntax_for_user: a mention that notifies nobody. */
export function silentMentionSyntax(user: Pick<UserProfile, 'full_name' | 'id'>): string {
  return `@_**${user.full_name}|${user.id}**`;
}

export type InternalMessageTarget =
  | {
      stream: Pick<Stream, 'id' | 'realm_id' | 'name' | 'invite_only' | 'is_web_public' | 'first_message_id'>;
      topic: string;
    }
  | { userIds: number[] };

export interface InternalMessageInput {
  realm: { id: number; string_id: string };
  sender: UserProfile;
  to: InternalMessageTarget;
  content: string;
  /**
   * Whose access decides what the content may link to (Zulip's acting_user): the person whose
   * action the message tells of; absent, a member of the organisation.
   */
  actingUser?: Viewer;
  /** Recipients who get it already read (Zulip's mark_as_read). */
  readBy?: number[];
  /** When given, only these recipients get it unread (Zulip's limit_unread_user_ids). */
  unreadOnlyFor?: Set<number>;
}

export interface InternalMessageEvent {
  event:
    | { type: 'message'; message: WideMessageDict }
    | { type: 'stream'; op: 'update'; property: 'first_message_id'; value: number; stream_id: number; name: string };
  users: (number | { id: number; flags: string[] })[];
}

export interface InternalMessageWrite {
  id: number;
  /** In order: the message, then (for a channel's first message) its first_message_id update. */
  events: InternalMessageEvent[];
}

type InternalWriter = Pick<
  TxClient,
  | '$queryRaw'
  | '$queryRawUnsafe'
  | '$executeRaw'
  | 'message'
  | 'userMessage'
  | 'userProfile'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
  | 'stream'
  | 'linkifier'
  | 'realm'
  | 'realmEmoji'
  | 'groupSetting'
  | 'subscription'
>;

/**
 * Writes a message from a system bot (Zulip's internal_send_stream_message and
 * internal_send_private_message) in the caller's transaction: rendered as any message, one
 * delivery per subscriber of the channel or per participant of the direct message. The caller
 * sends the answered events after commit.
 */
export async function writeInternalMessage(
  db: InternalWriter,
  input: InternalMessageInput,
): Promise<InternalMessageWrite> {
  const { realm, sender, to, content } = input;
  const viewer: Viewer = input.actingUser ?? { id: sender.id, realm_id: realm.id, role: Role.MEMBER };
  const markdownData = await loadMarkdownData(db, { ...viewer, realm_id: realm.id }, content);
  const rendering = renderMessageMarkdown(content, markdownData);

  let recipientIds: number[];
  let participants: { id: number; email: string; full_name: string; is_mirror_dummy: boolean }[] = [];
  let dmKey: string | null = null;
  if ('stream' in to) {
    recipientIds = (await activeSubscriberIds(db, [to.stream.id])).get(to.stream.id) ?? [];
  } else {
    const ids = [...new Set([sender.id, ...to.userIds])].sort((a, b) => a - b);
    const users = await db.userProfile.findMany({
      where: { id: { in: ids } },
      select: { id: true, email: true, full_name: true },
    });
    participants = users.map((user) => ({ ...user, is_mirror_dummy: false }));
    recipientIds = ids;
    dmKey = ids.join(',');
  }

  const readBy = new Set(input.readBy ?? []);
  const flagsOf = (userId: number) => {
    let flags = dmKey !== null ? MessageFlag.is_private : 0;
    if (userId === sender.id || readBy.has(userId)) flags |= MessageFlag.read;
    if (input.unreadOnlyFor && !input.unreadOnlyFor.has(userId)) flags |= MessageFlag.read;
    if (rendering.mentionedUserIds.has(userId)) flags |= MessageFlag.mentioned;
    return flags;
  };

  const dateSent = new Date();
  const topic = 'stream' in to ? to.topic : '';
  const message = await db.message.create({
    data: {
      realm_id: realm.id,
      sender_id: sender.id,
      stream_id: 'stream' in to ? to.stream.id : null,
      topic,
      dm_key: dmKey,
      content,
      rendered_content: rendering.html,
      rendered_content_version: 1,
      date_sent: dateSent,
      has_link: rendering.hasLink,
      has_image: rendering.hasImage,
      sending_client: 'Internal',
    },
  });
  const deliveries = recipientIds.map((userId) => ({
    user_profile_id: userId,
    message_id: message.id,
    flags: flagsOf(userId),
  }));
  await db.userMessage.createMany({ data: deliveries });

  const wide = wideMessageDict(message, {
    sender,
    realmStringId: realm.string_id,
    streamName: 'stream' in to ? to.stream.name : null,
    participants,
    reactions: [],
    submessages: [],
    topicLinks: 'stream' in to ? topicLinks(topic, markdownData.linkifiers) : [],
  });
  const events: InternalMessageEvent[] = [
    {
      event: { type: 'message', message: wide },
      users: deliveries.map(({ user_profile_id: id, flags }) => (flags === 0 ? id : { id, flags: flagsList(flags) })),
    },
  ];
  if ('stream' in to) {
    const updated = await db.$executeRaw`
      UPDATE stream SET first_message_id = ${message.id} WHERE id = ${to.stream.id} AND first_message_id IS NULL`;
    if (updated > 0) {
      events.push({
        event: {
          type: 'stream',
          op: 'update',
          property: 'first_message_id',
          value: message.id,
          stream_id: to.stream.id,
          name: to.stream.name,
        },
        users: await metadataAccessUserIds(db, to.stream),
      });
    }
  }
  return { id: message.id, events };
}

/** Zulip's hash_util_encode: a component of a #narrow URL. */
function hashEncode(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/\./g, '%2E')
    .replace(/%/g, '.');
}

/** Zulip's near_stream_message_url: the organisation's URL, then the message in its topic. */
export function nearStreamMessageUrl(
  realmUrl: string,
  message: { id: number; streamId: number; streamName: string; topic: string },
): string {
  const channel = `${message.streamId}-${hashEncode(message.streamName.replace(/ /g, '-'))}`;
  return `${realmUrl}/#narrow/channel/${channel}/topic/${hashEncode(message.topic)}/near/${message.id}`;
}

/** The notification bot's resolved and unresolved notices (Zulip's RESOLVE_TOPIC_NOTIFICATION messages). */
const RESOLVE_NOTICE = /^@_\*\*[^\n]*\|\d+\*\* has marked this topic as (un)?resolved\.$/;

export function isResolveTopicNotice(
  message: { sender_id: number; content: string },
  notificationBotId: number,
): boolean {
  return message.sender_id === notificationBotId && RESOLVE_NOTICE.test(message.content);
}
