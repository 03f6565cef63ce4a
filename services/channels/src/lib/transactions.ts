import { transaction, type Db, type Tx } from '@teamchat/db';

/** Runs `fn` in the caller's transaction when there is one (composed views), else in a new one. */
export function inTransaction<T>(db: Db, tx: Tx | undefined, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return tx ? fn(tx) : transaction(db, fn);
}
