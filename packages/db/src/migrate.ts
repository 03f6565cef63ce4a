import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
// Resolved through the workspace link, so it also works from a bundled service.
const packageRoot = path.dirname(require.resolve('@teamchat/db/package.json'));

/** Applies every checked-in migration to `databaseUrl` (prisma migrate deploy). */
export async function applyMigrations(databaseUrl: string): Promise<void> {
  const prismaCli = require.resolve('prisma/build/index.js', { paths: [packageRoot] });
  await run(
    process.execPath,
    [prismaCli, 'migrate', 'deploy', '--config', path.join(packageRoot, 'prisma.config.ts')],
    {
      cwd: packageRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      maxBuffer: 16 * 1024 * 1024,
    },
  );
}
