// Topics of a channel (Zulip's get_topic_history_for_stream): one entry per topic, compared
// case-insensitively, named as its newest message names it, newest first.
import type { TxClient } from '@teamchat/db';
import { SERVER_LIMITS } from '@teamchat/domain';

export interface TopicEntry {
  name: string;
  max_id: number;
}

/**
 * With protected history (`receivedBy` set) only the messages that user received count,
 * so topics from before they subscribed stay hidden.
 */
export async function topicHistory(
  db: Pick<TxClient, '$queryRaw'>,
  streamId: number,
  receivedBy: number | null,
  allowEmptyTopicName: boolean,
): Promise<TopicEntry[]> {
  const rows =
    receivedBy === null
      ? await db.$queryRaw<TopicEntry[]>`
          SELECT m.topic AS name, t.max_id FROM (
            SELECT max(id) AS max_id FROM message WHERE stream_id = ${streamId} GROUP BY lower(topic)
          ) t JOIN message m ON m.id = t.max_id ORDER BY t.max_id DESC`
      : await db.$queryRaw<TopicEntry[]>`
          SELECT m.topic AS name, t.max_id FROM (
            SELECT max(m.id) AS max_id FROM message m
            JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${receivedBy}
            WHERE m.stream_id = ${streamId} GROUP BY lower(m.topic)
          ) t JOIN message m ON m.id = t.max_id ORDER BY t.max_id DESC`;
  return rows.map((row) => ({
    name: row.name === '' && !allowEmptyTopicName ? SERVER_LIMITS.realm_empty_topic_display_name : row.name,
    max_id: row.max_id,
  }));
}
