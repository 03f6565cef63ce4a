// Running built services as separate processes, the way the launchers do:
// `node --require dist/telemetry.js dist/main.js`, reading their JSON log lines. Used by the
// tests that need real processes (production shape, event-tier replicas, fault injection).

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

export const repoRoot = path.resolve(__dirname, '../../..');

export interface ServiceDefinition {
  name: string;
  port: number;
  urlVar?: string;
  /** Node's options as deployed (NODE_OPTIONS in its Deployment). */
  nodeOptions?: string;
}

export interface StackDefinition {
  gatewayPort: number;
  gatewayNodeOptions: string;
  services: ServiceDefinition[];
}

/** scripts/lib/services.mjs: every process of the stack and its port (an ES module, read by node itself). */
export function stackServices(): StackDefinition {
  const script = `import('${path.join(repoRoot, 'scripts/lib/services.mjs')}').then((m) => console.log(JSON.stringify({ gatewayPort: m.GATEWAY_PORT, gatewayNodeOptions: m.GATEWAY_NODE_OPTIONS, services: m.SERVICES })))`;
  // Without PORT: the module reads it for the gateway's port.
  const { PORT: _port, ...env } = process.env;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env }).toString();
  return JSON.parse(output);
}

let stack: StackDefinition | undefined;

/** Node's options for a process of the stack as deployed, as arguments (none for an unknown name). */
export function deployedNodeArgs(name: string): string[] {
  stack ??= stackServices();
  const options =
    name === 'gateway'
      ? stack.gatewayNodeOptions
      : stack.services.find((service) => service.name === name)?.nodeOptions;
  return options ? options.split(' ') : [];
}

/** Services with a built bundle and its telemetry preload (node scripts/build.mjs). */
export function builtServices(): string[] {
  return fs
    .readdirSync(path.join(repoRoot, 'services'))
    .filter((name) => fs.existsSync(path.join(repoRoot, 'services', name, 'dist/main.js')));
}

const builtThisProcess = new Set<string>();
/** Builds services/<name>/dist for the named services (each once per test process). */
export function buildServices(names: string[]): void {
  const missing = names.filter((name) => !builtThisProcess.has(name));
  if (missing.length === 0) return;
  execFileSync(process.execPath, [path.join(repoRoot, 'scripts/build.mjs'), ...missing], { stdio: 'ignore' });
  for (const name of missing) builtThisProcess.add(name);
}

export function preloadPath(service: string): string {
  return path.join(repoRoot, 'services', service, 'dist/telemetry.js');
}

/*
 * Ports handed to processes we start. Not the OS's pick (listen on 0): that comes from the ephemeral
 * range (ip_local_port_range, 32768-60999 here), where any outgoing connection — a Redis or
 * PostgreSQL client of another test — may take the port in the moment between our check and the
 * child's listen (CI failed once on EADDRINUSE that way). Below that range only listeners bind, and
 * each jest worker (or other process) takes its own slice of it, never handing out a port twice.
 */
const PORT_RANGE_START = 20_000;
const PORT_RANGE_END = 32_700;
const PORT_SLICES = 16;
const handedOut = new Set<number>();
let nextCandidate: number | undefined;

function portSlice(): { start: number; size: number } {
  const size = Math.floor((PORT_RANGE_END - PORT_RANGE_START) / PORT_SLICES);
  const worker = Number(process.env.JEST_WORKER_ID);
  const index = Number.isInteger(worker) && worker > 0 ? (worker - 1) % PORT_SLICES : process.pid % PORT_SLICES;
  return { start: PORT_RANGE_START + index * size, size };
}

async function canListen(port: number): Promise<boolean> {
  const server = net.createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (listening) await new Promise((resolve) => server.close(resolve));
  return listening;
}

/** A port nobody listens on right now, outside the ephemeral range and not handed out before by this process. */
export async function freePort(): Promise<number> {
  const { start, size } = portSlice();
  nextCandidate ??= start + Math.floor(Math.random() * size);
  for (let tried = 0; tried < size; tried++) {
    const port = start + ((nextCandidate - start + tried) % size);
    if (handedOut.has(port)) continue;
    // Taken before the check awaits: concurrent callers (Promise.all) must not both get this port.
    handedOut.add(port);
    if (!(await canListen(port))) continue;
    nextCandidate = port + 1;
    return port;
  }
  throw new Error(`no free port left in ${start}-${start + size - 1}`);
}

export type LogLine = Record<string, unknown> & { msg?: string; level?: string };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class ServiceProcess {
  readonly logs: LogLine[] = [];
  /** Warning and error lines (kept apart from `logs`, which may be capped), at most 500. */
  readonly problems: LogLine[] = [];
  /** Lines that were not JSON (there should be none). */
  readonly otherOutput: string[] = [];
  readonly exited: Promise<Exit>;
  private waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];

  constructor(
    readonly name: string,
    readonly url: string,
    readonly child: ChildProcess,
    /** Keep at most this many log lines (long runs); older ones are dropped. */
    private readonly maxLogLines = Infinity,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const consume = (stream: NodeJS.ReadableStream) => {
      let buffered = '';
      stream.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        let newline: number;
        while ((newline = buffered.indexOf('\n')) !== -1) {
          this.accept(buffered.slice(0, newline));
          buffered = buffered.slice(newline + 1);
        }
      });
    };
    consume(child.stdout!);
    consume(child.stderr!);
  }

  get pid(): number {
    return this.child.pid!;
  }

  private accept(text: string): void {
    if (!text.trim()) return;
    let line: LogLine;
    try {
      line = JSON.parse(text);
    } catch {
      this.otherOutput.push(text);
      if (this.otherOutput.length > this.maxLogLines) this.otherOutput.shift();
      return;
    }
    this.logs.push(line);
    if ((line.level === 'warn' || line.level === 'error' || line.level === 'fatal') && this.problems.length < 500)
      this.problems.push(line);
    if (this.logs.length > this.maxLogLines) this.logs.splice(0, this.logs.length - this.maxLogLines);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.predicate(line)) return true;
      waiter.resolve(line);
      return false;
    });
  }

  /** The first log line (past or future) that matches; fails after `timeoutMs`. */
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
    const seen = this.logs.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.name}: no matching log line within ${timeoutMs} ms; output:\n${this.tail()}`)),
        timeoutMs,
      );
      this.waiters.push({
        predicate,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }

  tail(lines = 30): string {
    return [...this.logs.map((line) => JSON.stringify(line)), ...this.otherOutput].slice(-lines).join('\n');
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` and waits for the exit, SIGKILL after `timeoutMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 30_000): Promise<Exit> {
    if (!this.running) return this.exited;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }
}

export interface StartServiceOptions {
  /** Run the telemetry preload first, as the launchers do (default true). */
  preload?: boolean;
  /** The name its log lines use ("events" for every replica); defaults to `name`. */
  logName?: string;
  maxLogLines?: number;
  /**
   * A prefix that runs the process on another host of a test network, e.g. `['ip', 'netns', 'exec',
   * ns]` (it execs, so the pid is the service's); env.HOST is then that host's address.
   */
  command?: string[];
}

/** Starts a built service (with its telemetry preload) and waits until it listens. */
export async function startServiceProcess(
  name: string,
  env: NodeJS.ProcessEnv,
  options: StartServiceOptions = {},
): Promise<ServiceProcess> {
  const dist = path.join(repoRoot, 'services', name, 'dist');
  const preload = options.preload ?? true;
  if (preload && !fs.existsSync(path.join(dist, 'telemetry.js')))
    throw new Error(`services/${name}/dist/telemetry.js is missing: run node scripts/build.mjs`);
  const args = [
    ...deployedNodeArgs(name),
    '--enable-source-maps',
    ...(preload ? ['--require', path.join(dist, 'telemetry.js')] : []),
    path.join(dist, 'main.js'),
  ];
  // The admin port (/metrics) defaults to a fixed port (the gateway's 9990) or PORT + 1000, either
  // of which another process of the machine may hold: a free one unless the caller chose one.
  if (!env.METRICS_PORT) env = { ...env, METRICS_PORT: String(await freePort()) };
  const [command, ...prefix] = [...(options.command ?? []), process.execPath];
  const child = spawn(command, [...prefix, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const url = `http://${env.HOST ?? '127.0.0.1'}:${env.PORT}`;
  const service = new ServiceProcess(name, url, child, options.maxLogLines);
  const logName = options.logName ?? name;
  // Generous: on a loaded machine several bundles booting at once take a while.
  const listening = service.waitForLog((line) => line.msg === `${logName} listening`, 120_000);
  const exitedEarly = service.exited.then((exit) => {
    throw new Error(`${name} exited during boot (${exit.signal ?? exit.code}):\n${service.tail()}`);
  });
  await Promise.race([listening, exitedEarly]);
  exitedEarly.catch(() => undefined);
  return service;
}

/** Resident set size of a process in bytes (Linux /proc), or undefined when it is gone. */
export function residentBytes(pid: number): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export interface BalancerTarget {
  port: number;
  alive: boolean;
  /** Its address (default 127.0.0.1). */
  host?: string;
}

/**
 * A small HTTP load balancer, like a Kubernetes Service in front of replicas: round robin over
 * the live targets, trying the next one when a target refuses the connection (nothing reached
 * it). A request may be pinned to one target with the header `x-replica: <index>`.
 */
export class Balancer {
  private roundRobin = 0;
  private server: http.Server | undefined;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  /** Requests under way, by target (`host:port`), for dropInFlight. */
  private readonly inFlight = new Map<string, Set<http.ClientRequest>>();
  url = '';

  constructor(private readonly targets: () => BalancerTarget[]) {}

  /**
   * Ends the requests under way to a target (answered 502, or cut if the answer had begun), as
   * a load balancer does to a backend its health check marked down (HAProxy's `on-marked-down
   * shutdown-sessions`): a long-poll parked on a host cut off the network would hang otherwise.
   */
  dropInFlight(target: Pick<BalancerTarget, 'host' | 'port'>): number {
    const requests = this.inFlight.get(`${target.host ?? '127.0.0.1'}:${target.port}`) ?? new Set();
    for (const request of requests) request.destroy(new Error('target marked down'));
    return requests.size;
  }

  async listen(port = 0, host = '127.0.0.1'): Promise<this> {
    const server = http.createServer((req, res) => this.balance(req, res));
    server.keepAliveTimeout = 65_000;
    server.requestTimeout = 0;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    this.url = `http://${host}:${(server.address() as net.AddressInfo).port}`;
    return this;
  }

  private balance(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => this.forward(req, res, Buffer.concat(chunks), 0));
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, attempt: number): void {
    const pinned = req.headers['x-replica'];
    const all = this.targets();
    const live = all.filter((target) => target.alive);
    const target = pinned !== undefined ? all[Number(pinned)] : live[this.roundRobin++ % Math.max(1, live.length)];
    const fail = () => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ result: 'error', msg: 'Bad gateway', code: 'BAD_REQUEST' }));
    };
    if (!target) return fail();
    const key = `${target.host ?? '127.0.0.1'}:${target.port}`;
    const upstream = http.request(
      {
        host: target.host ?? '127.0.0.1',
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent: this.agent,
      },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(res);
        response.on('error', () => res.destroy());
      },
    );
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      // Nothing reached a target that refused the connection: another one may take it.
      const unreached = error.code === 'ECONNREFUSED' || error.code === 'EHOSTUNREACH';
      if (unreached && pinned === undefined && attempt < live.length) {
        this.forward(req, res, body, attempt + 1);
        return;
      }
      fail();
    });
    if (!this.inFlight.has(key)) this.inFlight.set(key, new Set());
    this.inFlight.get(key)!.add(upstream);
    upstream.on('close', () => this.inFlight.get(key)?.delete(upstream));
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.end(body);
  }

  async close(): Promise<void> {
    if (this.server) {
      this.server.closeAllConnections();
      await new Promise((resolve) => this.server!.close(resolve));
    }
    this.agent.destroy();
  }
}
