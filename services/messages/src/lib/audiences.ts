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
