// A Redis Cluster master killed (kill -9) in the middle of the workload, its replica promoted:
// the stack as processes (two event replicas) on a PRIVATE 3-master/3-replica cluster (temp dir,
// free ports, appendfsync always), the fault tests' workload (senders, stars, mark-all-read jobs,
// uploads, long-polling clients), and the same verdict as the store restarts: every answered write
// stored, every event stream exact (nothing lost, nothing twice, in order), every job completed
// once, in causal order, no 500, no client told to re-register.
//
// The first kill takes the master serving the realm's intake partition and at least one client's
// queue; the second the master serving the mark-all-read job queue (BullMQ) and queues. Each
// killed node is started again once its replica took over and rejoins as a replica, and the next
// fault waits for a healthy cluster. FAILOVER_NODE_TIMEOUT_MS sets cluster-node-timeout (how long
// a master may be silent before its replica takes over).

import { slotOf } from '@teamchat/bus';
import type { OwnRedisCluster, RedisClusterNode } from '@teamchat/testing';
import type { ProcessCluster, ClusterUser } from './support/cluster';
import { failover, startOnRedisCluster } from './support/redis-failover';
import {
  baseline,
  createParticipants,
  EventClient,
  finishAndCheck,
  startClients,
  Workload,
  type SentMessage,
} from './support/workload';

jest.setTimeout(300_000);

const NODE_TIMEOUT_MS = Number(process.env.FAILOVER_NODE_TIMEOUT_MS ?? 1500);

let redisCluster: OwnRedisCluster;
let cluster: ProcessCluster;
let stop: (() => Promise<void>) | undefined;
let users: ClusterUser[];
let channelName: string;

beforeAll(async () => {
  ({ redisCluster, cluster, stop } = await startOnRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS }));
  ({ users, channelName } = await createParticipants(cluster));
}, 300_000);

afterAll(async () => {
  await stop?.();
});

/** Slots of the clients' queues (every key of a queue shares its hash tag). */
function queueSlot(client: EventClient): number {
  return slotOf(`${cluster.redisPrefix}{q:${client.queueId}}`);
}

/** The workload's clients, plus clients of the first user until one's queue lives on `master` (at most 30). */
async function clientsWithAQueueOn(master: RedisClusterNode): Promise<EventClient[]> {
  const clients = await startClients(users);
  for (let i = 0; i < 30; i++) {
    for (const client of clients)
      if ((await redisCluster.masterOf(queueSlot(client))).address === master.address) return clients;
    const extra = new EventClient(users[i % users.length], `extra${i}`);
    await extra.register();
    clients.push(extra.start());
  }
  throw new Error(`no queue landed on ${master.address}`);
}

/**
 * Messages a client got after one whose send started after theirs was answered: the causal order
 * (the events checker's rule) broken.
 */
function reordered(client: EventClient, sent: SentMessage[]): number[] {
  const byId = new Map(sent.map((message) => [message.id, message]));
  const late: number[] = [];
  let latestStart = -Infinity;
  for (const id of client.messageIds()) {
    const message = byId.get(id);
    if (!message) continue;
    if (message.answeredAt < latestStart) late.push(id);
    latestStart = Math.max(latestStart, message.startedAt);
  }
  return late;
}

/** The events around the first late message, with the queue's event ids and the sends' times. */
function describeReordering(client: EventClient, sent: SentMessage[], firstLate: number): string {
  const byId = new Map(sent.map((message) => [message.id, message]));
  const messages = client.events.filter((event) => event.type === 'message');
  const at = messages.findIndex((event) => event.message.id === firstLate);
  const t0 = sent[0]?.startedAt ?? 0;
  return messages
    .slice(Math.max(0, at - 6), at + 3)
    .map((event) => {
      const message = byId.get(event.message.id);
      const times = message ? `sent ${message.startedAt - t0}-${message.answeredAt - t0} ms` : 'not ours';
      return `message ${event.message.id} as event ${event.id} (${times})`;
    })
    .join('; ');
}

async function runWithFailover(
  victimOf: () => Promise<{ victim: RedisClusterNode; slot: number; what: string }>,
): Promise<void> {
  const { victim, slot, what } = await victimOf();
  const clients = await clientsWithAQueueOn(victim);
  const start = await baseline(cluster);
  const workload = new Workload(users, clients, channelName);
  workload.start();
  await workload.progressed(10);
  const { promoted, ms } = await failover(redisCluster, victim, slot);
  await workload.progressed(10);
  const problems = await finishAndCheck(cluster, workload, clients, start);
  const events = clients.reduce((sum, client) => sum + client.messageIds().length, 0);
  // Warnings the processes logged (a publish left to the outbox relay shows here), by message and error.
  const warnings: Record<string, number> = {};
  for (const slot of cluster.slots.values())
    for (const process of slot.history)
      for (const line of process.problems) {
        const error = (line.err as { message?: string } | undefined)?.message?.slice(0, 100);
        // Trace and span ids left out, so that one kind of warning counts as one.
        const key = `${slot.id}: ${line.msg}${error ? ` (${error})` : ''}`.replace(/\b[0-9a-f]{16,32}\b/g, '<id>');
        warnings[key] = (warnings[key] ?? 0) + 1;
      }
  console.log(
    `${what}: ${victim.address} killed, ${promoted} promoted after ${ms} ms; ${clients.length} clients, ${events} message events; ${JSON.stringify(workload.stats)}; warnings ${JSON.stringify(warnings)}`,
  );
  for (const client of clients) {
    const late = reordered(client, workload.sent);
    if (late.length) console.log(`${client.label}: ${describeReordering(client, workload.sent, late[0])}`);
  }
  expect(problems).toEqual([]);
  expect(clients.map((client) => [client.label, reordered(client, workload.sent)])).toEqual(
    clients.map((client) => [client.label, []]),
  );
  expect(cluster.unexpectedExits(new Set())).toEqual([]);
  // During the failover requests may be refused (503) or retried, never answered 500.
  expect(workload.internalErrors).toEqual([]);
}

test('the master of the intake partition and of event queues killed mid-run: nothing lost, nothing twice, no re-registration', async () => {
  await runWithFailover(async () => {
    const slot = slotOf(cluster.deps.bus.keys.intakeStream(cluster.deps.bus.partitionOf(cluster.realm.id)));
    return { victim: await redisCluster.masterOf(slot), slot, what: 'intake master' };
  });
});

test('the master of the mark-all-read job queue and of event queues killed mid-run: the same', async () => {
  await runWithFailover(async () => {
    const slot = slotOf(cluster.deps.bus.keys.bullmq('mark-all-read'));
    return { victim: await redisCluster.masterOf(slot), slot, what: 'job queue master' };
  });
});
