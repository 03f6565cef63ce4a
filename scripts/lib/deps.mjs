// Installing what the two commands need, using only Node built-ins (this runs before npm install).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '..', '..');

function newer(a, b) {
  return fs.existsSync(a) && (!fs.existsSync(b) || fs.statSync(a).mtimeMs > fs.statSync(b).mtimeMs);
}

/**
 * npm install when node_modules is missing or older than the lockfile; prisma generate when needed.
 * `npm install` rather than `npm ci`: it installs the same pinned versions from the same lockfile,
 * but keeps what is already in node_modules.
 */
export function ensureInstalled() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(marker) || newer(path.join(root, 'package-lock.json'), marker)) {
    console.log('» installing dependencies (npm install)');
    execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  }
  const schema = path.join(root, 'packages/db/prisma/schema.prisma');
  const generated = path.join(root, 'packages/db/src/generated/client.ts');
  if (newer(schema, generated) || !fs.existsSync(generated)) {
    console.log('» generating the Prisma client');
    execFileSync(process.execPath, [path.join(root, 'node_modules/prisma/build/index.js'), 'generate'], {
      cwd: path.join(root, 'packages/db'),
      stdio: 'inherit',
      env: {
        ...process.env,
        DATABASE_URL: process.env.DATABASE_URL ?? 'postgresql://unused@127.0.0.1/unused',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
      },
    });
  }
}
