// Row locks that serialise concurrent changes inside a transaction (lockRealm: @teamchat/domain).
import type { TxClient } from '@teamchat/db';

/**
 * Serialises changes to one user's own lists and settings (read, then write). FOR NO KEY UPDATE:
 * each message delivered to the user checks their row FOR KEY SHARE, which FOR UPDATE would block.
 */
export async function lockUser(db: Pick<TxClient, '$queryRaw'>, userId: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM user_profile WHERE id = ${userId} FOR NO KEY UPDATE`;
}
