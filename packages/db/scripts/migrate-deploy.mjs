#!/usr/bin/env node
// `prisma migrate deploy` for DATABASE_URL, one run at a time per database: every Teamchat pod's
// `migrate` init container (k8s/base/*/deployment.yaml) and compose's `migrate` service run it,
// so a release migrates whenever its first pod starts and re-applying the manifests is always
// safe (no Job to collide with). A session-level PostgreSQL advisory lock serializes the runs:
// the first applies the pending migrations, the others wait for it and then find nothing to do.
// (Prisma's JS schema engine with the migrate adapter, docs/adr/0001, does not lock; the native
// engine's lock gives up after 10 s, shorter than a long migration.) The lock goes with the
// connection: a run killed midway never leaves it held.
//
//   DATABASE_URL=postgresql://... node packages/db/scripts/migrate-deploy.mjs

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** The advisory lock key (distinct from Prisma's 72707369 and the tests' template lock). */
export const MIGRATE_LOCK_KEY = 44_017_031;

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

function prismaMigrateDeploy() {
  const cli = require.resolve('prisma/build/index.js', { paths: [packageRoot] });
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [cli, 'migrate', 'deploy', '--config', path.join(packageRoot, 'prisma.config.ts')],
      { cwd: packageRoot, stdio: 'inherit', env: { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1' } },
    );
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const log = (msg) =>
  console.log(JSON.stringify({ level: 'info', time: new Date().toISOString(), service: 'migrate', msg }));

if (!process.env.DATABASE_URL) {
  console.error('DATABASE_URL is required');
  process.exit(2);
}
const client = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'teamchat-migrate' });
await client.connect();
let code = 1;
try {
  const started = Date.now();
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK_KEY]);
  log(`migration lock taken after ${Date.now() - started} ms`);
  code = await prismaMigrateDeploy();
} finally {
  await client.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK_KEY]).catch(() => {});
  await client.end().catch(() => {});
}
process.exit(code);
