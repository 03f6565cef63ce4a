// A private PostgreSQL primary with one streaming standby (pg_basebackup -R), each in a temp
// directory on a free port: what a managed read replica is, on this machine. Stopped (both
// servers, by their data directories) and removed by stop().

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '@teamchat/db';
import { freePort } from '@teamchat/testing';

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** PostgreSQL refuses to run as root: run its tools as the `postgres` account then. */
function run(tool: string, args: string[]): void {
  const command = path.join(PG_BIN, tool);
  const [file, argv] =
    process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  execFileSync(file, argv, { stdio: 'ignore' });
}

export class ReplicatedPostgres {
  /** The standby's application_name, as the primary's pg_stat_replication shows it. */
  static readonly STANDBY_NAME = 'teamchat-standby';
  private readonly started: ('primary' | 'standby')[] = [];

  private constructor(
    readonly dir: string,
    readonly primaryPort: number,
    readonly standbyPort: number,
  ) {}

  static async start(): Promise<ReplicatedPostgres> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-replicated-pg-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    const instance = new ReplicatedPostgres(dir, await freePort(), await freePort());
    try {
      // initdb's pg_hba.conf lets local replication connections in with --auth=trust.
      run('initdb', ['-D', instance.dataDir('primary'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
      instance.startServer('primary', instance.primaryPort, []);
      run('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(instance.primaryPort),
        '-U',
        'postgres',
        '-D',
        instance.dataDir('standby'),
        '-R',
        '-X',
        'stream',
        '--no-sync',
      ]);
      instance.startServer('standby', instance.standbyPort, ['-c', `cluster_name=${ReplicatedPostgres.STANDBY_NAME}`]);
    } catch (error) {
      await instance.stop();
      throw error;
    }
    return instance;
  }

  private dataDir(role: 'primary' | 'standby'): string {
    return path.join(this.dir, role);
  }

  private startServer(role: 'primary' | 'standby', port: number, extra: string[]): void {
    const options = [`-p ${port}`, `-k ${this.dir}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', ...extra].join(
      ' ',
    );
    run('pg_ctl', [
      '-D',
      this.dataDir(role),
      '-o',
      options,
      '-l',
      path.join(this.dir, `${role}.log`),
      '-w',
      '-t',
      '60',
      'start',
    ]);
    this.started.push(role);
  }

  primaryUrl(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.primaryPort}/${database}`;
  }

  standbyUrl(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.standbyPort}/${database}`;
  }

  /** A new database on the primary with every migration applied (the standby replays it). */
  async createDatabase(name: string): Promise<string> {
    const admin = new pg.Client({ connectionString: this.primaryUrl('postgres') });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE "${name}"`);
    } finally {
      await admin.end();
    }
    await applyMigrations(this.primaryUrl(name));
    return this.primaryUrl(name);
  }

  async stop(): Promise<void> {
    for (const role of this.started.reverse()) {
      try {
        run('pg_ctl', ['-D', this.dataDir(role), '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
