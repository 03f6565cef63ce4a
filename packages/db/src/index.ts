export { createDb, queryRows, sqlPool, type Db, type DbOptions } from './client';
export { transaction, type Tx, type TxClient, type TransactionOptions } from './transaction';
export { applyMigrations } from './migrate';
export * from './generated/client';
