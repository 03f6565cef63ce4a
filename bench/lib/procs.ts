// Processes of the benchmarks: the built services (services/<name>/dist/main.js), baselines
// and balancers (scripts that print {"port": N}), each its own process, all killed whatever way
// the benchmark ends. CPU and memory accounting from /proc.

import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BaseEnv } from '@teamchat/runtime';
import { deployedNodeArgs, freePort, residentBytes, testRedisTarget } from '@teamchat/testing';

export const ROOT = path.resolve(__dirname, '../..');

export { sleep };

/**
 * What a benchmark's deployment shares: its database, a Redis prefix of its own, a fresh
 * internal secret, quiet logs. `env` for this process (createBaseDeps), `serviceEnv` for the
 * services it starts.
 */
export function benchEnv(
  databaseUrl: string,
  settings: { prefix: string; eventPartitions: number },
): { env: BaseEnv; serviceEnv: Record<string, string> } {
  const env: BaseEnv = {
    DATABASE_URL: databaseUrl,
    ...testRedisTarget(),
    REDIS_PREFIX: `${settings.prefix}${crypto.randomBytes(4).toString('hex')}:`,
    INTERNAL_JWT_SECRET: crypto.randomBytes(24).toString('hex'),
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    EXTERNAL_SCHEME: 'http',
    EVENT_PARTITIONS: settings.eventPartitions,
    // This process's own pool; the services' pools are set where they are started.
    DB_POOL_SIZE: 4,
  };
  return { env, serviceEnv: Object.fromEntries(Object.entries(env).map(([key, value]) => [key, String(value)])) };
}

export interface Proc {
  name: string;
  child: ChildProcess;
  port: number;
  output: string[];
}

const children = new Set<ChildProcess>();
const interruptHooks: Array<() => Promise<unknown>> = [];
/** Clean-up to run when the benchmark is interrupted (Ctrl-C, SIGTERM), e.g. dropping its database. */
export function onInterrupt(hook: () => Promise<unknown>): void {
  interruptHooks.push(hook);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const child of children) child.kill('SIGKILL');
    const timeout = new Promise((resolve) => setTimeout(resolve, 10_000));
    void Promise.race([Promise.allSettled(interruptHooks.map((hook) => hook())), timeout]).then(() =>
      process.exit(130),
    );
  });
}
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/**
 * The core split. By default nothing is pinned: the generator (this process) and the system
 * under test share both cores as the scheduler sees fit (the report gives each one's CPU).
 * BENCH_LOAD_PIN=1: this process runs on core 0 and every process it starts on core 1.
 */
export const PINNED = process.env.BENCH_LOAD_PIN === '1';
const PIN_STACK = PINNED ? '1' : undefined;
if (PINNED) spawn('taskset', ['-cp', '0', String(process.pid)], { stdio: 'ignore' });

function spawnProcess(args: string[], env: NodeJS.ProcessEnv, pin?: string): { child: ChildProcess; output: string[] } {
  const output: string[] = [];
  const command = pin ? 'taskset' : process.execPath;
  const argv = pin ? ['-c', pin, process.execPath, ...args] : args;
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 100) output.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output };
}

/** BENCH_PROFILE_DIR=<dir>: every service, floor and balancer writes a V8 CPU profile there (stopped gracefully). */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const profileArgs = (name: string) =>
  PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`]
    : [];

/** A script that prints {"port": N} once listening (floor.mjs, the balancer). */
export async function startPrintingPort(
  name: string,
  script: string,
  args: string[] = [],
  pin = PIN_STACK,
): Promise<Proc> {
  const { child, output } = spawnProcess([...profileArgs(name), script, ...args], {}, pin);
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const match = /"port":\s*(\d+)/.exec(chunk.toString());
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', () => reject(new Error(`${name} exited: ${output.join('')}`)));
  });
  return { name, child, port, output };
}

/** A built service, ready when /health/ready answers 200. */
export async function startService(name: string, service: string, env: NodeJS.ProcessEnv): Promise<Proc> {
  const main = path.join(ROOT, `services/${service}/dist/main.js`);
  if (!fs.existsSync(main))
    throw new Error(`${main} is missing: run this through \`npm run bench -- load\`, which builds the services`);
  const port = await freePort();
  const { child, output } = spawnProcess(
    [...deployedNodeArgs(service), ...profileArgs(name), main],
    { ...env, PORT: String(port) },
    PIN_STACK,
  );
  const proc = { name, child, port, output };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited: ${output.join('')}`);
    const ready = await new Promise<boolean>((resolve) => {
      http
        .get(`http://127.0.0.1:${port}/health/ready`, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
        .on('error', () => resolve(false));
    });
    if (ready) return proc;
    if (Date.now() > deadline) throw new Error(`${name} not ready: ${output.join('')}`);
    await sleep(150);
  }
}

export async function stop(proc: Proc | undefined): Promise<void> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.child.once('exit', resolve));
  if (PROFILE_DIR) {
    proc.child.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
  }
  proc.child.kill('SIGKILL');
  await exited;
}

/** CPU time (user + system) a process used so far, in ms (NaN once it is gone). */
export function cpuMs(pid: number): number {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  }
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/** CPU ms of each PostgreSQL process on the machine, by pid (the server the bench shares). */
function postgresCpu(): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue; // gone meanwhile
    }
    const ms = cpuMs(Number(entry));
    if (Number.isFinite(ms)) cpu.set(Number(entry), ms);
  }
  return cpu;
}

export const POSTGRES_CPU = 'postgres (shared)';
export const POSTGRES_BACKENDS_CPU = 'postgres (its backends)';

/**
 * Starts measuring: the returned function gives the CPU ms each named process, and PostgreSQL's
 * processes together (POSTGRES_CPU: backends opened meanwhile count whole), spent since. With
 * `postgresBackends` (pids of the system's own connections, see databaseBackendPids), only
 * those count (POSTGRES_BACKENDS_CPU): the server is shared with whatever else runs.
 */
export function startCpuMeter(pids: Record<string, number>, postgresBackends?: number[]): () => Record<string, number> {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
  const postgresBefore = postgresBackends
    ? new Map(
        postgresBackends.map((pid): [number, number] => [pid, cpuMs(pid)]).filter(([, ms]) => Number.isFinite(ms)),
      )
    : postgresCpu();
  return () => {
    const cpu = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid) - before[name]]));
    let postgres = 0;
    if (postgresBackends) {
      // A backend that ended meanwhile is left out (its CPU since is unknown).
      for (const [pid, ms] of postgresBefore) {
        const now = cpuMs(pid);
        if (Number.isFinite(now)) postgres += now - ms;
      }
      cpu[POSTGRES_BACKENDS_CPU] = postgres;
      return cpu;
    }
    for (const [pid, ms] of postgresCpu()) postgres += ms - (postgresBefore.get(pid) ?? 0);
    if (postgres > 0) cpu[POSTGRES_CPU] = postgres;
    return cpu;
  };
}

/** The PostgreSQL client backends connected to the database `db` reads (the one a benchmark created). */
export async function databaseBackendPids(db: {
  $queryRaw<T>(query: TemplateStringsArray, ...values: unknown[]): Promise<T>;
}): Promise<number[]> {
  const rows = await db.$queryRaw<{ pid: number }[]>`
    SELECT pid FROM pg_stat_activity
     WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`;
  return rows.map((row) => row.pid);
}

/** CPU ms each named process (and PostgreSQL, see startCpuMeter) spends while `run` runs, beside the result. */
export async function withCpu<T>(
  pids: Record<string, number>,
  run: () => Promise<T>,
): Promise<{ result: T; cpu: Record<string, number> }> {
  const spent = startCpuMeter(pids);
  const result = await run();
  return { result, cpu: spent() };
}

/** Resident memory of a process, in bytes. */
export function rssBytes(proc: Proc): number {
  return residentBytes(proc.child.pid!) ?? NaN;
}

/** The process id of the Redis server a connection reaches (NaN when INFO does not say), for the CPU account. */
export async function redisServerPid(redis: { info(section: 'server'): Promise<string> }): Promise<number> {
  return Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
}

/** The machine's load average (1 minute), for the report. */
export function loadAverage(): number {
  return Number(fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}
