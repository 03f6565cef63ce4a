// The whole system on several hosts of a test network (support/network.ts), the reference layout
// of docs/multi-host.md:
//
//   10.77.x.1   this process: the clients, the event tier's load balancer (with health checks)
//   10.77.x.10  gateway
//   10.77.x.11  services: users, messages, channels, uploads, and the S3-protocol object store
//   10.77.x.12  events-0
//   10.77.x.13  events-1
//   10.77.x.14  worker
//   10.77.x.15  PostgreSQL
//   10.77.x.16  Redis: a Redis Cluster of 3 masters and 3 replicas (or one server)
//
// Every process binds its host's address and reaches the others by theirs: nothing shares a
// loopback. The services are the built bundles started as the faults tests start them
// (ProcessCluster), placed on their hosts; PostgreSQL and Redis are private instances on theirs.

import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { OwnRedisCluster, repoRoot } from '@teamchat/testing';
import { ProcessCluster, type ServiceKind } from '../../faults/support/cluster';
import { OwnPostgres, OwnRedis } from '../../faults/support/instances';
import { HealthChecker, type HealthSettings } from './health';
import { TestNetwork } from './network';

export const HOSTS = ['gateway', 'services', 'events-0', 'events-1', 'worker', 'postgres', 'redis'] as const;
export type HostName = (typeof HOSTS)[number];

export interface MultiHostSettings {
  eventReplicas: 2;
  /** One redis-server, or a Redis Cluster of 3 masters with a replica each (REDIS_CLUSTER_NODES). */
  redis: 'single' | 'cluster';
  leaseMs: number;
  heartbeatMinMs: number;
  heartbeatJitterMs: number;
  /** The load balancer's health check of the event replicas. */
  health: HealthSettings;
  log: (message: string) => void;
}

/** The host a slot of the cluster runs on. */
function hostOf(slot: { id: string; kind: ServiceKind }): HostName {
  if (slot.kind === 'gateway' || slot.kind === 'worker') return slot.kind;
  if (slot.kind === 'events') return slot.id as HostName;
  return 'services';
}

export class MultiHostSystem {
  network!: TestNetwork;
  postgres?: OwnPostgres;
  redis?: OwnRedis;
  redisCluster?: OwnRedisCluster;
  private s3?: ChildProcess;
  cluster!: ProcessCluster;
  health!: HealthChecker;

  private constructor(readonly settings: MultiHostSettings) {}

  static async start(settings: MultiHostSettings): Promise<MultiHostSystem> {
    const system = new MultiHostSystem(settings);
    try {
      await system.boot();
    } catch (error) {
      await system.stop();
      throw error;
    }
    return system;
  }

  private async boot(): Promise<void> {
    const { log } = this.settings;
    this.network = TestNetwork.create([...HOSTS]);
    log(`network ${this.network.subnet}.0/24 on bridge ${this.network.bridge}`);
    this.postgres = await OwnPostgres.start(this.on('postgres'));
    const databaseUrl = await this.postgres.createDatabase('teamchat');
    const redisHost = this.on('redis');
    if (this.settings.redis === 'cluster')
      this.redisCluster = await OwnRedisCluster.start({ ...redisHost, persistent: true });
    else this.redis = await OwnRedis.start({ fsync: 'always', placement: redisHost });
    const s3Env = await this.startObjectStore();
    this.health = new HealthChecker(
      () =>
        this.cluster
          ? this.cluster.slotIds('events').map((id) => {
              const slot = this.cluster.slots.get(id)!;
              return { id, host: slot.host, port: slot.port };
            })
          : [],
      this.settings.health,
      (target) => {
        const dropped = this.cluster.balancer.dropInFlight(target);
        log(`health check: ${target.id} marked down, ${dropped} requests under way to it ended`);
      },
    ).start();
    this.cluster = await ProcessCluster.start({
      databaseUrl,
      redisUrl: this.redis?.url ?? `redis://${this.redisCluster!.nodes[0].address}`,
      redisClusterNodes: this.redisCluster?.seedList,
      eventReplicas: this.settings.eventReplicas,
      maxLogLines: 2000,
      placement: (slot) => this.on(hostOf(slot)),
      balancerHost: this.network.rootAddress,
      eventReplicaUp: (slot) => this.health.isUp(slot.id),
      env: {
        ...s3Env,
        // With replicas, the event tier's writes count once one holds them (docs/operations.md).
        ...(this.redisCluster ? { REDIS_WAIT_REPLICAS: '1' } : {}),
        EVENTS_LEASE_MS: String(this.settings.leaseMs),
        EVENTS_HEARTBEAT_MIN_MS: String(this.settings.heartbeatMinMs),
        EVENTS_HEARTBEAT_JITTER_MS: String(this.settings.heartbeatJitterMs),
      },
    });
    for (const [id, slot] of this.cluster.slots)
      log(`${id}: http://${slot.host}:${slot.port} pid ${slot.process?.pid}`);
  }

  /** Every Redis server's host:port. */
  get redisAddresses(): string[] {
    return this.redisCluster?.nodes.map((node) => node.address) ?? [new URL(this.redis!.url).host];
  }

  /** Redis's used_memory (every master's, added up, for a cluster). */
  async redisUsedMemory(): Promise<number | undefined> {
    if (this.redis) return this.redis.usedMemory();
    try {
      const masters = await this.redisCluster!.masters();
      const used = await Promise.all(masters.map((node) => node.info('used_memory', 'memory')));
      return used.reduce((sum, bytes) => sum + Number(bytes ?? 0), 0);
    } catch {
      return undefined;
    }
  }

  /** A host's address and the prefix that runs a process there. */
  private on(name: HostName): { host: string; command: string[] } {
    const host = this.network.host(name);
    return { host: host.address, command: host.command };
  }

  /** The S3-protocol server (bench/uploads/s3-server.ts, s3rver) on the services' host; its UPLOADS_* env. */
  private async startObjectStore(): Promise<Record<string, string>> {
    const host = this.network.host('services');
    const [command, ...prefix] = host.command;
    const script = path.join(repoRoot, 'bench/uploads/s3-server.ts');
    const child = spawn(command, [...prefix, process.execPath, '--import', 'tsx', script], {
      cwd: repoRoot,
      env: { ...process.env, S3_SERVER_ADDRESS: host.address },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.s3 = child;
    const line = await new Promise<string>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the S3 server exited (${code}) before it was ready`)));
      readline.createInterface({ input: child.stdout! }).once('line', resolve);
    });
    return (JSON.parse(line) as { env: Record<string, string> }).env;
  }

  /** The realm's intake partitions and the event slot holding each one's lease now (undefined: none). */
  async realmPartitionOwners(): Promise<{ partition: number; owner: string | undefined }[]> {
    const { bus, redis } = this.cluster.deps;
    const partitions = Array.from({ length: bus.recipientShards }, (_, shard) =>
      bus.partitionOf(this.cluster.realm.id, shard),
    );
    const slotOf = new Map(this.cluster.slotIds('events').map((id) => [this.cluster.replicaId(id), id]));
    return Promise.all(
      partitions.map(async (partition) => {
        // The lease's value is `<replica id>/<generation>`.
        const lease = await redis.get(bus.keys.intakeLease(partition));
        return { partition, owner: lease ? slotOf.get(lease.slice(0, lease.lastIndexOf('/'))) : undefined };
      }),
    );
  }

  /** Cuts a host off the network for `ms` (running `meanwhile` then), then brings it back; when each happened. */
  async cutOff(
    host: HostName,
    ms: number,
    meanwhile: () => Promise<void> = async () => undefined,
  ): Promise<{ cutAt: number; restoredAt: number }> {
    const cutAt = Date.now();
    this.network.cut(host);
    const observing = meanwhile();
    observing.catch(() => undefined); // awaited below, after the restore
    try {
      await sleep(ms);
    } finally {
      this.network.restore(host);
    }
    const restoredAt = Date.now();
    await observing;
    return { cutAt, restoredAt };
  }

  /** Everything this system started, in reverse order, whatever failed before. */
  async stop(): Promise<void> {
    const attempt = async (what: string, step: () => unknown) => {
      try {
        await step();
      } catch (error) {
        this.settings.log(`stopping ${what} failed: ${String(error)}`);
      }
    };
    await attempt('the health check', () => this.health?.stop());
    await attempt('the services', () => this.cluster?.stop());
    await attempt('the S3 server', async () => {
      const child = this.s3;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    });
    await attempt('Redis', () => this.redis?.stop());
    await attempt('the Redis Cluster', () => this.redisCluster?.stop());
    await attempt('PostgreSQL', () => this.postgres?.stop());
    // Last: a namespace is removed only once no process of ours runs in it.
    await attempt('the network', () => this.network?.destroy());
  }
}
