// Row locks that serialise concurrent changes inside a transaction.
import type { TxClient } from '@teamchat/db';

/** Serialises changes that count or list a realm's rows (owners, active users, linkifiers). */
export async function lockRealm(db: Pick<TxClient, '$queryRaw'>, realmId: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM realm WHERE id = ${realmId} FOR UPDATE`;
}

/** Serialises changes to one user's own lists and settings (read, then write). */
export async function lockUser(db: Pick<TxClient, '$queryRaw'>, userId: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM user_profile WHERE id = ${userId} FOR UPDATE`;
}
