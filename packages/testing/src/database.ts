// Test databases: one migrated template per migrations version, cloned for each test file.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '@teamchat/db';
import { sleep } from './wait';

const MIGRATIONS_DIR = path.resolve(path.dirname(require.resolve('@teamchat/db/package.json')), 'prisma/migrations');

/** Connection string of the PostgreSQL server tests use (its `postgres` database). */
export function adminDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
}

export function databaseUrl(name: string): string {
  const url = new URL(adminDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * `name` on the streaming standby of the tests' PostgreSQL (TEST_DATABASE_REPLICA_URL, set by
 * npm test's replica pass), or undefined without one. Databases created on the primary replicate
 * there by themselves.
 */
export function replicaDatabaseUrl(name: string): string | undefined {
  const standby = process.env.TEST_DATABASE_REPLICA_URL;
  if (!standby) return undefined;
  const url = new URL(standby);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * DATABASE_REPLICA_URL for the processes of a database on the tests' PostgreSQL: the same
 * database on its standby during the replica pass; nothing otherwise, nor for a database on
 * another server (a test's private one).
 */
export function testReplicaEnv(databaseUrlOfTest: string): { DATABASE_REPLICA_URL?: string } {
  const url = new URL(databaseUrlOfTest);
  if (url.host !== new URL(adminDatabaseUrl()).host) return {};
  const replica = replicaDatabaseUrl(url.pathname.slice(1));
  return replica ? { DATABASE_REPLICA_URL: replica } : {};
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminDatabaseUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function migrationsHash(): string {
  const hash = crypto.createHash('sha256');
  for (const entry of fs.readdirSync(MIGRATIONS_DIR).sort()) {
    const file = path.join(MIGRATIONS_DIR, entry, 'migration.sql');
    if (fs.existsSync(file)) hash.update(entry).update(fs.readFileSync(file));
  }
  return hash.digest('hex').slice(0, 12);
}

/** Creates (once per migrations version) a migrated template database and returns its name. */
export async function ensureTemplateDatabase(): Promise<string> {
  const name = `teamchat_tpl_${migrationsHash()}`;
  await withAdmin(async (client) => {
    await client.query('SELECT pg_advisory_lock(715517)');
    try {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount) return;
      const building = `${name}_building`;
      await client.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${building}"`);
      await applyMigrations(databaseUrl(building));
      await client.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
    } finally {
      await client.query('SELECT pg_advisory_unlock(715517)');
    }
  });
  return name;
}

export interface TestDatabase {
  name: string;
  url: string;
  /** The same database on the standby, during npm test's replica pass. */
  replicaUrl?: string;
  drop(): Promise<void>;
}

/** A fresh database for one test file, cloned from the template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await ensureTemplateDatabase();
  const name = `teamchat_t_${Math.floor(Date.now() / 1000)}_${crypto.randomBytes(4).toString('hex')}`;
  await withAdmin(async (client) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        return;
      } catch (error) {
        // Two clones of one template at the same instant collide; try again shortly.
        if (attempt >= 20 || !/being accessed by other users/.test((error as Error).message)) throw error;
        await sleep(100 + Math.random() * 200);
      }
    }
  });
  return {
    name,
    url: databaseUrl(name),
    replicaUrl: replicaDatabaseUrl(name),
    drop: () =>
      withAdmin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))),
  };
}

/** Drops test databases left behind by runs that died more than two hours ago. */
export async function dropStaleTestDatabases(): Promise<void> {
  const cutoff = Math.floor(Date.now() / 1000) - 2 * 3600;
  await withAdmin(async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'teamchat_t\\_%'",
    );
    for (const { datname } of rows) {
      const created = Number(datname.split('_')[2]);
      if (created && created < cutoff) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  });
}
