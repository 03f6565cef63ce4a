// Who receives events about actions on messages. (Who receives events about a channel is
// @teamchat/domain's metadataAccessUserIds, the one rule every service uses.)
import type { Stream, TxClient } from '@teamchat/db';
import { Role } from '@teamchat/domain';

type Reader = Pick<TxClient, '$queryRaw'>;

/**
 * Who gets events about an action on messages of one conversation (a reaction, an edit, a
 * deletion): Zulip's event_recipient_ids_for_action_on_messages. Direct messages: everyone with
 * a user_message row. Channels: active subscribers, plus, in a public channel, non-guests with
 * a row (historical rows included); with protected history, only subscribers with a row.
 * Queues that merely could have fetched the message (e.g. all_public_streams) are not included,
 * as in Zulip.
 */
export async function messageActionAudience(
  db: Reader,
  messageIds: number[],
  stream: Pick<Stream, 'id' | 'invite_only' | 'history_public_to_subscribers'> | null,
): Promise<number[]> {
  if (messageIds.length === 0) return [];
  let rows: { id: number }[];
  if (stream === null) {
    rows =
      await db.$queryRaw`SELECT DISTINCT user_profile_id AS id FROM user_message WHERE message_id = ANY(${messageIds}::int[])`;
  } else if (!stream.history_public_to_subscribers) {
    rows = await db.$queryRaw`
      SELECT DISTINCT s.user_profile_id AS id FROM subscription s JOIN user_profile u ON u.id = s.user_profile_id
      JOIN user_message um ON um.user_profile_id = s.user_profile_id AND um.message_id = ANY(${messageIds}::int[])
      WHERE s.stream_id = ${stream.id} AND s.active AND u.is_active`;
  } else {
    rows = await db.$queryRaw`
      SELECT s.user_profile_id AS id FROM subscription s JOIN user_profile u ON u.id = s.user_profile_id
      WHERE s.stream_id = ${stream.id} AND s.active AND u.is_active
      UNION
      SELECT um.user_profile_id FROM user_message um JOIN user_profile u ON u.id = um.user_profile_id
      WHERE ${!stream.invite_only} AND um.message_id = ANY(${messageIds}::int[]) AND u.role <> ${Role.GUEST}`;
  }
  return rows.map((row) => row.id).sort((a, b) => a - b);
}
