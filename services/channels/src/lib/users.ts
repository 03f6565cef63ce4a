// The users a request names (principals). The acting user is @teamchat/domain's loadActor.
import { JsonableError } from '@teamchat/core';
import type { TxClient, UserProfile } from '@teamchat/db';

type Reader = Pick<TxClient, 'userProfile'>;

/**
 * The active users named by `principals` (all ids or all emails), as Zulip's
 * bulk_access_users_by_id/by_email: any unknown or deactivated one is "No such user".
 */
export async function usersByPrincipals(
  db: Reader,
  realmId: number,
  principals: (string | number)[],
): Promise<UserProfile[]> {
  if (principals.length === 0) return [];
  const ids = principals.filter((p): p is number => typeof p === 'number');
  const emails = principals
    .filter((p): p is string => typeof p === 'string')
    .map((email) => email.trim().toLowerCase());
  const users = await db.userProfile.findMany({
    where: {
      realm_id: realmId,
      is_active: true,
      OR: [{ id: { in: ids } }, { delivery_email: { in: emails } }, { email: { in: emails } }],
    },
  });
  for (const id of ids) if (!users.some((user) => user.id === id)) throw new JsonableError('No such user');
  for (const email of emails) {
    if (!users.some((user) => user.delivery_email === email || user.email.toLowerCase() === email))
      throw new JsonableError('No such user');
  }
  return users;
}
