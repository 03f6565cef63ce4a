// Private PostgreSQL and Redis servers for fault tests: restarting (or crashing) them must never
// touch the shared instances on 5432/6379 that every other test uses. Each lives in a temp
// directory on a free port and is removed by stop().

import { setTimeout as sleep } from 'node:timers/promises';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '@teamchat/db';
import { freePort } from '@teamchat/testing';

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** PostgreSQL refuses to run as root: run its tools as the `postgres` account then. */
function asPostgresUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

export class OwnPostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  /** initdb + start (fsync off: a crash of the server, not of the machine, loses nothing committed). */
  static async start(): Promise<OwnPostgres> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-faults-pg-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    const instance = new OwnPostgres(dir, await freePort());
    execFileSync(...asPostgresUser(path.join(PG_BIN, 'initdb'), ['-D', instance.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']), { stdio: 'ignore' });
    await instance.startServer();
    return instance;
  }

  urlFor(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private pgCtl(args: string[]): void {
    execFileSync(...asPostgresUser(path.join(PG_BIN, 'pg_ctl'), ['-D', this.dataDir, ...args]), { stdio: 'ignore' });
  }

  async startServer(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    this.pgCtl(['-o', options, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
  }

  /** `immediate`: the postmaster and every backend stop at once, like a crash (recovery on start). */
  stopServer(mode: 'fast' | 'immediate' = 'immediate'): void {
    this.pgCtl(['-m', mode, '-w', 'stop']);
  }

  /** A new database with every migration applied. */
  async createDatabase(name: string): Promise<string> {
    const admin = new pg.Client({ connectionString: this.urlFor('postgres') });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE "${name}"`);
    } finally {
      await admin.end();
    }
    const url = this.urlFor(name);
    await applyMigrations(url);
    return url;
  }

  async stop(): Promise<void> {
    try {
      this.stopServer('immediate');
    } catch {
      // already stopped
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * redis-server with an append-only file fsynced on every write: a kill -9 and restart keeps
 * every acknowledged write (queues, intake streams, BullMQ jobs), as a production Redis with
 * `appendonly yes` / `appendfsync always` does.
 */
export class OwnRedis {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly persistent: boolean,
  ) {}

  static async start(options: { persistent?: boolean } = {}): Promise<OwnRedis> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-faults-redis-'));
    const instance = new OwnRedis(dir, await freePort(), options.persistent ?? true);
    await instance.startServer();
    return instance;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async startServer(): Promise<void> {
    const persistence = this.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', ...persistence], { stdio: 'ignore' });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        execFileSync('redis-cli', ['-p', String(this.port), 'ping'], { stdio: 'pipe' });
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`redis-server on ${this.port} did not start`);
        await sleep(50);
      }
    }
  }

  /** kill -9: no shutdown, no final save. */
  async kill(): Promise<void> {
    this.child?.kill('SIGKILL');
    await this.exited;
  }

  async stop(): Promise<void> {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
