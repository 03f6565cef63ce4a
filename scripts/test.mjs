// npm test: every test, on a fresh clone. Installs what it needs, finds (or starts) PostgreSQL
// and Redis, builds the services (multi-process tests run the bundles), checks the sources (import
// cycles, types, lint, format), runs jest.
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
const env = {
  ...process.env,
  TEST_DATABASE_URL: postgres.adminUrl ?? postgres.url,
  TEST_REDIS_URL: redis.url,
  TURBO_TELEMETRY_DISABLED: '1',
};

const jestArgs = process.argv.slice(2);
let status = 0;
if (jestArgs.length === 0) {
  // The whole-tree checks, each failing the run on any finding (a run of chosen test files skips them).
  const checks = [
    ['import cycles', ['scripts/check-cycles.mjs']],
    ['type-checking', ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit']],
    ['lint', ['node_modules/eslint/bin/eslint.js', 'packages', 'services', 'tests', 'bench']],
    ['format', ['node_modules/prettier/bin/prettier.cjs', '--check', '--log-level', 'warn', '.']],
  ];
  for (const [title, args] of checks) {
    console.log(`» ${title}`);
    const [script, ...rest] = args;
    const started = Date.now();
    const result = spawnSync(process.execPath, [path.join(root, script), ...rest], { cwd: root, stdio: 'inherit' });
    if (result.status !== 0) console.error(`» ${title} failed (${Math.round((Date.now() - started) / 1000)} s)`);
    if (result.status !== 0 && status === 0) status = result.status ?? 1;
  }
}
if (status === 0) {
  status =
    spawnSync(process.execPath, [path.join(root, 'node_modules/jest/bin/jest.js'), ...jestArgs], {
      cwd: root,
      stdio: 'inherit',
      env,
    }).status ?? 1;
}
await redis.stop();
await postgres.stop();
process.exit(status);
