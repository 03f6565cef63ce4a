// The whole system on several hosts (the layout is docs/multi-host.md's): gateway,
// HTTP services, two event replicas, the worker, PostgreSQL and Redis each in a network namespace
// with its own address (support/network.ts). A real client, zulip-js, goes through the gateway;
// then the events checker (tests/faults/support/checker.ts) runs its clients and workload while
// the host of the replica holding the realm's intake partition is cut off the network for 5
// leases and brought back. The verdict must be clean (nothing lost, duplicated or reordered, no
// 500), and every client must have received events while the host was away: the load
// balancer's health check sent them to the other replica, which took the partition over once
// the cut one's lease expired.

import { setTimeout as sleep } from 'node:timers/promises';
import { printReport, runChecker } from '../faults/support/checker';
import type { SessionClient } from '../faults/support/sessions';
import { uploadFile } from '../faults/support/workload';
import { MultiHostSystem } from './support/system';

jest.setTimeout(300_000);

// zulip-js loads isomorphic-form-data, which replaces the global FormData with the form-data
// package (zulip-js keeps its own reference): the workload's uploads encode with node's own.
const nodeFormData = globalThis.FormData;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const zulip = require('zulip-js') as (config: { username: string; apiKey: string; realm: string }) => Promise<any>;
globalThis.FormData = nodeFormData;

const LEASE_MS = 2000;
const HEARTBEAT_MIN_MS = 1000;
const HEARTBEAT_JITTER_MS = 100;
/** How long the host is away: past its leases, so the other replica must take its partitions. */
const CUT_MS = 5 * LEASE_MS;
// A check timing out at 1 s: on a loaded machine (2 cores shared) a 500 ms timeout marked a live replica down.
const HEALTH = { intervalMs: 250, timeoutMs: 1000, fall: 2, rise: 2 };
/** From the cut on, the time the balancer and events-0 may take to notice: the lease, and the health check's falls. */
const TAKEOVER_MS = LEASE_MS + HEALTH.fall * (HEALTH.intervalMs + HEALTH.timeoutMs) + 500;
const log = (message: string) => console.log(`[multihost] ${message}`);

let system: MultiHostSystem;
beforeAll(async () => {
  system = await MultiHostSystem.start({
    eventReplicas: 2,
    redis: 'cluster',
    leaseMs: LEASE_MS,
    heartbeatMinMs: HEARTBEAT_MIN_MS,
    heartbeatJitterMs: HEARTBEAT_JITTER_MS,
    health: HEALTH,
    log,
  });
}, 300_000);
afterAll(async () => {
  await system?.stop();
});

test('every process listens on its own host and reaches the others by address', () => {
  const hosts = new Set([...system.cluster.slots.values()].map((slot) => slot.host));
  // gateway, services, events-0, events-1, worker; plus PostgreSQL's and Redis's hosts.
  expect(hosts.size).toBe(5);
  expect(hosts.has('127.0.0.1')).toBe(false);
  expect(system.postgres!.urlFor('x')).toContain(system.network.host('postgres').address);
  // A Redis Cluster of 3 masters and 3 replicas, every node on the Redis host.
  expect(system.redisAddresses).toHaveLength(6);
  for (const address of system.redisAddresses) expect(address).toMatch(`${system.network.host('redis').address}:`);
  expect(system.cluster.gatewayUrl).toContain(system.network.host('gateway').address);
});

test('a real client, zulip-js, registers, sends, reads and polls events through the gateway', async () => {
  const [alice, bob] = [await system.cluster.createUser(), await system.cluster.createUser()];
  const aliceJs = await zulip({ username: alice.email, apiKey: alice.apiKey, realm: system.cluster.gatewayUrl });
  const bobJs = await zulip({ username: bob.email, apiKey: bob.apiKey, realm: system.cluster.gatewayUrl });

  const queue = await bobJs.queues.register({ event_types: ['message'] });
  expect(queue).toMatchObject({ result: 'success', queue_id: expect.any(String), last_event_id: -1 });
  const sent = await aliceJs.messages.send({ to: [bob.id], type: 'private', content: 'across hosts' });
  expect(sent).toEqual({ result: 'success', msg: '', id: expect.any(Number) });

  const fetched = await bobJs.messages.retrieve({ anchor: 'newest', num_before: 5, num_after: 0 });
  expect(fetched.result).toBe('success');
  expect(fetched.messages.map((message: { id: number }) => message.id)).toContain(sent.id);

  // zulip-js's event loop: retrieve until the message arrives (heartbeats come every second meanwhile).
  let lastEventId = queue.last_event_id as number;
  const received: Record<string, any>[] = [];
  for (let polls = 0; polls < 20 && !received.some((event) => event.type === 'message'); polls++) {
    const answer = await bobJs.events.retrieve({ queue_id: queue.queue_id, last_event_id: lastEventId });
    expect(answer.result).toBe('success');
    for (const event of answer.events) {
      lastEventId = Math.max(lastEventId, event.id);
      received.push(event);
    }
  }
  const message = received.find((event) => event.type === 'message');
  expect(message?.message).toMatchObject({ id: sent.id, content: 'across hosts', sender_id: alice.id });

  // An upload goes to the object store on the services' host and is served back through the gateway.
  const uploaded = await uploadFile(alice.client, 'far.txt', Buffer.from('bytes on another host'));
  expect(uploaded.status).toBe(200);
  const served = await alice.client.get(uploaded.body.url, {}, { validate: false });
  expect(served.status).toBe(200);
  expect(served.raw.toString()).toBe('bytes on another host');
});

test("the host of the replica fanning out the realm's events cut off past its leases and back: nothing lost, every client served by the other replica meanwhile", async () => {
  let cut: { cutAt: number; restoredAt: number } | undefined;
  let target = 'events-1' as 'events-0' | 'events-1';
  let owners: { before: unknown[]; during: unknown[] } | undefined;
  let clients: readonly SessionClient[] = [];
  const report = await runChecker({
    runSecs: 50,
    rounds: 1,
    kinds: ['host-cut'],
    replicas: 2,
    users: 4,
    stickyClients: 4,
    sessionClients: 4,
    stickyLifespansSecs: [120],
    loneLifespansSecs: [120],
    sessionLifespanSecs: [20, 60],
    sessionSecs: [10, 25],
    leaseMs: LEASE_MS,
    heartbeatMinMs: HEARTBEAT_MIN_MS,
    heartbeatJitterMs: HEARTBEAT_JITTER_MS,
    faultMs: CUT_MS,
    downMs: 1000,
    termGraceMs: 15_000,
    sendPauseMs: 400,
    sampleEveryMs: 5000,
    settleMs: 30_000,
    seed: 22,
    log: (message) => log(`checker: ${message}`),
    observe: (observed) => (clients = observed),
    stack: {
      cluster: system.cluster,
      usedMemory: () => system.redisUsedMemory(),
      faults: {
        'host-cut': async () => {
          // The replica holding the realm's partition lease: its leases must move, not only its polls.
          const before = await system.realmPartitionOwners();
          if (before[0].owner === 'events-0') target = 'events-0';
          let during: typeof before = [];
          cut = await system.cutOff(target, CUT_MS, async () => {
            await sleep(TAKEOVER_MS);
            during = await system.realmPartitionOwners();
          });
          owners = { before, during };
          return { target: `${target}'s host`, detail: `link down ${cut.restoredAt - cut.cutAt} ms` };
        },
      },
    },
  });
  const lines: string[] = [];
  printReport(report, (text) => lines.push(text));
  log(lines.join('\n'));
  expect(report.failures).toEqual([]);
  expect(report.faults['host-cut']).toBe(1);
  expect(report.totals.message_events).toBeGreaterThan(0);
  // The run's keys (queues, intake partitions, jobs) are spread over every master of the Redis Cluster.
  const masters = await system.redisCluster!.masters();
  const keysPerMaster = await Promise.all(masters.map(async (node) => Number(await node.cli('dbsize'))));
  log(`Redis Cluster keys per master: ${JSON.stringify(keysPerMaster)}`);
  expect(keysPerMaster).toHaveLength(3);
  expect(keysPerMaster.every((keys) => keys > 0)).toBe(true);

  // The cut replica held the realm's partition; the other one held it while the host was away.
  const other = target === 'events-0' ? 'events-1' : 'events-0';
  log(`realm partition owners: ${JSON.stringify(owners)}`);
  expect(owners!.before).toContainEqual(expect.objectContaining({ owner: target }));
  expect(owners!.during.length).toBeGreaterThan(0);
  expect(owners!.during.every((row) => (row as { owner?: string }).owner === other)).toBe(true);

  const { cutAt, restoredAt } = cut!;

  // Served throughout: each client whose queue was open from the takeover to the restore got
  // message events in between, from the other replica (the cut one was unreachable).
  const windowStart = cutAt + TAKEOVER_MS;
  expect(windowStart).toBeLessThan(restoredAt);
  const during = clients.map((client) => {
    const queues = client.queues.filter(
      (queue) => queue.registeredAt <= windowStart && (queue.end?.at ?? Infinity) >= restoredAt,
    );
    const arrivals = client.queues
      .flatMap((queue) => queue.messageAt)
      .filter((at) => at >= windowStart && at <= restoredAt);
    return { client: client.label, openThroughout: queues.length > 0, events: arrivals.length };
  });
  log(`message events from the takeover to the restore, by client: ${JSON.stringify(during)}`);
  expect(during.filter((row) => row.openThroughout).length).toBeGreaterThanOrEqual(4);
  expect(during.filter((row) => row.openThroughout && row.events === 0)).toEqual([]);

  // The load balancer's health check marked the cut host down during the cut and up after it,
  // and never the replica that served everyone meanwhile.
  const transitions = system.health.transitions.map(({ id, up, at }) => ({ id, up, at: at - cutAt }));
  log(`health transitions (ms after the cut): ${JSON.stringify(transitions)}`);
  const inCut = (at: number) => at >= 0 && at <= restoredAt - cutAt;
  expect(transitions.filter((row) => row.id === target && !row.up && inCut(row.at))).toHaveLength(1);
  expect(transitions.filter((row) => row.id === target).at(-1)).toMatchObject({ up: true });
  expect(transitions.filter((row) => row.id === target).at(-1)!.at).toBeGreaterThanOrEqual(restoredAt - cutAt);
  expect(transitions.filter((row) => row.id === other && inCut(row.at))).toEqual([]);
});
