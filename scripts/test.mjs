// npm test: every test, on a fresh clone. Installs what it needs, finds (or starts) PostgreSQL
// and Redis, builds the services (multi-process tests run the bundles), type-checks, runs jest.
// Arguments go to jest: npm test -- services/users
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { build } from './build.mjs';
import { root } from './lib/deps.mjs';
import { ensurePostgres, ensureRedis } from './lib/infra.mjs';
import { varDir } from './lib/stack.mjs';

await build({ quiet: true });
const postgres = await ensurePostgres('postgres', { varDir: path.join(varDir, 'test') });
const redis = await ensureRedis({ varDir: path.join(varDir, 'test') });
const env = { ...process.env, TEST_DATABASE_URL: postgres.adminUrl ?? postgres.url, TEST_REDIS_URL: redis.url, TURBO_TELEMETRY_DISABLED: '1' };

const jestArgs = process.argv.slice(2);
let status = 0;
if (jestArgs.length === 0) {
  console.log('» type-checking');
  status = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit'], { cwd: root, stdio: 'inherit' }).status ?? 1;
}
if (status === 0) {
  status = spawnSync(process.execPath, [path.join(root, 'node_modules/jest/bin/jest.js'), ...jestArgs], { cwd: root, stdio: 'inherit', env }).status ?? 1;
}
await redis.stop();
await postgres.stop();
process.exit(status);
