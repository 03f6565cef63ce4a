// The events checker (support/checker.ts) on a private Redis Cluster (3 masters, 3 replicas,
// appendfsync always) with REDIS_WAIT_REPLICAS=1: every process of the stack on the cluster, two
// event replicas with a 1 s lease, sticky and session clients registering and polling throughout,
// and besides the event replicas' own faults (kill -9, SIGSTOP past the lease, scale out and in)
// a master of the cluster killed -9 mid-run (its replica promoted, the node restarted as a
// replica) — alternately the master of the realm's intake partition and one holding queues and
// indexes. Redis replicates asynchronously: without WAIT, a run like this lost 18 events when a
// queue's index entry, acknowledged by the killed master, never reached its replica. The verdict
// must be clean: nothing lost, duplicated or reordered, no 500, every client recovered.

import { slotOf } from '@teamchat/bus';
import type { OwnRedisCluster } from '@teamchat/testing';
import { printReport, runChecker, type AnyFaultKind } from './support/checker';
import type { ProcessCluster } from './support/cluster';
import { failover, startOnRedisCluster } from './support/redis-failover';

jest.setTimeout(900_000);

const LEASE_MS = 1000;
const HEARTBEAT_MIN_MS = 1000;
const HEARTBEAT_JITTER_MS = 100;
const NODE_TIMEOUT_MS = 1500;
const KINDS: AnyFaultKind[] = ['redis-master-kill', 'replica-kill', 'replica-stop', 'scale-out', 'scale-in'];

let redisCluster: OwnRedisCluster;
let cluster: ProcessCluster;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ redisCluster, cluster, stop } = await startOnRedisCluster({
    nodeTimeoutMs: NODE_TIMEOUT_MS,
    maxLogLines: 2000,
    env: {
      EVENTS_LEASE_MS: String(LEASE_MS),
      EVENTS_HEARTBEAT_MIN_MS: String(HEARTBEAT_MIN_MS),
      EVENTS_HEARTBEAT_JITTER_MS: String(HEARTBEAT_JITTER_MS),
    },
  }));
}, 300_000);

afterAll(async () => {
  await stop?.();
});

test('a Redis Cluster master killed mid-run, among the event replicas own faults: nothing lost, duplicated or reordered', async () => {
  let kills = 0;
  const report = await runChecker({
    runSecs: 100,
    rounds: 2,
    kinds: KINDS,
    replicas: 2,
    users: 5,
    stickyClients: 6,
    sessionClients: 10,
    stickyLifespansSecs: [20, 60],
    loneLifespansSecs: [20],
    sessionLifespanSecs: [20, 60],
    sessionSecs: [10, 30],
    leaseMs: LEASE_MS,
    heartbeatMinMs: HEARTBEAT_MIN_MS,
    heartbeatJitterMs: HEARTBEAT_JITTER_MS,
    faultMs: 2500,
    downMs: 1000,
    termGraceMs: 15_000,
    sendPauseMs: 400,
    sampleEveryMs: 5000,
    settleMs: 30_000,
    seed: 11,
    log: (message) => console.log(`[cluster checker] ${message}`),
    stack: {
      cluster,
      // No sample while a master is down (the run kills them).
      usedMemory: async () => {
        try {
          const masters = await redisCluster.masters();
          const used = await Promise.all(masters.map((node) => node.info('used_memory', 'memory')));
          return used.reduce((sum, bytes) => sum + Number(bytes ?? 0), 0);
        } catch {
          return undefined;
        }
      },
      faults: {
        'redis-master-kill': async () => {
          // Alternately the master of the realm's intake partition and another one (queues, indexes, jobs).
          const intakeSlot = slotOf(cluster.deps.bus.keys.intakeStream(cluster.deps.bus.partitionOf(cluster.realm.id)));
          const slot = kills++ % 2 === 0 ? intakeSlot : await slotOfAnotherMaster(intakeSlot);
          const victim = await redisCluster.masterOf(slot);
          const { promoted, ms } = await failover(redisCluster, victim, slot);
          return { target: victim.address, detail: `slot ${slot}: ${promoted} promoted after ${ms} ms` };
        },
      },
    },
  });
  const lines: string[] = [];
  printReport(report, (text) => lines.push(text));
  console.log(lines.join('\n'));
  // What the processes logged as errors (a 500's cause shows here).
  for (const slot of cluster.slots.values())
    for (const process of slot.history)
      for (const line of process.problems.filter((problem) => problem.level !== 'warn').slice(0, 10))
        console.log(`${slot.id}: ${JSON.stringify(line).slice(0, 2000)}`);
  expect(report.faults['redis-master-kill']).toBe(2);
  expect(report.totals.message_events).toBeGreaterThan(0);
  expect(report.failures).toEqual([]);
});

/** A slot served by another master than `slot`'s (a third of the slot space along, then two). */
async function slotOfAnotherMaster(slot: number): Promise<number> {
  const master = await redisCluster.masterOf(slot);
  for (const step of [5461, 10922]) {
    const other = (slot + step) % 16384;
    if ((await redisCluster.masterOf(other)) !== master) return other;
  }
  throw new Error(`every slot tried is served by ${master.address}`);
}
