// Row locks that serialise concurrent changes inside a transaction (lockRealm: @teamchat/domain).
import { lockForChange, type TxClient } from '@teamchat/db';

/** Serialises changes to one user's own lists and settings (read, then write). */
export function lockUser(db: Pick<TxClient, '$queryRaw'>, userId: number): Promise<void> {
  return lockForChange(db, 'user_profile', userId);
}
