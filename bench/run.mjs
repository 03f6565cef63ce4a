// npm run bench [-- <suite> ...]: runs each benchmark suite (bench/<suite>/index.ts) in turn.
// Suites measure the system and its baseline in the same run and print ratios beside raw numbers.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from '../scripts/build.mjs';
import { root } from '../scripts/lib/deps.mjs';
import { ensurePostgres, ensureRedis } from '../scripts/lib/infra.mjs';
import { varDir } from '../scripts/lib/stack.mjs';

const benchDir = path.join(root, 'bench');
const all = fs.readdirSync(benchDir).filter((name) => fs.existsSync(path.join(benchDir, name, 'index.ts')));
const wanted = process.argv.slice(2);
const suites = wanted.length ? wanted : all;
for (const suite of suites)
  if (!all.includes(suite)) throw new Error(`no benchmark suite '${suite}' (have: ${all.join(', ')})`);

await build({ quiet: true });
const postgres = await ensurePostgres('postgres', { varDir: path.join(varDir, 'bench') });
const redis = await ensureRedis({ varDir: path.join(varDir, 'bench') });
fs.mkdirSync(path.join(benchDir, 'results'), { recursive: true });
let failed = 0;
for (const suite of suites) {
  console.log(`\n=== bench: ${suite} ===`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(benchDir, suite, 'index.ts')], {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      TEST_DATABASE_URL: postgres.adminUrl ?? postgres.url,
      TEST_REDIS_URL: redis.url,
      BENCH_RESULTS_DIR: path.join(benchDir, 'results'),
    },
  });
  if (result.status !== 0) failed++;
}
await redis.stop();
await postgres.stop();
process.exit(failed ? 1 : 0);
