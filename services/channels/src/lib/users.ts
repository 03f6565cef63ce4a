// The acting user and the users a request names (principals).
import { JsonableError, type Requester } from '@teamchat/core';
import type { TxClient, UserProfile } from '@teamchat/db';
import type { Viewer } from '@teamchat/domain';

type Reader = Pick<TxClient, 'userProfile'>;

/** The requester's current row: roles can change after the gateway cached its answer. */
export async function actingUser(db: Reader, requester: Requester): Promise<UserProfile> {
  const user = await db.userProfile.findFirst({ where: { id: requester.userId, realm_id: requester.realmId, is_active: true } });
  if (!user) throw new JsonableError('Account is deactivated', { code: 'USER_DEACTIVATED', status: 401 });
  return user;
}

export function viewerOf(user: Pick<UserProfile, 'id' | 'realm_id' | 'role'>): Viewer {
  return { id: user.id, realm_id: user.realm_id, role: user.role };
}

/**
 * The active users named by `principals` (all ids or all emails), as Zulip's
 * bulk_access_users_by_id/by_email: any unknown or deactivated one is "No such user".
 */
export async function usersByPrincipals(db: Reader, realmId: number, principals: (string | number)[]): Promise<UserProfile[]> {
  if (principals.length === 0) return [];
  const ids = principals.filter((p): p is number => typeof p === 'number');
  const emails = principals.filter((p): p is string => typeof p === 'string').map((email) => email.trim().toLowerCase());
  const users = await db.userProfile.findMany({
    where: {
      realm_id: realmId,
      is_active: true,
      OR: [{ id: { in: ids } }, { delivery_email: { in: emails } }, { email: { in: emails } }],
    },
  });
  for (const id of ids) if (!users.some((user) => user.id === id)) throw new JsonableError('No such user');
  for (const email of emails) {
    if (!users.some((user) => user.delivery_email === email || user.email.toLowerCase() === email)) throw new JsonableError('No such user');
  }
  return users;
}
