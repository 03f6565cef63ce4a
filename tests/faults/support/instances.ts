// Private PostgreSQL and Redis servers for fault tests: restarting (or crashing) them must never
// touch the shared instances on 5432/6379 that every other test uses. Each lives in a temp
// directory on a free port and is removed by stop().

import { setTimeout as sleep } from 'node:timers/promises';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '@teamchat/db';
import { freePort } from '@teamchat/testing';

const execFileAsync = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** PostgreSQL refuses to run as root: run its tools as the `postgres` account then. */
function asPostgresUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

/** Where a private instance runs: its address, and the prefix that runs a command on that host (e.g. ip netns exec). */
export interface InstancePlacement {
  host: string;
  command?: string[];
}

const LOCAL: InstancePlacement = { host: '127.0.0.1' };

/** `command args` run on the placement's host. */
function placed(placement: InstancePlacement, [command, args]: [string, string[]]): [string, string[]] {
  const [first, ...rest] = [...(placement.command ?? []), command];
  return [first, [...rest, ...args]];
}

export class OwnPostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly placement: InstancePlacement = LOCAL,
  ) {}

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  /** initdb + start (fsync off: a crash of the server, not of the machine, loses nothing committed). */
  static async start(placement: InstancePlacement = LOCAL): Promise<OwnPostgres> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-faults-pg-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    const instance = new OwnPostgres(dir, await freePort(), placement);
    execFileSync(
      ...asPostgresUser(path.join(PG_BIN, 'initdb'), [
        '-D',
        instance.dataDir,
        '-U',
        'postgres',
        '--auth=trust',
        '-E',
        'UTF8',
        '--no-sync',
      ]),
      { stdio: 'ignore' },
    );
    // initdb trusts loopback only: clients on other hosts of a test network connect too.
    if (placement.host !== LOCAL.host)
      fs.appendFileSync(path.join(instance.dataDir, 'pg_hba.conf'), 'host all all 0.0.0.0/0 trust\n');
    await instance.startServer();
    return instance;
  }

  urlFor(database: string): string {
    return `postgresql://postgres@${this.placement.host}:${this.port}/${database}`;
  }

  private pgCtl(args: string[]): void {
    const pgCtl = asPostgresUser(path.join(PG_BIN, 'pg_ctl'), ['-D', this.dataDir, ...args]);
    execFileSync(...placed(this.placement, pgCtl), { stdio: 'ignore' });
  }

  async startServer(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=${this.placement.host} -c fsync=off -c max_connections=200`;
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

/** How a private Redis persists: append-only file fsynced on every write or once a second, or not at all. */
export type RedisPersistence = 'always' | 'everysec' | 'none';

/**
 * redis-server in a temp dir. By default with an append-only file fsynced on every write: a kill
 * -9 and restart keeps every acknowledged write (queues, intake streams, BullMQ jobs), as a
 * production Redis with `appendonly yes` / `appendfsync always` does. `everysec` may lose about
 * the last second of writes on a kill -9 (the case the event tier must turn into
 * BAD_EVENT_QUEUE_ID). DEBUG is enabled for local clients (DEBUG SLEEP stalls the server).
 */
export class OwnRedis {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly port: number,
    public fsync: RedisPersistence,
    readonly placement: InstancePlacement = LOCAL,
  ) {}

  static async start(
    options: { persistent?: boolean; fsync?: RedisPersistence; placement?: InstancePlacement } = {},
  ): Promise<OwnRedis> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-faults-redis-'));
    const fsync = options.fsync ?? (options.persistent === false ? 'none' : 'always');
    const instance = new OwnRedis(dir, await freePort(), fsync, options.placement);
    await instance.startServer();
    return instance;
  }

  /** Whether a restart keeps what was written (appendonly). */
  get persistent(): boolean {
    return this.fsync !== 'none';
  }

  get url(): string {
    return `redis://${this.placement.host}:${this.port}`;
  }

  /** redis-cli's arguments that reach this server. */
  private get address(): string[] {
    return ['-h', this.placement.host, '-p', String(this.port)];
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async startServer(): Promise<void> {
    const persistence = this.persistent ? ['--appendonly', 'yes', '--appendfsync', this.fsync] : ['--appendonly', 'no'];
    const child = spawn(
      ...placed(this.placement, [
        'redis-server',
        [
          '--port',
          String(this.port),
          '--bind',
          this.placement.host,
          '--dir',
          this.dir,
          '--save',
          '',
          '--enable-debug-command',
          // DEBUG SLEEP from the test process, which is another host in a multi-host test.
          this.placement.host === LOCAL.host ? 'local' : 'yes',
          ...(this.placement.host === LOCAL.host ? [] : ['--protected-mode', 'no']),
          ...persistence,
        ],
      ]),
      { stdio: 'ignore' },
    );
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        // PING answers LOADING while the append-only file is read: wait for PONG.
        if (
          execFileSync('redis-cli', [...this.address, 'ping'], { stdio: 'pipe' })
            .toString()
            .trim() === 'PONG'
        )
          return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`redis-server on ${this.port} did not start`);
      await sleep(50);
    }
  }

  /** redis-cli against this server (its answer, trimmed). */
  cli(...args: string[]): string {
    return execFileSync('redis-cli', [...this.address, ...args], { stdio: 'pipe' })
      .toString()
      .trim();
  }

  /** Changes the fsync policy now and for later restarts (appendonly stays on). */
  setFsync(fsync: Exclude<RedisPersistence, 'none'>): void {
    if (!this.persistent) throw new Error('this Redis runs without an append-only file');
    this.cli('CONFIG', 'SET', 'appendfsync', fsync);
    this.fsync = fsync;
  }

  /** Blocks the server for `ms` (DEBUG SLEEP: no command is answered meanwhile); resolves when it answers again. */
  async stall(ms: number): Promise<void> {
    const child = spawn('redis-cli', [...this.address, 'DEBUG', 'SLEEP', String(ms / 1000)], {
      stdio: 'ignore',
    });
    await new Promise((resolve) => child.once('exit', resolve));
  }

  /** INFO memory's used_memory, in bytes (undefined while the server is down or blocked). */
  async usedMemory(): Promise<number | undefined> {
    try {
      // Not execFileSync: a stalled server must not block the caller's event loop (its clients).
      const { stdout: info } = await execFileAsync('redis-cli', [...this.address, 'INFO', 'memory'], {
        timeout: 2000,
      });
      const match = /^used_memory:(\d+)/m.exec(info);
      return match ? Number(match[1]) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * A copy of the append-only files as they are now (every acknowledged write so far, with
   * `appendfsync always`): what an operator's backup of this Redis would hold.
   */
  snapshot(): string {
    if (!this.persistent) throw new Error('this Redis runs without an append-only file');
    const copy = fs.mkdtempSync(path.join(this.dir, 'snapshot-'));
    fs.cpSync(path.join(this.dir, 'appendonlydir'), path.join(copy, 'appendonlydir'), { recursive: true });
    return copy;
  }

  /** kill -9, then starts again from `snapshot` (Redis restored from an older copy). */
  async restore(snapshot: string): Promise<void> {
    await this.kill();
    fs.rmSync(path.join(this.dir, 'appendonlydir'), { recursive: true, force: true });
    fs.cpSync(path.join(snapshot, 'appendonlydir'), path.join(this.dir, 'appendonlydir'), { recursive: true });
    await this.startServer();
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
