import type { Db } from './client';
import { Prisma } from './generated/client';

export type TxClient = Prisma.TransactionClient;

/**
 * A transaction in progress. `db` runs queries inside it; `onCommit` schedules work
 * (such as publishing events) that must only happen once the transaction has committed.
 */
export interface Tx {
  db: TxClient;
  onCommit(callback: () => Promise<void> | void): void;
}

export interface TransactionOptions {
  isolationLevel?: Prisma.TransactionIsolationLevel;
  /** Milliseconds the transaction may run (Prisma's default is 5 s). */
  timeout?: number;
}

/**
 * Runs `fn` in one database transaction. Callbacks registered with `tx.onCommit` run
 * after COMMIT, in order; a failing callback is reported to `onCommitError` and does not
 * undo the committed change (the event outbox relay re-sends what could not be sent).
 */
export async function transaction<T>(
  db: Db,
  fn: (tx: Tx) => Promise<T>,
  options: TransactionOptions = {},
  onCommitError: (error: unknown) => void = (error) => console.error('after-commit callback failed', error),
): Promise<T> {
  const afterCommit: Array<() => Promise<void> | void> = [];
  const result = await db.$transaction(
    (client) => fn({ db: client, onCommit: (callback) => afterCommit.push(callback) }),
    { isolationLevel: options.isolationLevel, timeout: options.timeout ?? 30_000, maxWait: 10_000 },
  );
  for (const callback of afterCommit) {
    try {
      await callback();
    } catch (error) {
      onCommitError(error);
    }
  }
  return result;
}

/**
 * Locks one row until the transaction ends, so changes that read and then write around it
 * (counts, lists, orders) apply one after the other. FOR NO KEY UPDATE, not FOR UPDATE: every
 * row that references this one checks it FOR KEY SHARE (each message its realm and channel, each
 * delivery its user), and FOR UPDATE would hold those inserts until the change commits.
 */
export async function lockForChange(
  db: Pick<TxClient, '$queryRaw'>,
  table: 'realm' | 'stream' | 'user_profile',
  id: number,
): Promise<void> {
  await db.$queryRaw`SELECT id FROM ${Prisma.raw(`"${table}"`)} WHERE id = ${id} FOR NO KEY UPDATE`;
}
