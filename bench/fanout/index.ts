// Benchmark of one organisation's fan-out over several event replicas (EVENT_RECIPIENT_SHARDS): one
// realm of 10,000 users, each with a registered queue and a parked long-poll through the gateway,
// and organisation-wide events committed through the outbox (EventBus.sendEventOnCommit, as the
// services commit theirs) to every user. Run with EVENT_PARTITIONS=8 and EVENT_RECIPIENT_SHARDS=4
// over 1, 2 and 4 event replicas, and with EVENT_RECIPIENT_SHARDS=1 over 4 (the "before": all of
// one organisation on one replica), on a 3-master Redis Cluster. For each configuration:
// deliveries/s, each replica's CPU per 1,000 deliveries and share of the fan-out (its
// teamchat_events_fanned_out_total), and the Redis commands each master processed; balance as
// max/even, throughput against the 1-replica run.
// Run: npm run bench -- fanout   (see bench/README.md).

import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { createRedis, EventBus, type Redis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { transaction } from '@teamchat/db';
import { createBaseDeps } from '@teamchat/runtime';
import { createTestDatabase, freePort, OwnRedisCluster, type RedisClusterNode } from '@teamchat/testing';
import { createOrganisation } from '../lib/organisation';
import {
  park,
  registerQueues,
  teamchatThroughGateway,
  unpark,
  type BenchUser,
  type ParkedSystem,
  type QueueRef,
  type System,
} from '../events/index';
import {
  benchEnv,
  cpuMs,
  loadAverage,
  onInterrupt,
  sleep,
  startPrintingPort,
  startService,
  stop,
  type Proc,
} from '../lib/procs';
import { report, type Row } from '../lib/report';

const USERS = Number(process.env.BENCH_FANOUT_USERS ?? 10_000);
/**
 * Users with a queue and a parked poll. Not all 10,000 by default: on the shared 2-core machine
 * one replica with 10,000 parked polls and 10,000 deliveries per event fell so far behind that it
 * lost its partition leases over a hundred times in eight minutes (bench/README.md, "fanout").
 */
const QUEUES = Math.min(USERS, Number(process.env.BENCH_FANOUT_QUEUES ?? 2000));
/** Organisation-wide events per configuration, each to every user. */
const EVENTS = Number(process.env.BENCH_FANOUT_EVENTS ?? 10);
/** Events sent but not yet received by every queue, at most. */
const WINDOW = Number(process.env.BENCH_FANOUT_WINDOW ?? 4);
const PARTITIONS = 8;
/** Configurations as replicas x recipient shards, measured in this order. */
const CONFIGS = (process.env.BENCH_FANOUT_CONFIGS ?? '1x4,2x4,4x4,4x1').split(',').map((spec) => {
  const [replicas, shards] = spec.split('x').map(Number);
  return {
    replicas,
    shards,
    label: `${replicas} replica${replicas > 1 ? 's' : ''}, ${shards} shard${shards > 1 ? 's' : ''}`,
  };
});
/**
 * Gateways the polls are split over. A process here may hold 20,000 files (the hard limit, which
 * even root cannot raise in this sandbox) and a gateway holds two sockets per parked poll (the
 * client's and the upstream one), so 10,000 polls need two gateways (and two balancers).
 */
const GATEWAYS = Math.max(1, Math.ceil(QUEUES / 6000));
/**
 * EVENTS_LEASE_MS of the replicas. Longer than the default 3 s: on the shared 2-core machine (load
 * average 20-35 from other engineers' suites) replicas busy fanning out renewed late, lost their
 * leases and handed partitions back and forth mid-run, which moved the shares being measured.
 */
const LEASE_MS = Number(process.env.BENCH_FANOUT_LEASE_MS ?? 10_000);
/** A delivery missing for this long fails the run instead of hanging it. */
const STALL_MS = Number(process.env.BENCH_FANOUT_STALL_MS ?? 120_000);

const now = () => performance.now();
const log = (line: string) => console.log(`[${(now() / 1000).toFixed(0).padStart(4)}s] ${line}`);

interface Snapshot {
  fannedOut: number[];
  pollAnswers: number[];
  leaseHandovers: number[];
  leasesLost: number[];
  cpu: Record<string, number>;
  redisOps: number[];
}

interface ConfigResult {
  label: string;
  replicas: number;
  shards: number;
  deliveries: number;
  seconds: number;
  perSecond: number;
  replicaStats: {
    name: string;
    partitions: number[];
    orgPartitions: number[];
    fannedOut: number;
    pollAnswers: number;
    /** Leases acquired, released or lost during the measurement (0 when ownership held still). */
    leaseHandovers: number;
    /** Of those, leases found expired at renewal (the replica too busy to renew within the lease). */
    leasesLost: number;
    cpuMs: number;
    cpuMsPer1000: number;
  }[];
  /** CPU ms per 1,000 deliveries of every process measured (replicas, gateways, balancers, driver, Redis masters). */
  cpuMsPer1000: Record<string, number>;
  redis: { node: string; ops: number; cpuMs: number }[];
  fanoutMaxOverEven: number;
  cpuMaxOverEven: number;
  redisMaxOverEven: number;
  loadAverage: { before: number; after: number };
}

// ---------------------------------------------------------------- metrics and Redis counters

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${port}/metrics`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(text));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** The sum of a metric's samples whose labels contain `labels` (e.g. 'answer="events"'). */
function metricValue(text: string, name: string, labels = ''): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || !(line[name.length] === ' ' || line[name.length] === '{')) continue;
    if (labels && !line.includes(labels)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

function ownedPartitions(text: string): number[] {
  const owned: number[] = [];
  for (const match of text.matchAll(/^teamchat_event_partition_owned\{[^}]*partition="(\d+)"[^}]*\} 1$/gm))
    owned.push(Number(match[1]));
  return owned.sort((a, b) => a - b);
}

/**
 * The partitions each replica owns, once every partition has exactly one owner, no replica more
 * than its share, and the same for half a lease (every replica's lease round, a third of the
 * lease, has run meanwhile).
 */
async function settledOwnership(metricsPorts: number[]): Promise<number[][]> {
  const share = Math.ceil(PARTITIONS / metricsPorts.length);
  const deadline = Date.now() + 60_000 + 3 * LEASE_MS;
  let previous = '';
  let stableSince = Infinity;
  for (;;) {
    const owned = await Promise.all(metricsPorts.map(async (port) => ownedPartitions(await scrape(port))));
    const all = owned.flat().sort((a, b) => a - b);
    const complete = all.length === PARTITIONS && all.every((partition, i) => partition === i);
    const key = JSON.stringify(owned);
    const settled = complete && owned.every((list) => list.length <= share) && key === previous;
    stableSince = settled ? Math.min(stableSince, Date.now()) : Infinity;
    previous = key;
    if (Date.now() - stableSince >= LEASE_MS / 2) return owned;
    if (Date.now() > deadline) throw new Error(`intake partitions did not settle: ${key}`);
    await sleep(500);
  }
}

async function commandsProcessed(node: RedisClusterNode): Promise<number> {
  return Number(await node.info('total_commands_processed', 'stats'));
}

// ---------------------------------------------------------------- the organisation

// ---------------------------------------------------------------- one configuration

/**
 * Sends `events` organisation-wide events (at most WINDOW not yet received everywhere) and
 * waits until every parked queue has each: deliveries = events x queues.
 */
async function deliverAll(
  parked: ParkedSystem,
  publish: (tag: string) => Promise<void>,
  events: number,
): Promise<{ deliveries: number; seconds: number }> {
  const perEvent = parked.queues.length;
  const remaining = new Map<string, number>();
  const run = crypto.randomBytes(3).toString('hex');
  let deliveries = 0;
  let outstanding = 0;
  let finished = 0;
  let wake: (() => void) | null = null;
  parked.hooks.onEvent((_queue, event) => {
    const tag = event.alert_words?.[0] as string | undefined;
    if (!tag?.startsWith(run)) return;
    deliveries++;
    const left = remaining.get(tag)! - 1;
    remaining.set(tag, left);
    if (left === 0) {
      outstanding--;
      finished++;
      wake?.();
    }
  });
  // Resolves on progress, or after STALL_MS without any (then the run fails, saying how far it got).
  const progress = async () => {
    const seen = deliveries;
    await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(STALL_MS)]);
    if (deliveries === seen && outstanding > 0)
      throw new Error(`no delivery for ${STALL_MS} ms: ${deliveries} of ${events * perEvent}`);
  };
  const started = now();
  for (let n = 0; n < events; n++) {
    while (outstanding >= WINDOW) await progress();
    const tag = `${run}-${n}`;
    remaining.set(tag, perEvent);
    outstanding++;
    await publish(tag);
  }
  while (finished < events) await progress();
  return { deliveries, seconds: (now() - started) / 1000 };
}

async function snapshot(
  metricsPorts: number[],
  pids: Record<string, number>,
  masters: RedisClusterNode[],
): Promise<Snapshot> {
  const texts = await Promise.all(metricsPorts.map(scrape));
  return {
    fannedOut: texts.map((text) => metricValue(text, 'teamchat_events_fanned_out_total')),
    pollAnswers: texts.map((text) => metricValue(text, 'teamchat_event_deliveries_total', 'answer="events"')),
    leasesLost: texts.map((text) => metricValue(text, 'teamchat_event_lease_handovers_total', 'change="lost"')),
    leaseHandovers: texts.map((text) => metricValue(text, 'teamchat_event_lease_handovers_total')),
    cpu: Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)])),
    redisOps: await Promise.all(masters.map(commandsProcessed)),
  };
}

const maxOverEven = (values: number[]) =>
  Math.max(...values) / (values.reduce((sum, value) => sum + value, 0) / values.length);

async function main() {
  const database = await createTestDatabase();
  log('» starting a Redis Cluster (3 masters, 3 replicas)');
  const cluster = await OwnRedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  onInterrupt(() => cluster.stop());
  onInterrupt(() => database.drop());
  const redisTarget = { REDIS_URL: `redis://${cluster.nodes[0].address}`, REDIS_CLUSTER_NODES: cluster.seedList };
  const base = benchEnv(database.url, { prefix: 'bench:fanout:', eventPartitions: PARTITIONS });
  const env = { ...base.env, ...redisTarget };
  const serviceEnv = { ...base.serviceEnv, ...redisTarget };
  const deps = createBaseDeps('bench', env, { logger: createLogger('bench', 'warn') });
  const redis: Redis = createRedis(env, { name: 'bench-producer' });
  const procs: Proc[] = [];
  const results: ConfigResult[] = [];

  try {
    const masters = await cluster.masters();
    log(`» creating one organisation of ${USERS} users`);
    const created = now();
    const organisation = await createOrganisation(deps, 'fanout', 'Fan-out', USERS);
    const realm = organisation.realm;
    const users: BenchUser[] = organisation.users.map((user) => ({ ...user, realm, role: 400 }));
    const recipientIds = users.map((user) => user.id);
    log(`   ${users.length} users in ${((now() - created) / 1000).toFixed(1)} s`);
    // Consecutive ids: every recipient shard (id modulo K) gets its share of the queues.
    const withQueues = users.slice(0, QUEUES);
    let queues: QueueRef[] | undefined;

    for (const config of CONFIGS) {
      log(`» ${config.label}: EVENT_PARTITIONS=${PARTITIONS}, EVENT_RECIPIENT_SHARDS=${config.shards}`);
      const tag = `${config.replicas}x${config.shards}`;
      const started: Proc[] = [];
      const metricsPorts: number[] = [];
      const replicas: Proc[] = [];
      for (let i = 0; i < config.replicas; i++) {
        const metricsPort = await freePort();
        const replica = await startService(`events-${i}`, 'events', {
          ...serviceEnv,
          EVENT_RECIPIENT_SHARDS: String(config.shards),
          EVENTS_REPLICA_ID: `fanout-${tag}-${i}`,
          METRICS_PORT: String(metricsPort),
          // The queues outlive each configuration's processes: the next one polls them again.
          EVENTS_QUEUE_LIFESPAN_SECS: '3600',
          EVENTS_LEASE_MS: String(LEASE_MS),
          DB_POOL_SIZE: '10',
        });
        replicas.push(replica);
        metricsPorts.push(metricsPort);
      }
      started.push(...replicas);
      const unreachable = 'http://127.0.0.1:9';
      const gateways: Proc[] = [];
      for (let g = 0; g < GATEWAYS; g++) {
        // A connection-level round robin over the replicas, as a Kubernetes Service is.
        const balancer = await startPrintingPort(
          `balancer-${g}`,
          path.join(__dirname, '../events/balancer.mjs'),
          replicas.map((proc) => String(proc.port)),
        );
        const gateway = await startService(`gateway-${g}`, 'gateway', {
          ...serviceEnv,
          EVENT_RECIPIENT_SHARDS: String(config.shards),
          // 10,000 polls for minutes are far over Zulip's per-user API budget.
          RATE_LIMIT_ENABLED: 'false',
          EVENTS_URL: `http://127.0.0.1:${balancer.port}`,
          MESSAGES_URL: unreachable,
          USERS_URL: unreachable,
          CHANNELS_URL: unreachable,
          UPLOADS_URL: unreachable,
        });
        started.push(balancer, gateway);
        gateways.push(gateway);
      }
      procs.push(...started);
      const owned = await settledOwnership(metricsPorts);
      const bus = new EventBus(redis, env.REDIS_PREFIX, PARTITIONS, { db: deps.db, recipientShards: config.shards });
      const orgPartitions = new Set(
        Array.from({ length: config.shards }, (_, shard) => bus.partitionOf(realm.id, shard)),
      );
      log(
        `   partitions owned: ${owned.map((list, i) => `events-${i} [${list.map((p) => (orgPartitions.has(p) ? `${p}*` : p)).join(',')}]`).join(', ')} (* the organisation's)`,
      );

      const pids: Record<string, number> = Object.fromEntries(started.map((proc) => [proc.name, proc.child.pid!]));
      pids.driver = process.pid;
      masters.forEach((node, i) => (pids[`redis-${i}`] = node.child!.pid!));
      const through = gateways.map((gateway) =>
        teamchatThroughGateway(`http://127.0.0.1:${gateway.port}`, bus, 'bus', pids),
      );
      const gatewayOf = (user: BenchUser) => through[user.id % through.length];
      const system: System = {
        ...through[0],
        name: config.label,
        register: (agent, user) => gatewayOf(user).register(agent, user),
        pollUrl: (user, queueId, lastEventId) => gatewayOf(user).pollUrl(user, queueId, lastEventId),
      };
      queues ??= await registerQueues(system, withQueues, 1);
      const parked = await park(system, queues);
      const publish = (word: string) =>
        transaction(deps.db, (tx) =>
          bus.sendEventOnCommit(tx, realm.id, { type: 'alert_words', alert_words: [word] }, recipientIds),
        );
      // Warm-up: the replicas learn the queues (descriptors, recipients' indexes) on the first batches.
      await deliverAll(parked, publish, 1);

      const loadBefore = loadAverage();
      const before = await snapshot(metricsPorts, pids, masters);
      const { deliveries, seconds } = await deliverAll(parked, publish, EVENTS);
      const after = await snapshot(metricsPorts, pids, masters);
      const loadAfter = loadAverage();

      const per1000 = (ms: number) => (ms / deliveries) * 1000;
      const cpu = Object.fromEntries(Object.keys(pids).map((name) => [name, after.cpu[name] - before.cpu[name]]));
      const replicaStats = replicas.map((replica, i) => ({
        name: replica.name,
        partitions: owned[i],
        orgPartitions: owned[i].filter((partition) => orgPartitions.has(partition)),
        fannedOut: after.fannedOut[i] - before.fannedOut[i],
        pollAnswers: after.pollAnswers[i] - before.pollAnswers[i],
        leaseHandovers: after.leaseHandovers[i] - before.leaseHandovers[i],
        leasesLost: after.leasesLost[i] - before.leasesLost[i],
        cpuMs: cpu[replica.name],
        cpuMsPer1000: per1000(cpu[replica.name]),
      }));
      const redisStats = masters.map((node, i) => ({
        node: node.address,
        ops: after.redisOps[i] - before.redisOps[i],
        cpuMs: cpu[`redis-${i}`],
      }));
      const result: ConfigResult = {
        label: config.label,
        replicas: config.replicas,
        shards: config.shards,
        deliveries,
        seconds,
        perSecond: deliveries / seconds,
        replicaStats,
        cpuMsPer1000: Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, per1000(ms)])),
        redis: redisStats,
        fanoutMaxOverEven: maxOverEven(replicaStats.map((stats) => stats.fannedOut)),
        cpuMaxOverEven: maxOverEven(replicaStats.map((stats) => stats.cpuMs)),
        redisMaxOverEven: maxOverEven(redisStats.map((stats) => stats.ops)),
        loadAverage: { before: loadBefore, after: loadAfter },
      };
      results.push(result);
      log(
        `   ${deliveries} deliveries in ${seconds.toFixed(2)} s = ${result.perSecond.toFixed(0)}/s (load average ${loadBefore} -> ${loadAfter})`,
      );
      for (const stats of replicaStats)
        log(
          `   ${stats.name}: fanned out ${stats.fannedOut} (${((stats.fannedOut / deliveries) * 100).toFixed(1)} %), poll answers ${stats.pollAnswers}, lease handovers ${stats.leaseHandovers} (${stats.leasesLost} lost), CPU ${stats.cpuMs.toFixed(0)} ms = ${stats.cpuMsPer1000.toFixed(1)} ms per 1,000 deliveries`,
        );
      log(
        `   max/even: fan-out ${result.fanoutMaxOverEven.toFixed(2)}x, replica CPU ${result.cpuMaxOverEven.toFixed(2)}x, Redis ops ${result.redisMaxOverEven.toFixed(2)}x (${redisStats.map((stats) => `${stats.ops} ops, ${stats.cpuMs.toFixed(0)} CPU ms`).join(' / ')})`,
      );
      log(
        `   CPU ms per 1,000 deliveries: ${Object.entries(result.cpuMsPer1000)
          .map(([name, ms]) => `${name} ${ms.toFixed(1)}`)
          .join(', ')}`,
      );
      for (const replica of replicas) {
        const warnings = replica.output
          .join('')
          .split('\n')
          .filter((line) => line.includes('"level":40'));
        if (warnings.length)
          log(`   ${replica.name} warned ${warnings.length}x, last: ${warnings.at(-1)!.slice(0, 300)}`);
      }
      await unpark(parked);
      await bus.close();
      await Promise.all(started.map(stop));
    }

    const one = results.find((result) => result.replicas === 1) ?? results[0];
    const replicaCpuPer1000 = (result: ConfigResult) =>
      result.replicaStats.reduce((sum, stats) => sum + stats.cpuMsPer1000, 0);
    const rows: Row[] = [];
    for (const result of results) {
      rows.push({
        metric: `deliveries/s, ${result.label} vs ${one.label}`,
        value: result.perSecond,
        baseline: one.perSecond,
        unit: 'deliveries/s',
        better: 'higher',
      });
      rows.push({
        metric: `replica CPU per 1,000 deliveries (all replicas), ${result.label} vs ${one.label}`,
        value: replicaCpuPer1000(result),
        baseline: replicaCpuPer1000(one),
        unit: 'CPU ms',
        better: 'lower',
      });
      if (result.replicas > 1) {
        const fanned = result.replicaStats.map((stats) => stats.fannedOut);
        rows.push({
          metric: `fan-out of the busiest replica vs even, ${result.label}`,
          value: Math.max(...fanned),
          baseline: result.deliveries / result.replicas,
          unit: 'deliveries',
          better: 'lower',
          goal: result.replicas === 4 && result.shards === 4 ? '<= 1.3' : undefined,
        });
        const replicaCpu = result.replicaStats.map((stats) => stats.cpuMs);
        rows.push({
          metric: `CPU of the busiest replica vs even, ${result.label}`,
          value: Math.max(...replicaCpu),
          baseline: replicaCpu.reduce((sum, ms) => sum + ms, 0) / result.replicas,
          unit: 'CPU ms',
          better: 'lower',
        });
      }
      const ops = result.redis.map((stats) => stats.ops);
      rows.push({
        metric: `Redis ops of the busiest master vs even (3 masters), ${result.label}`,
        value: Math.max(...ops),
        baseline: ops.reduce((sum, n) => sum + n, 0) / ops.length,
        unit: 'commands',
        better: 'lower',
      });
    }
    console.log('');
    report('fanout', rows, {
      settings: {
        users: USERS,
        queues: QUEUES,
        events: EVENTS,
        window: WINDOW,
        partitions: PARTITIONS,
        gateways: GATEWAYS,
        leaseMs: LEASE_MS,
      },
      configurations: results,
    });
    log('» cleaning up');
  } finally {
    for (const proc of procs) await stop(proc);
    await redis.quit();
    await deps.close();
    await cluster.stop();
    await database.drop();
    log('   stopped and dropped');
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
