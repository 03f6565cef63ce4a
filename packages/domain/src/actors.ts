// Who is acting: the requester's current row, read fresh for every request (the gateway's token
// may carry a role that changed a moment ago, or an account deactivated since).
import { JsonableError } from '@teamchat/core';
import type { Realm, TxClient, UserProfile } from '@teamchat/db';
import type { Viewer } from './streams';

export interface Actor {
  user: UserProfile;
  realm: Realm;
}

/** The acting user and their realm; a deactivated (or vanished) account is refused as Zulip does. */
export async function loadActor(db: Pick<TxClient, 'userProfile'>, userId: number): Promise<Actor> {
  const row = await db.userProfile.findUnique({ where: { id: userId }, include: { realm: true } });
  requireActiveAccount(row);
  const { realm, ...user } = row;
  return { user, realm };
}

/** The acting user's account must exist and be active (Zulip's USER_DEACTIVATED, HTTP 401). */
export function requireActiveAccount<T extends { is_active: boolean }>(user: T | null | undefined): asserts user is T {
  if (!user || !user.is_active) {
    throw new JsonableError('Account is deactivated', { code: 'USER_DEACTIVATED', status: 401 });
  }
}

/** The viewer shape the channel access checks take. */
export function viewerOf(user: Pick<UserProfile, 'id' | 'realm_id' | 'role'>): Viewer {
  return { id: user.id, realm_id: user.realm_id, role: user.role };
}
