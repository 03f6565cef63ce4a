import type { TxClient } from '@teamchat/db';
import type { ProfileData } from '@teamchat/domain';

type Reader = Pick<TxClient, 'customProfileFieldValue'>;

/** Custom profile field values by user id (Zulip's profile_data), for some users or a whole realm. */
export async function profileDataByUser(
  db: Reader,
  scope: { userIds: number[] } | { realmId: number },
): Promise<Map<number, ProfileData>> {
  const values = await db.customProfileFieldValue.findMany({
    where: 'userIds' in scope ? { user_profile_id: { in: scope.userIds } } : { field: { realm_id: scope.realmId } },
    orderBy: { field_id: 'asc' },
  });
  const byUser = new Map<number, ProfileData>();
  for (const row of values) {
    const data = byUser.get(row.user_profile_id) ?? {};
    data[String(row.field_id)] = profileValue(row);
    byUser.set(row.user_profile_id, data);
  }
  return byUser;
}

/** A field's value as profile_data shows it: rendered_value only for Markdown-capable fields. */
export function profileValue(row: { value: string; rendered_value: string | null }): ProfileData[string] {
  return row.rendered_value === null ? { value: row.value } : { value: row.value, rendered_value: row.rendered_value };
}
