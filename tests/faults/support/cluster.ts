// The whole stack as real processes (the built bundles with their telemetry preload, as the
// launchers start them) against a given PostgreSQL database and Redis: gateway, users,
// messages, channels, uploads, worker and N event-tier replicas behind a round-robin balancer
// (a Kubernetes Service). Any process can be killed and started again on the same port.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBaseDeps, type BaseDeps } from '@teamchat/runtime';
import { Role } from '@teamchat/domain';
import type { Realm } from '@teamchat/db';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import {
  ApiClient,
  Balancer,
  buildServices,
  freePort,
  residentBytes,
  type ServiceProcess,
  startServiceProcess,
  testReplicaEnv,
} from '@teamchat/testing';

export const BACKENDS = ['users', 'messages', 'channels', 'uploads', 'worker'] as const;
export const ALL_SERVICES = ['gateway', ...BACKENDS, 'events'] as const;
export type ServiceKind = (typeof ALL_SERVICES)[number];

export interface ClusterOptions {
  databaseUrl: string;
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: the processes use a Redis Cluster with these seeds (credentials from redisUrl). */
  redisClusterNodes?: string;
  eventReplicas?: number;
  env?: NodeJS.ProcessEnv;
  /** Log lines kept per process (long runs). */
  maxLogLines?: number;
  /**
   * Extra variables for one slot's processes, asked at each start (e.g. an event replica's own
   * REDIS_URL through its proxy). A new event slot (addEventSlot) is asked too.
   */
  slotEnv?: (slot: Slot) => NodeJS.ProcessEnv | Promise<NodeJS.ProcessEnv>;
  /** Where each slot runs (multi-host tests, tests/multihost); default 127.0.0.1 on this host. */
  placement?: (slot: Pick<Slot, 'id' | 'kind'>) => SlotPlacement;
  /** Where the event tier's balancer listens: an address every slot's host reaches (default 127.0.0.1). */
  balancerHost?: string;
  /** Whether the balancer may route to an event replica besides its process running (a health check's verdict). */
  eventReplicaUp?: (slot: Slot) => boolean;
}

/** A slot's host: the address it binds (HOST) and the prefix that runs a process there (e.g. ip netns exec). */
export interface SlotPlacement {
  host: string;
  command?: string[];
}

/** How a process answered SIGTERM. */
export interface TerminateResult {
  slot: string;
  pid: number;
  /** From SIGTERM to exit (or to the kill -9 after the grace period). */
  ms: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** It did not exit within the grace period and was killed -9. */
  ignored: boolean;
}

export interface ClusterUser {
  id: number;
  email: string;
  apiKey: string;
  client: ApiClient;
}

/** One process slot: a fixed port, and the process running there now (if any). */
export interface Slot {
  /** "events-0", "events-1", or the service name. */
  id: string;
  kind: ServiceKind;
  port: number;
  /** The address it listens on, and the command prefix that starts it there. */
  host: string;
  command?: string[];
  process?: ServiceProcess;
  /** Every process this slot ran (for logs and RSS), oldest first. */
  history: ServiceProcess[];
}

export class ProcessCluster {
  readonly slots = new Map<string, Slot>();
  readonly redisPrefix = `t:${crypto.randomBytes(6).toString('hex')}:`;
  readonly secret = crypto.randomBytes(24).toString('hex');
  readonly uploadsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-faults-uploads-'));
  readonly balancer = new Balancer(() =>
    [...this.slots.values()]
      .filter((slot) => slot.kind === 'events')
      .map((slot) => ({
        host: slot.host,
        port: slot.port,
        alive: (slot.process?.running ?? false) && (this.options.eventReplicaUp?.(slot) ?? true),
      })),
  );
  /** EVENTS_REPLICA_ID by pid (the lease owner names in Redis). */
  private readonly replicaIds = new Map<number, string>();
  deps!: BaseDeps;
  realm!: Realm;
  gatewayUrl = '';

  private constructor(private readonly options: ClusterOptions) {}

  static async start(options: ClusterOptions): Promise<ProcessCluster> {
    buildServices([...ALL_SERVICES]);
    const cluster = new ProcessCluster(options);
    await cluster.balancer.listen(0, options.balancerHost);
    for (const kind of ['gateway', ...BACKENDS] as ServiceKind[]) cluster.addSlot(kind, kind, await freePort());
    for (let i = 0; i < (options.eventReplicas ?? 2); i++) cluster.addSlot(`events-${i}`, 'events', await freePort());
    const gateway = cluster.slots.get('gateway')!;
    cluster.gatewayUrl = `http://${gateway.host}:${gateway.port}`;
    try {
      await Promise.all(
        [...cluster.slots.values()].filter((slot) => slot.kind !== 'gateway').map((slot) => cluster.startSlot(slot.id)),
      );
      await cluster.startSlot('gateway');
    } catch (error) {
      // Nobody gets the cluster to stop: the processes that did start must not outlive the failure.
      await cluster.stop();
      throw error;
    }
    cluster.deps = createBaseDeps('faults-test', {
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: options.redisUrl,
      ...(options.redisClusterNodes ? { REDIS_CLUSTER_NODES: options.redisClusterNodes } : {}),
      REDIS_PREFIX: cluster.redisPrefix,
      INTERNAL_JWT_SECRET: cluster.secret,
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      EXTERNAL_SCHEME: 'http',
      EVENT_PARTITIONS: 4,
      DB_POOL_SIZE: 3,
      ...cluster.replicaEnv(),
    });
    cluster.realm = await doCreateRealm(cluster.deps.db, {
      stringId: '',
      name: 'Faults',
      host: new URL(cluster.gatewayUrl).host,
    });
    await cluster.deps.reads.recordWrite(cluster.realm.id);
    return cluster;
  }

  private addSlot(id: string, kind: ServiceKind, port: number): void {
    const { host, command } = this.options.placement?.({ id, kind }) ?? { host: '127.0.0.1' };
    this.slots.set(id, { id, kind, port, host, command, history: [] });
  }

  /** The read replica of the processes: the test's own (env), else the replica pass's standby of the database. */
  private replicaEnv(): { DATABASE_REPLICA_URL?: string } {
    const given = this.options.env?.DATABASE_REPLICA_URL;
    return given ? { DATABASE_REPLICA_URL: given } : testReplicaEnv(this.options.databaseUrl);
  }

  private env(slot: Slot): NodeJS.ProcessEnv {
    const replicaId = `${slot.id}-${crypto.randomBytes(3).toString('hex')}`;
    const url = (id: string) => `http://${this.slots.get(id)!.host}:${this.slots.get(id)!.port}`;
    return {
      PATH: process.env.PATH,
      DATABASE_URL: this.options.databaseUrl,
      REDIS_URL: this.options.redisUrl,
      ...(this.options.redisClusterNodes ? { REDIS_CLUSTER_NODES: this.options.redisClusterNodes } : {}),
      REDIS_PREFIX: this.redisPrefix,
      INTERNAL_JWT_SECRET: this.secret,
      HOST: slot.host,
      PORT: String(slot.port),
      LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? 'info',
      DB_POOL_SIZE: '4',
      EVENT_PARTITIONS: '4',
      UPLOADS_LOCAL_DIR: this.uploadsDir,
      USERS_URL: url('users'),
      MESSAGES_URL: url('messages'),
      CHANNELS_URL: url('channels'),
      UPLOADS_URL: url('uploads'),
      EVENTS_URL: this.balancer.url,
      // A kill of an event replica hands its partitions over within about a second.
      EVENTS_REPLICA_ID: replicaId,
      EVENTS_LEASE_MS: '1000',
      EVENTS_RELAY_INTERVAL_MS: '300',
      EVENTS_TRIM_INTERVAL_MS: '1000',
      EVENTS_HEARTBEAT_MIN_MS: '3000',
      EVENTS_HEARTBEAT_JITTER_MS: '500',
      // Mark-all-read jobs take several small batches, so a kill can land in the middle of one;
      // requests answer complete: false instead of waiting for the job.
      MARK_ALL_READ_BATCH_SIZE: '3',
      MARK_ALL_READ_BATCH_PAUSE_MS: '30',
      MARK_ALL_READ_BUDGET_MS: '1500',
      // A job whose worker was killed is resumed within about four seconds.
      WORKER_JOB_LOCK_MS: '3000',
      WORKER_STALLED_CHECK_MS: '1000',
      UPSTREAM_TIMEOUT_MS: '30000',
      // The workload is a few users making many requests: the gateway's per-user limits are not under test.
      RATE_LIMIT_ENABLED: 'false',
      ...this.replicaEnv(),
      ...this.options.env,
    };
  }

  async startSlot(id: string): Promise<ServiceProcess> {
    const slot = this.slots.get(id)!;
    if (slot.process?.running) throw new Error(`${id} is running`);
    const env = { ...this.env(slot), ...(await this.options.slotEnv?.(slot)) };
    const process = await startServiceProcess(slot.kind, env, {
      maxLogLines: this.options.maxLogLines,
      command: slot.command,
    });
    slot.process = process;
    slot.history.push(process);
    if (slot.kind === 'events' && env.EVENTS_REPLICA_ID) this.replicaIds.set(process.pid, env.EVENTS_REPLICA_ID);
    return process;
  }

  /** kill -9 (no drain, no shutdown hooks), and wait for the exit. */
  async kill(id: string): Promise<void> {
    const slot = this.slots.get(id)!;
    if (!slot.process?.running) return;
    slot.process.child.kill('SIGKILL');
    await slot.process.exited;
  }

  /** Sends a signal without waiting (SIGSTOP / SIGCONT: a frozen process keeps its sockets open). */
  signal(id: string, signal: NodeJS.Signals): void {
    const process = this.slots.get(id)!.process;
    if (process?.running) process.child.kill(signal);
  }

  /** SIGTERM, and the time until the process exits; kill -9 after `graceMs` (then `ignored`). */
  async terminate(id: string, graceMs: number): Promise<TerminateResult | undefined> {
    const process = this.slots.get(id)!.process;
    if (!process?.running) return undefined;
    const started = Date.now();
    let ignored = false;
    const timer = setTimeout(() => {
      ignored = true;
      process.child.kill('SIGKILL');
    }, graceMs);
    process.child.kill('SIGTERM');
    const exit = await process.exited;
    clearTimeout(timer);
    return { slot: id, pid: process.pid, ms: Date.now() - started, code: exit.code, signal: exit.signal, ignored };
  }

  /** Scale-out: a new event replica slot (events-N) on a free port, started. */
  async addEventSlot(): Promise<string> {
    const n = [...this.slots.values()].filter((slot) => slot.kind === 'events').length;
    const id = `events-${n}`;
    this.addSlot(id, 'events', await freePort());
    await this.startSlot(id);
    return id;
  }

  /** The replica id (EVENTS_REPLICA_ID) of the process running in a slot now. */
  replicaId(id: string): string | undefined {
    return this.replicaIds.get(this.slots.get(id)?.process?.pid ?? -1);
  }

  async killAndRestart(id: string, downMs = 0): Promise<void> {
    await this.kill(id);
    if (downMs) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.startSlot(id);
  }

  slotIds(kind?: ServiceKind): string[] {
    return [...this.slots.values()].filter((slot) => kind === undefined || slot.kind === kind).map((slot) => slot.id);
  }

  /** Resident memory of every running process, by slot. */
  rss(): Record<string, number | undefined> {
    return Object.fromEntries(
      [...this.slots.values()].map((slot) => [
        slot.id,
        slot.process?.running ? residentBytes(slot.process.pid) : undefined,
      ]),
    );
  }

  /** Every warning and error each process of `kind` logged, by slot: what a failing test prints. */
  problems(kind?: ServiceKind): string {
    return [...this.slots.values()]
      .filter((slot) => kind === undefined || slot.kind === kind)
      .flatMap((slot) => slot.history.map((process) => ({ slot, process })))
      .map(
        ({ slot, process }) =>
          `${slot.id} (pid ${process.pid}):\n${process.problems.map((line) => JSON.stringify(line)).join('\n')}`,
      )
      .join('\n');
  }

  /** Processes that died although nobody killed them. */
  unexpectedExits(killed: Set<ServiceProcess>): string[] {
    return [...this.slots.values()].flatMap((slot) =>
      slot.history
        .filter((process) => !process.running && !killed.has(process))
        .map((process) => `${slot.id}: ${process.tail(15)}`),
    );
  }

  private userCounter = 0;

  async createUser(role: number = Role.MEMBER): Promise<ClusterUser> {
    const n = ++this.userCounter;
    const { user, apiKey } = await doCreateUser(this.deps, this.realm, {
      email: `user${n}@faults.example.com`,
      fullName: `Fault User ${n}`,
      role,
    });
    // A fixture written straight to the database: recorded as a service's write is (the read replica).
    await this.deps.reads.recordWrite(this.realm.id);
    return {
      id: user.id,
      email: user.delivery_email,
      apiKey,
      client: new ApiClient(this.gatewayUrl, { email: user.delivery_email, apiKey }),
    };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.slots.values()].map((slot) => slot.process?.stop('SIGKILL', 5_000)));
    await this.balancer.close();
    await this.deps?.close();
    fs.rmSync(this.uploadsDir, { recursive: true, force: true });
  }
}
