import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

export type Db = PrismaClient;

export interface DbOptions {
  /** Connections in this process's pool. */
  poolSize?: number;
}

/** One PrismaClient per process, over a pg pool (no Rust engine: engineType "client"). */
export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    idleTimeoutMillis: 30_000,
  });
  return new PrismaClient({ adapter });
}
