// npm run manage -- <command> [options]: the admin command line against the local stack's
// database (DATABASE_URL/REDIS_URL when set). See services/users/src/manage.ts for commands.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { build } from './build.mjs';
import { root } from './lib/deps.mjs';
import { ensureDataStores } from './lib/stack.mjs';

await build({ quiet: true });
const { postgres, redis } = await ensureDataStores();
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', path.join(root, 'services/users/dist/manage.js'), ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      // The server's secret when given: imports seal bots' webhook tokens with it.
      INTERNAL_JWT_SECRET: process.env.INTERNAL_JWT_SECRET ?? 'manage',
      LOG_LEVEL: 'warn',
    },
  },
);
await postgres.stop();
await redis.stop();
process.exit(result.status ?? 1);
