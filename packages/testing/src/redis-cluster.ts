// A real Redis Cluster for tests: redis-server processes in cluster mode in a temp dir, joined by
// `redis-cli --cluster create` (masters with their replicas, slots split evenly), ready when every
// node reports cluster_state:ok and every master has a replica in sync. A master can be killed
// (kill -9) to see its replica promoted, and restarted to rejoin as a replica.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes';
import { sleep } from './wait';

const run = promisify(execFile);

export interface RedisClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** Address the nodes bind to and announce. */
  host?: string;
  /** cluster-node-timeout: how long a master may be unreachable before its replica takes over. */
  nodeTimeoutMs?: number;
  /** appendonly with fsync on every write (a restarted node keeps what it acknowledged). */
  persistent?: boolean;
  /** A prefix that runs the nodes on another host of a test network (`ip netns exec <ns>`); `host` is its address. */
  command?: string[];
}

export class RedisClusterNode {
  child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly dir: string,
    readonly host: string,
    readonly port: number,
    readonly busPort: number,
    private readonly options: Required<RedisClusterOptions>,
  ) {}

  get address(): string {
    return `${this.host}:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    fs.mkdirSync(this.dir, { recursive: true });
    const persistence = this.options.persistent
      ? ['--appendonly', 'yes', '--appendfsync', 'always']
      : ['--appendonly', 'no'];
    const [command, ...prefix] = [...this.options.command, 'redis-server'];
    const child = spawn(
      command,
      [
        ...prefix,
        '--port',
        String(this.port),
        '--cluster-port',
        String(this.busPort),
        '--bind',
        this.host,
        '--protected-mode',
        'no',
        '--dir',
        this.dir,
        '--save',
        '',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        String(this.options.nodeTimeoutMs),
        '--cluster-announce-ip',
        this.host,
        ...persistence,
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 20_000;
    while ((await this.cli('ping').catch(() => '')).trim() !== 'PONG') {
      if (!this.running) throw new Error(`redis-server on ${this.address} exited while starting`);
      if (Date.now() > deadline) throw new Error(`redis-server on ${this.address} did not start`);
      await sleep(50);
    }
  }

  /** kill -9: no shutdown, no last write. */
  async kill(): Promise<void> {
    this.child?.kill('SIGKILL');
    await this.exited;
  }

  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', this.host, '-p', String(this.port), ...args], {
      timeout: 10_000,
    });
    return stdout;
  }

  async info(field: string, section = 'replication'): Promise<string | undefined> {
    const text = await this.cli('info', section);
    return new RegExp(`^${field}:(.*?)\\r?$`, 'm').exec(text)?.[1];
  }
}

export class OwnRedisCluster {
  private constructor(
    readonly dir: string,
    readonly nodes: RedisClusterNode[],
  ) {}

  static async start(options: RedisClusterOptions = {}): Promise<OwnRedisCluster> {
    const settings: Required<RedisClusterOptions> = {
      masters: options.masters ?? 3,
      replicasPerMaster: options.replicasPerMaster ?? 1,
      host: options.host ?? '127.0.0.1',
      nodeTimeoutMs: options.nodeTimeoutMs ?? 2000,
      persistent: options.persistent ?? false,
      command: options.command ?? [],
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-redis-cluster-'));
    const nodes: RedisClusterNode[] = [];
    for (let i = 0; i < settings.masters * (1 + settings.replicasPerMaster); i++) {
      nodes.push(
        new RedisClusterNode(path.join(dir, `node-${i}`), settings.host, await freePort(), await freePort(), settings),
      );
    }
    const cluster = new OwnRedisCluster(dir, nodes);
    try {
      await Promise.all(nodes.map((node) => node.start()));
      // The first `masters` addresses become masters, the rest their replicas.
      await run(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...nodes.map((node) => node.address),
          '--cluster-replicas',
          String(settings.replicasPerMaster),
          '--cluster-yes',
        ],
        { timeout: 60_000 },
      );
      await cluster.waitUntilHealthy();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** REDIS_CLUSTER_NODES for the processes under test. */
  get seedList(): string {
    return this.nodes.map((node) => node.address).join(',');
  }

  /** The running masters, in the order of the slots they serve. */
  async masters(): Promise<RedisClusterNode[]> {
    const out: RedisClusterNode[] = [];
    for (const node of this.nodes) {
      if (node.running && (await node.info('role').catch(() => undefined)) === 'master') out.push(node);
    }
    return out;
  }

  /** The node replicating `master` (one replica per master: the first found). */
  async replicaOf(master: RedisClusterNode): Promise<RedisClusterNode> {
    for (const node of this.nodes) {
      if (node === master || !node.running || (await node.info('role')) !== 'slave') continue;
      if (Number(await node.info('master_port')) === master.port) return node;
    }
    throw new Error(`no replica of ${master.address}`);
  }

  /** The node serving a slot as master, as a running node sees it (CLUSTER NODES). */
  async masterOf(slot: number): Promise<RedisClusterNode> {
    const anyNode = this.nodes.find((node) => node.running)!;
    for (const line of (await anyNode.cli('cluster', 'nodes')).split('\n')) {
      const [, address, flags, , , , , , ...ranges] = line.trim().split(' ');
      if (!flags?.includes('master') || flags.includes('fail')) continue;
      const serves = ranges.some((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return slot >= from && slot <= to;
      });
      if (!serves) continue;
      const node = this.nodes.find((candidate) => address.startsWith(`${candidate.address}@`));
      if (!node) throw new Error(`slot ${slot} is served by ${address}, not a node of this cluster`);
      return node;
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /**
   * Every running node says cluster_state:ok, every slot is served, and every master has a
   * replica whose link is up (so that a master killed next has a replica to promote).
   */
  async waitUntilHealthy(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const problem = await this.healthProblem().catch((error: Error) => error.message);
      if (problem === undefined) return;
      if (Date.now() > deadline) throw new Error(`Redis Cluster not healthy: ${problem}`);
      await sleep(200);
    }
  }

  private async healthProblem(): Promise<string | undefined> {
    const running = this.nodes.filter((node) => node.running);
    for (const node of running) {
      const info = await node.cli('cluster', 'info');
      if (!/cluster_state:ok/.test(info)) return `${node.address} is not ok`;
      if (!/cluster_slots_ok:16384/.test(info)) return `${node.address} does not see every slot served`;
    }
    for (const node of running) {
      if ((await node.info('role')) === 'slave' && (await node.info('master_link_status')) !== 'up')
        return `replica ${node.address} is not in sync`;
    }
    return undefined;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
