import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './generated/client';

export type Db = PrismaClient;

export interface DbOptions {
  /** Connections in this process's pool. */
  poolSize?: number;
}

const pools = new WeakMap<Db, pg.Pool>();

/** One PrismaClient per process, over a pg pool (no Rust engine: engineType "client"). */
export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.poolSize ?? 10, idleTimeoutMillis: 30_000 });
  // An idle connection the server closed (restart, dropped database) is simply replaced.
  pool.on('error', () => {});
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, pool);
  return db;
}

/**
 * The pg pool under `db`, for the few statements that run hundreds of times in a row (the
 * delete-topic batches) or on nearly every client's every minute (GET /users/me, presence
 * pings): Prisma's client engine spends about a millisecond preparing every query, raw ones
 * included, as much as such a statement costs PostgreSQL; a named statement on the same pool
 * is parsed once per connection. Everything else goes through Prisma.
 */
export function sqlPool(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('sqlPool: this client was not made by createDb');
  return pool;
}

/**
 * Runs one statement that may run in or out of a transaction, and returns its rows (none for
 * a write without RETURNING): a named statement on the pool when `db` is the process's client
 * (see sqlPool), through Prisma inside a transaction (where it must be part of it and see its
 * snapshot). The same text serves both: $1, $2, ... parameters.
 */
export async function queryRows<T extends pg.QueryResultRow>(
  db: Pick<Db, '$queryRawUnsafe'>,
  name: string,
  text: string,
  values: unknown[],
): Promise<T[]> {
  const pool = pools.get(db as Db);
  if (pool) return (await pool.query<T>({ name, text, values })).rows;
  return db.$queryRawUnsafe<T[]>(text, ...values);
}
