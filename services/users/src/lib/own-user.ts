import { sqlPool, type Db } from '@teamchat/db';
import type { OwnUserRow, ProfileData } from '@teamchat/domain';
import { profileValue } from './profile-data';

/**
 * Everything GET /users/me answers, in one named statement on the pool under Prisma (see
 * sqlPool): it is among a client's most frequent requests, and through Prisma its three reads
 * cost about ten times the query itself (the client engine prepares each one at every call).
 */
export async function readOwnUser(
  db: Db,
  userId: number,
): Promise<{ user: OwnUserRow; maxMessageId: number; profileData: ProfileData } | null> {
  const { rows } = await sqlPool(db).query<
    OwnUserRow & {
      max_message_id: number | null;
      profile_values: { field_id: number; value: string; rendered_value: string | null }[];
    }
  >({
    name: 'own-user',
    text: `
      SELECT u.id, u.realm_id, u.email, u.delivery_email, u.full_name, u.role, u.is_bot, u.is_active,
             u.timezone, u.date_joined, u.avatar_source, u.avatar_key, u.avatar_version,
             (SELECT max(message_id) FROM user_message WHERE user_profile_id = u.id) AS max_message_id,
             (SELECT coalesce(json_agg(json_build_object('field_id', v.field_id, 'value', v.value, 'rendered_value', v.rendered_value) ORDER BY v.field_id), '[]')
                FROM custom_profile_field_value v WHERE v.user_profile_id = u.id) AS profile_values
        FROM user_profile u WHERE u.id = $1`,
    values: [userId],
  });
  const row = rows[0];
  if (!row) return null;
  const profileData: ProfileData = {};
  for (const field of row.profile_values) {
    profileData[String(field.field_id)] = profileValue(field);
  }
  return { user: row, maxMessageId: row.max_message_id ?? -1, profileData };
}
