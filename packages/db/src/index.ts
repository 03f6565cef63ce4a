export { createDb, queryRows, sqlPool, type Db, type DbOptions } from './client';
export {
  lsnValue,
  ReadRouter,
  UseThePrimary,
  type ReadRouterOptions,
  type ReadSource,
  type WritePositions,
} from './replica';
export { lockForChange, transaction, type Tx, type TxClient, type TransactionOptions } from './transaction';
export { applyMigrations } from './migrate';
export * from './generated/client';
