// Running built services as separate processes, the way the launchers do:
// `node --require dist/telemetry.js dist/main.js`, reading their JSON log lines.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const repoRoot = path.resolve(__dirname, '../../../..');

export interface ServiceDefinition {
  name: string;
  port: number;
  urlVar?: string;
}

/** scripts/lib/services.mjs: every process of the stack and its port (an ES module, read by node itself). */
export function stackServices(): { gatewayPort: number; services: ServiceDefinition[] } {
  const script = `import('${path.join(repoRoot, 'scripts/lib/services.mjs')}').then((m) => console.log(JSON.stringify({ gatewayPort: m.GATEWAY_PORT, services: m.SERVICES })))`;
  // Without PORT: the module reads it for the gateway's port.
  const { PORT: _port, ...env } = process.env;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env }).toString();
  return JSON.parse(output);
}

/** Services with a built bundle and its telemetry preload (node scripts/build.mjs). */
export function builtServices(): string[] {
  return fs.readdirSync(path.join(repoRoot, 'services')).filter((name) => fs.existsSync(path.join(repoRoot, 'services', name, 'dist/main.js')));
}

export function preloadPath(service: string): string {
  return path.join(repoRoot, 'services', service, 'dist/telemetry.js');
}

/** A port nobody listens on right now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export type LogLine = Record<string, unknown> & { msg?: string; level?: string };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class ServiceProcess {
  readonly logs: LogLine[] = [];
  /** Lines that were not JSON (there should be none). */
  readonly otherOutput: string[] = [];
  readonly exited: Promise<Exit>;
  private waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];

  constructor(
    readonly name: string,
    readonly url: string,
    readonly child: ChildProcess,
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

  private accept(text: string): void {
    if (!text.trim()) return;
    let line: LogLine;
    try {
      line = JSON.parse(text);
    } catch {
      this.otherOutput.push(text);
      return;
    }
    this.logs.push(line);
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
      const timer = setTimeout(() => reject(new Error(`${this.name}: no matching log line within ${timeoutMs} ms; output:\n${this.tail()}`)), timeoutMs);
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

/** Starts a built service with its telemetry preload and waits until it listens. */
export async function startServiceProcess(name: string, env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const dist = path.join(repoRoot, 'services', name, 'dist');
  if (!fs.existsSync(path.join(dist, 'telemetry.js'))) throw new Error(`services/${name}/dist/telemetry.js is missing: run node scripts/build.mjs`);
  const child = spawn(process.execPath, ['--enable-source-maps', '--require', path.join(dist, 'telemetry.js'), path.join(dist, 'main.js')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = `http://127.0.0.1:${env.PORT}`;
  const service = new ServiceProcess(name, url, child);
  // Generous: on a loaded machine several bundles booting at once take a while.
  const listening = service.waitForLog((line) => line.msg === `${name} listening`, 120_000);
  const exitedEarly = service.exited.then((exit) => {
    throw new Error(`${name} exited during boot (${exit.signal ?? exit.code}):\n${service.tail()}`);
  });
  await Promise.race([listening, exitedEarly]);
  exitedEarly.catch(() => undefined);
  return service;
}
