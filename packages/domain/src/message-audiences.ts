// Who gets events about an action on messages (a reaction, an edit, a deletion): Zulip's
// event_recipient_ids_for_action_on_messages, once, for the messages service and the worker's
// delete-topic job (which runs it inside its batch statement).
import { Prisma, type Stream, type TxClient } from '@teamchat/db';
import { isGuestSql } from './roles';
import { activeSubscription } from './streams';

export type MessageActionStream = Pick<Stream, 'id' | 'invite_only' | 'history_public_to_subscribers'>;

/**
 * The recipients as one SELECT of ids (`id`), for messages given as an int[] expression (an
 * array parameter, or ARRAY(subquery) over rows of the same statement). Direct messages:
 * everyone with a user_message row. Channels: active subscribers, plus, in a public channel,
 * non-guests with a row (historical rows included); with protected history, only subscribers
 * with a row. Queues that merely could have fetched the message (all_public_streams) are not
 * included, as in Zulip.
 */
export function messageActionAudienceSql(messageIds: Prisma.Sql, stream: MessageActionStream | null): Prisma.Sql {
  if (stream === null) {
    return Prisma.sql`SELECT DISTINCT user_profile_id AS id FROM user_message WHERE message_id = ANY(${messageIds})`;
  }
  if (!stream.history_public_to_subscribers) {
    return Prisma.sql`
      SELECT DISTINCT s.user_profile_id AS id FROM subscription s
      JOIN user_message um ON um.user_profile_id = s.user_profile_id AND um.message_id = ANY(${messageIds})
      WHERE s.stream_id = ${stream.id} AND ${activeSubscription('s')}`;
  }
  return Prisma.sql`
    SELECT s.user_profile_id AS id FROM subscription s
    WHERE s.stream_id = ${stream.id} AND ${activeSubscription('s')}
    UNION
    SELECT um.user_profile_id FROM user_message um JOIN user_profile u ON u.id = um.user_profile_id
    WHERE ${!stream.invite_only} AND um.message_id = ANY(${messageIds}) AND NOT ${isGuestSql('u')}`;
}

/** The recipients of an action on `messageIds` (of one conversation), sorted. */
export async function messageActionAudience(
  db: Pick<TxClient, '$queryRaw'>,
  messageIds: number[],
  stream: MessageActionStream | null,
): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.$queryRaw<{ id: number }[]>(messageActionAudienceSql(Prisma.sql`${messageIds}::int[]`, stream));
  return rows.map((row) => row.id).sort((a, b) => a - b);
}
