// Messages as the API shows them (Zulip's zerver/lib/message_cache.py MessageDict) and the
// per-recipient flags bitmask of user_message (Zulip's AbstractUserMessage.flags).
//
// A message is built once in its "wide" form — both the raw Markdown (content) and the HTML
// (rendered_content), the full avatar URL and whether that avatar comes from the external
// provider — which is what message events carry (CONTRACTS.md). Each reader then gets a
// finalized copy (finalizeMessageDict), as Zulip's finalize_payload does.

import { appendTo } from '@teamchat/core';
import type { Draft, Prisma, TxClient } from '@teamchat/db';
import { resolveChange } from './narrow-match';
import { SERVER_LIMITS } from './realms';
import { clientComputesAvatar } from './gravatar';
import { avatarUrl, EmailVisibility } from './users';

// ---------------------------------------------------------------- flags

/**
 * The user_message.flags bits, in Zulip's order. The partial indexes of migration
 * 20261121160600_hot_path_indexes use read (1), starred (2) and mentioned (8); the
 * messages_flag_indexes migration uses is_private (2048) and the mention mask (120).
 */
export const MessageFlag = {
  read: 1,
  starred: 2,
  collapsed: 4,
  mentioned: 8,
  stream_wildcard_mentioned: 16,
  topic_wildcard_mentioned: 32,
  group_mentioned: 64,
  force_expand: 128,
  force_collapse: 256,
  has_alert_word: 512,
  historical: 1024,
  is_private: 2048,
  active_mobile_push_notification: 4096,
} as const;

export type MessageFlagName = keyof typeof MessageFlag;

export const MESSAGE_FLAG_NAMES = Object.keys(MessageFlag) as MessageFlagName[];

/** Bookkeeping flags the API never shows. */
export const NON_API_FLAGS: ReadonlySet<string> = new Set(['is_private', 'active_mobile_push_notification']);

/** Flags set once when the row is created (or unused): clients may not change them. */
export const NON_EDITABLE_FLAGS: ReadonlySet<string> = new Set([
  'has_alert_word',
  'mentioned',
  'stream_wildcard_mentioned',
  'topic_wildcard_mentioned',
  'group_mentioned',
  'historical',
  'force_expand',
  'force_collapse',
]);

/** Any kind of mention of the user (is:mentioned). */
export const MENTION_FLAGS_MASK =
  MessageFlag.mentioned |
  MessageFlag.stream_wildcard_mentioned |
  MessageFlag.topic_wildcard_mentioned |
  MessageFlag.group_mentioned;

/** What a reader of a message they have no user_message row for sees: read, historical. */
export const HISTORICAL_FLAGS = MessageFlag.read | MessageFlag.historical;

/**
 * The API flag names of a bitmask. With `legacyWildcard`, "wildcard_mentioned" is added when a
 * channel or topic wildcard mentions the user (kept for older clients, as Zulip does).
 */
export function flagsList(bits: number, options: { legacyWildcard?: boolean } = { legacyWildcard: true }): string[] {
  const names = MESSAGE_FLAG_NAMES.filter((name) => (bits & MessageFlag[name]) !== 0 && !NON_API_FLAGS.has(name));
  if (
    options.legacyWildcard &&
    (bits & (MessageFlag.stream_wildcard_mentioned | MessageFlag.topic_wildcard_mentioned)) !== 0
  ) {
    names.push('wildcard_mentioned' as MessageFlagName);
  }
  return names;
}

// ---------------------------------------------------------------- conversations

/** message.dm_key of a direct message: the sorted participant ids, sender included ("3,7,9"). */
export function dmKey(userIds: Iterable<number>): string {
  return [...new Set(userIds)].sort((a, b) => a - b).join(',');
}

export function dmParticipants(key: string): number[] {
  return key.split(',').map(Number);
}

/**
 * A recipient id for the API (Zulip's Recipient row id, used by clients only to group
 * messages of one conversation): the channel id for channel messages; for direct messages a
 * stable number derived from the participants, above every channel id Postgres will hand out.
 */
export function recipientIdOf(message: { stream_id: number | null; dm_key: string | null }): number {
  if (message.stream_id !== null) return message.stream_id;
  let hash = 0;
  for (const character of message.dm_key ?? '') hash = (Math.imul(hash, 31) + character.charCodeAt(0)) >>> 0;
  return 2 ** 30 + (hash % 2 ** 30);
}

// ---------------------------------------------------------------- topics

/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME (register's realm_empty_topic_display_name). */
export const EMPTY_TOPIC_DISPLAY_NAME = SERVER_LIMITS.realm_empty_topic_display_name;

/** Topic names that mean the empty topic when given as input. */
export function normalizeTopicInput(topic: string): string {
  return topic === EMPTY_TOPIC_DISPLAY_NAME || topic === '(no topic)' ? '' : topic;
}

/** The topic as a client without the empty_topic_name capability must see it. */
export function topicForClient(topic: string, allowEmptyTopicName: boolean): string {
  return topic === '' && !allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : topic;
}

/** Zulip's truncate_content: cut to `maxLength` characters, ending with `marker`. */
export function truncateText(text: string, maxLength: number, marker: string): string {
  const characters = [...text];
  if (characters.length <= maxLength) return text;
  return characters.slice(0, maxLength - [...marker].length).join('') + marker;
}

// ---------------------------------------------------------------- message dicts

export interface DisplayRecipientUser {
  id: number;
  email: string;
  full_name: string;
  is_mirror_dummy: boolean;
}

/** A submessage as the API shows it (Zulip's SubMessage.get_raw_db_rows). */
export interface SubmessageDict {
  msg_type: string;
  content: string;
  message_id: number;
  sender_id: number;
  id: number;
}

export interface ReactionDict {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

/** One entry of a message's edit history, as stored and shown (Zulip's EditHistoryEvent). */
export type EditHistoryEntry = {
  timestamp: number;
  user_id: number | null;
  prev_content?: string;
  prev_rendered_content?: string;
  prev_rendered_content_version?: number | null;
  prev_topic?: string;
  topic?: string;
  prev_stream?: number;
  stream?: number;
};

/** A message in its wide form, before a reader's preferences are applied. */
export interface WideMessageDict {
  id: number;
  sender_id: number;
  sender_email: string;
  sender_full_name: string;
  sender_realm_str: string;
  avatar_url: string | null;
  /** The sender's avatar comes from the external provider and their email is public. */
  _external_avatar: boolean;
  client: string;
  content: string;
  rendered_content: string;
  is_me_message: boolean;
  recipient_id: number;
  type: 'stream' | 'private';
  display_recipient: string | DisplayRecipientUser[];
  stream_id?: number;
  subject: string;
  topic_links: { text: string; url: string }[];
  timestamp: number;
  reactions: ReactionDict[];
  submessages: SubmessageDict[];
  edit_history?: EditHistoryEntry[];
  last_edit_timestamp?: number;
  last_moved_timestamp?: number;
}

/** The columns of `message` a dict is built from. */
export const MESSAGE_DICT_COLUMNS = {
  id: true,
  realm_id: true,
  sender_id: true,
  stream_id: true,
  topic: true,
  dm_key: true,
  content: true,
  rendered_content: true,
  date_sent: true,
  last_edit_time: true,
  edit_history: true,
  sending_client: true,
} satisfies Prisma.MessageSelect;

export type MessageDictRow = Prisma.MessageGetPayload<{ select: typeof MESSAGE_DICT_COLUMNS }>;

type DictReader = Pick<TxClient, 'userProfile' | 'stream' | 'reaction' | 'subMessage' | 'realm'>;

/** The topic's links: realm linkifier matches and plain URLs (Zulip's topic_links). */
export type TopicLinker = (topic: string) => { text: string; url: string }[];

/**
 * Wide dicts of many messages in few queries (senders, participants, channels, reactions,
 * submessages).
 * Returned in the order of `rows`.
 */
export async function buildWideMessageDicts(
  db: DictReader,
  rows: MessageDictRow[],
  topicLinks: TopicLinker = () => [],
): Promise<WideMessageDict[]> {
  if (rows.length === 0) return [];
  const userIds = new Set<number>();
  const streamIds = new Set<number>();
  for (const row of rows) {
    userIds.add(row.sender_id);
    if (row.dm_key) for (const id of dmParticipants(row.dm_key)) userIds.add(id);
    if (row.stream_id !== null) streamIds.add(row.stream_id);
  }
  const realmIds = [...new Set(rows.map((row) => row.realm_id))];
  const messageIds = rows.map((row) => row.id);
  const [users, streams, reactions, submessages, realms] = await Promise.all([
    db.userProfile.findMany({
      where: { id: { in: [...userIds] } },
      select: {
        id: true,
        email: true,
        delivery_email: true,
        full_name: true,
        avatar_source: true,
        avatar_key: true,
        avatar_version: true,
        realm_id: true,
        email_address_visibility: true,
      },
    }),
    db.stream.findMany({ where: { id: { in: [...streamIds] } }, select: { id: true, name: true } }),
    db.reaction.findMany({ where: { message_id: { in: messageIds } }, orderBy: { id: 'asc' } }),
    db.subMessage.findMany({
      where: { message_id: { in: messageIds } },
      select: { msg_type: true, content: true, message_id: true, sender_id: true, id: true },
      orderBy: [{ message_id: 'asc' }, { id: 'asc' }],
    }),
    db.realm.findMany({ where: { id: { in: realmIds } }, select: { id: true, string_id: true } }),
  ]);
  const userById = new Map(users.map((user) => [user.id, user]));
  const streamName = new Map(streams.map((stream) => [stream.id, stream.name]));
  const realmString = new Map(realms.map((realm) => [realm.id, realm.string_id]));
  const reactionsOf = new Map<number, ReactionDict[]>();
  for (const reaction of reactions) {
    appendTo(reactionsOf, reaction.message_id, {
      emoji_name: reaction.emoji_name,
      emoji_code: reaction.emoji_code,
      reaction_type: reaction.reaction_type,
      user_id: reaction.user_profile_id,
    });
  }
  const submessagesOf = new Map<number, SubmessageDict[]>();
  for (const submessage of submessages) appendTo(submessagesOf, submessage.message_id, submessage);
  const displayUser = (id: number): DisplayRecipientUser => {
    const user = userById.get(id)!;
    return { id, email: user.email, full_name: user.full_name, is_mirror_dummy: false };
  };

  return rows.map((row) => {
    const participants = row.dm_key ? dmParticipants(row.dm_key).map(displayUser) : [];
    return wideMessageDict(row, {
      sender: userById.get(row.sender_id)!,
      realmStringId: realmString.get(row.realm_id) ?? '',
      streamName: row.stream_id !== null ? (streamName.get(row.stream_id) ?? '') : null,
      participants,
      reactions: reactionsOf.get(row.id) ?? [],
      submessages: submessagesOf.get(row.id) ?? [],
      topicLinks: row.stream_id !== null ? topicLinks(row.topic) : [],
    });
  });
}

export interface MessageSender {
  email: string;
  delivery_email: string;
  full_name: string;
  avatar_source: string;
  avatar_key: string | null;
  avatar_version: number;
  realm_id: number;
  id: number;
  email_address_visibility: number;
}

export interface WideDictParts {
  sender: MessageSender;
  realmStringId: string;
  /** The channel's name, or null for a direct message. */
  streamName: string | null;
  /** Every participant of a direct message, sender included. */
  participants: DisplayRecipientUser[];
  reactions: ReactionDict[];
  /** Absent: none (a message being sent without a widget). */
  submessages?: SubmessageDict[];
  topicLinks: { text: string; url: string }[];
}

/** One wide dict from a row and what it refers to (Zulip's MessageDict.wide_dict). */
export function wideMessageDict(row: MessageDictRow, parts: WideDictParts): WideMessageDict {
  const { sender } = parts;
  const isStream = row.stream_id !== null;
  let displayRecipient: string | DisplayRecipientUser[];
  if (isStream) {
    displayRecipient = parts.streamName ?? '';
  } else {
    const participants = [...parts.participants];
    // Zulip lists a 1:1 conversation by email and a group conversation by user id.
    displayRecipient =
      participants.length === 2
        ? participants.sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0))
        : participants.sort((a, b) => a.id - b.id);
  }
  const dict: WideMessageDict = {
    id: row.id,
    sender_id: row.sender_id,
    sender_email: sender.email,
    sender_full_name: sender.full_name,
    sender_realm_str: parts.realmStringId,
    avatar_url: avatarUrl(sender),
    _external_avatar: clientComputesAvatar(
      true,
      sender.avatar_source,
      sender.email_address_visibility === EmailVisibility.EVERYONE,
    ),
    client: row.sending_client,
    content: row.content,
    rendered_content: row.rendered_content ?? '',
    is_me_message: row.content.startsWith('/me ') && !row.content.includes('\n'),
    recipient_id: recipientIdOf(row),
    type: isStream ? 'stream' : 'private',
    display_recipient: displayRecipient,
    subject: row.topic,
    topic_links: parts.topicLinks,
    timestamp: Math.floor(row.date_sent.getTime() / 1000),
    reactions: parts.reactions,
    submessages: parts.submessages ?? [],
  };
  if (isStream) dict.stream_id = row.stream_id!;
  const history = Array.isArray(row.edit_history) ? (row.edit_history as unknown as EditHistoryEntry[]) : [];
  if (history.length > 0) {
    dict.edit_history = history;
    // Newest first: the last content edit, and the last move that was not just (un)resolving.
    const contentEdit = history.find((entry) => 'prev_content' in entry);
    const move = history.find(
      (entry) =>
        'prev_stream' in entry ||
        ('prev_topic' in entry && resolveChange(String(entry.prev_topic), String(entry.topic)) === null),
    );
    if (contentEdit) dict.last_edit_timestamp = Number(contentEdit.timestamp);
    if (move) dict.last_moved_timestamp = Number(move.timestamp);
  } else if (row.last_edit_time) {
    dict.last_edit_timestamp = Math.floor(row.last_edit_time.getTime() / 1000);
  }
  return dict;
}

export interface FinalizeOptions {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopicName: boolean;
}

/** A reader's copy of a wide dict (Zulip's finalize_payload). */
export function finalizeMessageDict(wide: WideMessageDict, options: FinalizeOptions): Record<string, unknown> {
  const { rendered_content: renderedContent, _external_avatar: externalAvatar, ...dict } = wide;
  return {
    ...dict,
    content: options.applyMarkdown ? renderedContent : wide.content,
    content_type: options.applyMarkdown ? 'text/html' : 'text/x-markdown',
    avatar_url: options.clientGravatar && externalAvatar ? null : wide.avatar_url,
    subject: wide.type === 'stream' ? topicForClient(wide.subject, options.allowEmptyTopicName) : wide.subject,
  };
}

/** A draft's type as the API names it: a channel message, a direct message, or not yet chosen (""). */
function draftType(type: string): 'stream' | 'private' | '' {
  return type === 'stream' || type === 'private' ? type : '';
}

/** A draft as the API shows it (Zulip's Draft.to_dict). */
export function draftDict(draft: Draft) {
  return {
    id: draft.id,
    type: draftType(draft.type),
    to: draft.to,
    topic: draft.topic,
    content: draft.content,
    timestamp: Math.floor(draft.last_edit_time.getTime() / 1000),
  };
}
