// packages/db/scripts/migrate-deploy.mjs, as every pod's init container runs it: several at once
// against an empty database all succeed, one after the other (the advisory lock), the
// migrations applied once; run again later, nothing to do; a lock held elsewhere makes it wait.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

jest.setTimeout(180_000);

const script = path.resolve(__dirname, '../scripts/migrate-deploy.mjs');
const MIGRATE_LOCK_KEY = Number(
  /MIGRATE_LOCK_KEY = ([\d_]+)/.exec(fs.readFileSync(script, 'utf8'))![1].replaceAll('_', ''),
);
/** The tests' PostgreSQL (as @teamchat/testing's, which depends on this package). */
const admin = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const name = `teamchat_migrate_${crypto.randomBytes(4).toString('hex')}`;
const url = Object.assign(new URL(admin), { pathname: `/${name}` }).toString();

function run(): Promise<{ code: number | null; output: string; ended: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, DATABASE_URL: url } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('exit', (code) => resolve({ code, output, ended: Date.now() }));
  });
}

async function query<T extends pg.QueryResultRow>(connection: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: connection });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await query(admin, `CREATE DATABASE "${name}"`);
});
afterAll(async () => {
  await query(admin, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
});

test('concurrent runs all succeed and apply each migration once; a later run finds nothing to do', async () => {
  const runs = await Promise.all([run(), run(), run()]);
  for (const { code, output } of runs) expect([code, output]).toEqual([0, expect.any(String)]);
  const applied = await query<{ migration_name: string; n: string }>(
    url,
    'SELECT migration_name, count(*) AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL GROUP BY 1',
  );
  expect(applied.length).toBeGreaterThan(0);
  expect(applied.filter((row) => Number(row.n) !== 1)).toEqual([]);
  // Exactly one run applied them; the others waited for its lock and found the schema current.
  expect(runs.filter(({ output }) => /applied/i.test(output) && !/No pending migrations/i.test(output))).toHaveLength(
    1,
  );
  const again = await run();
  expect(again.code).toBe(0);
  expect(again.output).toMatch(/No pending migrations/i);
});

test('a run waits while another holds the migration lock', async () => {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  await holder.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK_KEY]);
  const released = Date.now() + 1500;
  const pending = run();
  await sleep(1500);
  await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK_KEY]);
  await holder.end();
  const { code, ended } = await pending;
  expect(code).toBe(0);
  expect(ended).toBeGreaterThanOrEqual(released);
});
