// Register state of the messages domain: max_message_id (message), unread_msgs,
// starred_messages, recent_private_conversations and drafts (Zulip's
// fetch_initial_state_data and zerver/lib/message.py get_raw_unread_data / aggregate_unread_data).

import { appendTo } from '@teamchat/core';
import { dmParticipants, draftDict, MessageFlag, topicForClient, userSettings } from '@teamchat/domain';
import type { StateContext, StateSection } from '../registry';

/** Zulip's MAX_UNREAD_MESSAGES: register reports at most this many unread messages. */
const MAX_UNREAD_MESSAGES = 50_000;
/** Direct messages considered for recent_private_conversations. */
const MAX_RECENT_PRIVATE_MESSAGES = 1000;

const messageSection: StateSection = {
  eventType: 'message',
  async fetch({ db, user }) {
    const rows = await db.$queryRaw<
      { max: number | null }[]
    >`SELECT max(message_id) AS max FROM user_message WHERE user_profile_id = ${user.id}`;
    return { max_message_id: rows[0]?.max ?? -1 };
  },
};

interface UnreadRow {
  id: number;
  sender_id: number;
  stream_id: number | null;
  topic: string;
  dm_key: string | null;
  flags: number;
  muted: boolean;
}

const DIRECT_MENTION = MessageFlag.mentioned | MessageFlag.group_mentioned;
const WILDCARD_MENTION = MessageFlag.stream_wildcard_mentioned | MessageFlag.topic_wildcard_mentioned;

async function unreadMsgs({ db, user, options }: StateContext) {
  // Unread messages, newest first, outside channels the user left; `muted` marks muted
  // channels (unless the topic is unmuted or followed) and muted topics.
  const rows = await db.$queryRaw<UnreadRow[]>`
    SELECT m.id, m.sender_id, m.stream_id, m.topic, m.dm_key, um.flags,
      CASE WHEN m.stream_id IS NULL THEN FALSE ELSE (
        (s.is_muted AND NOT EXISTS (SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = ${user.id} AND ut.stream_id = m.stream_id
          AND lower(ut.topic_name) = lower(m.topic) AND ut.visibility_policy IN (2, 3)))
        OR EXISTS (SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = ${user.id} AND ut.stream_id = m.stream_id
          AND lower(ut.topic_name) = lower(m.topic) AND ut.visibility_policy = 1)
      ) END AS muted
    FROM user_message um
    JOIN message m ON m.id = um.message_id
    LEFT JOIN subscription s ON s.stream_id = m.stream_id AND s.user_profile_id = ${user.id}
    WHERE um.user_profile_id = ${user.id} AND (um.flags & ${MessageFlag.read}) = 0
      AND (m.stream_id IS NULL OR s.active)
    ORDER BY um.message_id DESC
    LIMIT ${MAX_UNREAD_MESSAGES + 1}`;
  const oldUnreadsMissing = rows.length > MAX_UNREAD_MESSAGES;
  const unread = rows.slice(0, MAX_UNREAD_MESSAGES).reverse();
  const allowEmptyTopic = options.capabilities.empty_topic_name === true;

  const pms = new Map<number, number[]>();
  const huddles = new Map<string, number[]>();
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const mentions: number[] = [];
  let count = 0;
  for (const row of unread) {
    if (row.stream_id !== null) {
      const key = `${row.stream_id}\u0000${row.topic.toLowerCase()}`;
      const entry = streams.get(key) ?? {
        stream_id: row.stream_id,
        topic: topicForClient(row.topic, allowEmptyTopic),
        unread_message_ids: [],
      };
      entry.unread_message_ids.push(row.id);
      streams.set(key, entry);
      if (!row.muted) count++;
    } else {
      const participants = dmParticipants(row.dm_key!);
      if (participants.length <= 2) {
        const other = participants.find((id) => id !== user.id) ?? user.id;
        appendTo(pms, other, row.id);
      } else {
        appendTo(huddles, row.dm_key!, row.id);
      }
      count++;
    }
    if ((row.flags & DIRECT_MENTION) !== 0 || ((row.flags & WILDCARD_MENTION) !== 0 && !row.muted))
      mentions.push(row.id);
  }
  return {
    unread_msgs: {
      count,
      pms: [...pms].map(([other, ids]) => ({ other_user_id: other, sender_id: other, unread_message_ids: ids })),
      streams: [...streams.values()],
      huddles: [...huddles].map(([key, ids]) => ({ user_ids_string: key, unread_message_ids: ids })),
      mentions,
      old_unreads_missing: oldUnreadsMissing,
    },
  };
}

const unreadMsgsSection: StateSection = {
  eventType: 'message',
  alsoRequires: ['update_message_flags'],
  fetch: unreadMsgs,
};

const starredMessagesSection: StateSection = {
  eventType: 'starred_messages',
  async fetch({ db, user }) {
    const rows = await db.$queryRaw<{ message_id: number }[]>`
      SELECT message_id FROM user_message WHERE user_profile_id = ${user.id} AND (flags & ${MessageFlag.starred}) <> 0 ORDER BY message_id`;
    return { starred_messages: rows.map((row) => row.message_id) };
  },
};

const recentPrivateConversationsSection: StateSection = {
  eventType: 'recent_private_conversations',
  async fetch({ db, user }) {
    const rows = await db.$queryRaw<{ dm_key: string; max_message_id: number }[]>`
      SELECT recent.dm_key, max(recent.id) AS max_message_id FROM (
        SELECT m.id, m.dm_key FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE um.user_profile_id = ${user.id} AND (um.flags & ${MessageFlag.is_private}) <> 0
        ORDER BY um.message_id DESC LIMIT ${MAX_RECENT_PRIVATE_MESSAGES}
      ) recent
      GROUP BY recent.dm_key ORDER BY max(recent.id) DESC`;
    return {
      recent_private_conversations: rows.map((row) => ({
        max_message_id: row.max_message_id,
        user_ids: dmParticipants(row.dm_key).filter((id) => id !== user.id),
      })),
    };
  },
};

const draftsSection: StateSection = {
  eventType: 'drafts',
  async fetch({ db, user }) {
    if (!userSettings(user).enable_drafts_synchronization) return { drafts: [] };
    const drafts = await db.draft.findMany({
      where: { user_profile_id: user.id },
      orderBy: [{ last_edit_time: 'asc' }, { id: 'asc' }],
    });
    return {
      drafts: drafts.map(draftDict),
    };
  },
};

export const MESSAGE_SECTIONS: StateSection[] = [
  messageSection,
  draftsSection,
  recentPrivateConversationsSection,
  starredMessagesSection,
  unreadMsgsSection,
];
