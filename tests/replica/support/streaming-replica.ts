// A private PostgreSQL primary and its streaming standby (pg_basebackup -R), each in a temp
// directory on a free port, never the shared 5432 instance: the standby's replay is paused and
// its postmaster killed here. Both load pg_stat_statements, so a test can count the statements
// the standby ran. Stopped by their data directories and removed by stop().

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '@teamchat/db';
import { freePort } from '@teamchat/testing';

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

type Server = 'primary' | 'standby';

/** PostgreSQL refuses to run as root: its tools run as the `postgres` account then. */
function pgTool(tool: string, args: string[]): void {
  const command = path.join(PG_BIN, tool);
  const [file, argv] =
    process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  execFileSync(file, argv, { stdio: 'ignore' });
}

export class StreamingReplica {
  private constructor(
    readonly dir: string,
    readonly primaryPort: number,
    readonly standbyPort: number,
  ) {}

  /** initdb (wal_level replica and trusted local replication are initdb's defaults), a database with every migration, then the standby. */
  static async start(database: string): Promise<StreamingReplica> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-replica-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    const instance = new StreamingReplica(dir, await freePort(), await freePort());
    try {
      pgTool('initdb', [
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
      await instance.query('primary', 'postgres', `CREATE DATABASE "${database}"`);
      await applyMigrations(instance.primaryUrl(database));
      await instance.query('primary', database, 'CREATE EXTENSION pg_stat_statements');
      const primary = ['-h', '127.0.0.1', '-p', String(instance.primaryPort), '-U', 'postgres'];
      pgTool('pg_basebackup', [...primary, '-D', instance.dataDir('standby'), '-R', '-X', 'stream', '--no-sync']);
      instance.startServer('standby');
    } catch (error) {
      await instance.stop();
      throw error;
    }
    return instance;
  }

  primaryUrl(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.primaryPort}/${database}`;
  }

  standbyUrl(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.standbyPort}/${database}`;
  }

  private dataDir(server: Server): string {
    return path.join(this.dir, server);
  }

  startServer(server: Server): void {
    const port = server === 'primary' ? this.primaryPort : this.standbyPort;
    const options = [
      `-p ${port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      '-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all',
    ].join(' ');
    const log = path.join(this.dir, `${server}.log`);
    pgTool('pg_ctl', ['-D', this.dataDir(server), '-o', options, '-l', log, '-w', '-t', '60', 'start']);
  }

  /** kill -9 of the standby's postmaster (its backends exit when they notice). */
  killStandby(): void {
    const pid = Number(fs.readFileSync(path.join(this.dataDir('standby'), 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGKILL');
  }

  /** Whether the standby's postmaster has gone (so that it can be started again). */
  standbyStopped(): boolean {
    try {
      pgTool('pg_ctl', ['-D', this.dataDir('standby'), 'status']);
      return false;
    } catch {
      return true;
    }
  }

  async query<T extends pg.QueryResultRow = pg.QueryResultRow>(
    server: Server,
    database: string,
    text: string,
    values: unknown[] = [],
  ): Promise<T[]> {
    const url = server === 'primary' ? this.primaryUrl(database) : this.standbyUrl(database);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<T>(text, values)).rows;
    } finally {
      await client.end();
    }
  }

  pauseReplay(database: string): Promise<unknown> {
    return this.query('standby', database, 'SELECT pg_wal_replay_pause()');
  }

  resumeReplay(database: string): Promise<unknown> {
    return this.query('standby', database, 'SELECT pg_wal_replay_resume()');
  }

  /** Resolves once the standby has replayed everything the primary had written when called. */
  async caughtUp(database: string, timeoutMs = 30_000): Promise<void> {
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
      await new Promise((resolve) => setTimeout(resolve, 20));
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

  async stop(): Promise<void> {
    for (const server of ['standby', 'primary'] as Server[]) {
      try {
        pgTool('pg_ctl', ['-D', this.dataDir(server), '-m', 'immediate', '-w', 'stop']);
      } catch {
        // not running
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
