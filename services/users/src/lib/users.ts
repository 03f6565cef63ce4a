import type { Realm, TxClient } from '@teamchat/db';

type Reader = Pick<TxClient, 'userProfile'>;

/** Ids of every active user of the realm: the audience of realm-wide events. */
export async function activeUserIds(db: Reader, realmId: number): Promise<number[]> {
  const users = await db.userProfile.findMany({ where: { realm_id: realmId, is_active: true }, select: { id: true } });
  return users.map((user) => user.id);
}

const DAY_MS = 86_400_000;

/**
 * Whether someone who joined at `dateJoined` has waited the realm's waiting period
 * (waiting_period_threshold, in days) and so, if a member, is a full member (role:fullmembers).
 */
export function hasWaitedFullMemberPeriod(
  realm: Pick<Realm, 'waiting_period_threshold'>,
  dateJoined: Date,
  now = Date.now(),
): boolean {
  return now - dateJoined.getTime() >= realm.waiting_period_threshold * DAY_MS;
}
