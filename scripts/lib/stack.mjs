// The local stack both commands share: where its state lives, its database and Redis, migrations.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './deps.mjs';
import { ensurePostgres, ensureRedis } from './infra.mjs';

export const varDir = process.env.TEAMCHAT_VAR_DIR ?? path.join(root, 'var');

export function migrate(databaseUrl) {
  execFileSync(process.execPath, [path.join(root, 'node_modules/prisma/build/index.js'), 'migrate', 'deploy'], {
    cwd: path.join(root, 'packages/db'),
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
  });
}

/** PostgreSQL (database `teamchat`) and Redis for the local stack, migrated. */
export async function ensureDataStores() {
  fs.mkdirSync(varDir, { recursive: true });
  const postgres = await ensurePostgres('teamchat', { varDir });
  const redis = await ensureRedis({ varDir });
  console.log('» applying migrations');
  migrate(postgres.url);
  return { postgres, redis };
}
