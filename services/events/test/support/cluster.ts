// Several event-tier processes (the built bundle, as deployed) against one Redis and one test
// database, behind a small HTTP load balancer (round robin, skipping replicas that refuse
// connections, like a Kubernetes Service) and the real gateway. A request may be pinned to one
// replica with the header `x-replica: <index>`.

import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { createLogger } from '@teamchat/core';
import { listen, serverUrl, type RunningService } from '@teamchat/runtime';
import { createGateway } from '@teamchat/service-gateway';
import { GENEROUS_RATE_LIMITS, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, Balancer, buildServices, freePort, repoRoot, sleep, testRedisTarget } from '@teamchat/testing';

export { freePort };

const ROOT = repoRoot;
const BUNDLE = path.join(ROOT, 'services/events/dist/main.js');

/** Builds services/events/dist (once per test file). */
export function buildEventsBundle(): void {
  buildServices(['events']);
}

export class Replica {
  alive = true;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output = '';

  constructor(
    readonly replicaId: string,
    readonly port: number,
    readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.alive = false;
        resolve({ code, signal });
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}

async function waitUntilReady(replica: Replica): Promise<void> {
  // Generous: on a loaded machine several bundles booting at once take a while.
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (!replica.alive) throw new Error(`replica ${replica.replicaId} exited:\n${replica.output}`);
    const ok = await new Promise<boolean>((resolve) => {
      http
        .get(`${replica.url}/health/ready`, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
        .on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`replica ${replica.replicaId} not ready:\n${replica.output}`);
    await sleep(50);
  }
}

export class EventCluster {
  readonly replicas: Replica[] = [];
  private servers: http.Server[] = [];
  private gateway!: RunningService;
  private readonly balancer = new Balancer(() => this.replicas);
  gatewayUrl = '';

  private constructor(
    readonly stack: Stack,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** `count` replicas, the balancer and a gateway in front of them. */
  static async start(stack: Stack, count: number, env: NodeJS.ProcessEnv = {}): Promise<EventCluster> {
    buildEventsBundle();
    const cluster = new EventCluster(stack, env);
    await Promise.all(Array.from({ length: count }, () => cluster.startReplica()));
    await cluster.balancer.listen();
    cluster.gateway = createGateway({
      env: {
        INTERNAL_JWT_SECRET: stack.deps.env.INTERNAL_JWT_SECRET,
        REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
        UPSTREAM_TIMEOUT_MS: 60_000,
        ...GENEROUS_RATE_LIMITS,
      },
      db: stack.db,
      redis: stack.redis,
      logger: createLogger('cluster-gateway', 'silent'),
      serviceUrls: {
        users: stack.serviceUrls.users!,
        messages: 'http://127.0.0.1:9',
        channels: 'http://127.0.0.1:9',
        uploads: 'http://127.0.0.1:9',
        events: cluster.balancer.url,
        web: 'http://127.0.0.1:9',
      },
    });
    const gatewayServer = await listen(cluster.gateway.handler, 0, '127.0.0.1');
    cluster.servers.push(gatewayServer);
    cluster.gatewayUrl = serverUrl(gatewayServer);
    return cluster;
  }

  async startReplica(env: NodeJS.ProcessEnv = {}): Promise<Replica> {
    const port = await freePort();
    const replicaId = `replica-${this.replicas.length}-${crypto.randomBytes(3).toString('hex')}`;
    const { deps } = this.stack;
    const child = spawn(process.execPath, [BUNDLE], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: this.stack.database.url,
        ...testRedisTarget(),
        REDIS_PREFIX: deps.env.REDIS_PREFIX,
        INTERNAL_JWT_SECRET: deps.env.INTERNAL_JWT_SECRET,
        EVENT_PARTITIONS: String(deps.env.EVENT_PARTITIONS),
        EVENT_RECIPIENT_SHARDS: String(deps.env.EVENT_RECIPIENT_SHARDS ?? 1),
        DB_POOL_SIZE: '3',
        HOST: '127.0.0.1',
        PORT: String(port),
        // Its /metrics listener: a free port, not PORT + 1000 (which another process may hold).
        METRICS_PORT: String(await freePort()),
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
        EVENTS_REPLICA_ID: replicaId,
        EVENTS_LEASE_MS: '1000',
        EVENTS_TRIM_INTERVAL_MS: '1000',
        EVENTS_RELAY_INTERVAL_MS: '300',
        ...this.env,
        ...env,
      },
    });
    const replica = new Replica(replicaId, port, child);
    this.replicas.push(replica);
    await waitUntilReady(replica);
    return replica;
  }

  /** A Zulip client of `user` through the cluster's gateway (optionally pinned to one replica). */
  client(user: TestUser, replicaIndex?: number): ApiClient {
    const headers: Record<string, string> = { host: this.stack.realm.host };
    if (replicaIndex !== undefined) headers['x-replica'] = String(replicaIndex);
    return new ApiClient(this.gatewayUrl, { email: user.deliveryEmail, apiKey: user.apiKey }, headers);
  }

  /** The replica owning an intake partition right now (by its lease). */
  async partitionOwner(partition: number): Promise<Replica | undefined> {
    // The lease's value is `<replica id>/<generation>`.
    const lease = await this.stack.redis.get(this.stack.deps.bus.keys.intakeLease(partition));
    return this.replicas.find((replica) => lease?.startsWith(`${replica.replicaId}/`));
  }

  async stop(): Promise<void> {
    for (const replica of this.replicas) if (replica.alive) replica.kill('SIGKILL');
    await Promise.all(this.replicas.map((replica) => replica.exited));
    for (const server of this.servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await this.balancer.close();
    await this.gateway?.close();
  }
}

/**
 * A client that long-polls one queue in a loop, as Zulip clients do: it acknowledges what it
 * got, and on a failed request (a replica died, a 502) it simply polls again.
 */
export class PollingClient {
  readonly received: Record<string, any>[] = [];
  readonly failures: string[] = [];
  private running = true;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: ApiClient,
    readonly queueId: string,
    private lastEventId: number,
  ) {}

  start(): this {
    this.done = this.loop();
    return this;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        const response = await this.client.get('/api/v1/events', {
          queue_id: this.queueId,
          last_event_id: this.lastEventId,
        });
        if (response.status === 200) {
          for (const event of response.body.events) {
            this.lastEventId = Math.max(this.lastEventId, event.id);
            if (event.type !== 'heartbeat') this.received.push(event);
          }
          continue;
        }
        this.failures.push(`${response.status} ${response.body?.code ?? ''} ${response.body?.msg ?? ''}`);
        if (response.body?.code === 'BAD_EVENT_QUEUE_ID') return;
      } catch (error) {
        this.failures.push(String(error));
      }
      await sleep(50);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
