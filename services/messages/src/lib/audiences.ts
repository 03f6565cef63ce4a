// Who receives events about a channel (Zulip's can_access_stream_metadata_user_ids).
import type { Stream, TxClient } from '@teamchat/db';
import { Role } from '@teamchat/domain';

type Reader = Pick<TxClient, '$queryRaw'>;

/**
 * Public channels: every active non-guest, plus subscribed guests. Private channels: active
 * subscribers, administrators, and members of the channel's can_administer_channel_group.
 */
export async function streamMetadataAudience(db: Reader, stream: Pick<Stream, 'id' | 'realm_id' | 'invite_only'>): Promise<number[]> {
  const rows = stream.invite_only
    ? await db.$queryRaw<{ id: number }[]>`
        SELECT s.user_profile_id AS id FROM subscription s JOIN user_profile u ON u.id = s.user_profile_id
        WHERE s.stream_id = ${stream.id} AND s.active AND u.is_active
        UNION
        SELECT u.id FROM user_profile u WHERE u.realm_id = ${stream.realm_id} AND u.is_active AND u.role <= ${Role.ADMINISTRATOR}
        UNION
        SELECT m.user_profile_id FROM group_setting gs
        JOIN LATERAL (
          WITH RECURSIVE groups(id) AS (
            SELECT gs.group_id
            UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
          ) SELECT id FROM groups
        ) g ON TRUE
        JOIN user_group_membership m ON m.user_group_id = g.id
        JOIN user_profile u ON u.id = m.user_profile_id AND u.is_active
        WHERE gs.owner_kind = 'stream' AND gs.owner_id = ${stream.id} AND gs.name = 'can_administer_channel_group'`
    : await db.$queryRaw<{ id: number }[]>`
        SELECT u.id FROM user_profile u WHERE u.realm_id = ${stream.realm_id} AND u.is_active AND u.role <> ${Role.GUEST}
        UNION
        SELECT s.user_profile_id FROM subscription s JOIN user_profile u ON u.id = s.user_profile_id
        WHERE s.stream_id = ${stream.id} AND s.active AND u.is_active`;
  return rows.map((row) => row.id).sort((a, b) => a - b);
}

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
    rows = await db.$queryRaw`SELECT DISTINCT user_profile_id AS id FROM user_message WHERE message_id = ANY(${messageIds}::int[])`;
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
