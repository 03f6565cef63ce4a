// Redis and PostgreSQL restarted in the middle of the workload, with the same checks as the
// process kills: every answered write stored, every event stream exact (nothing lost or twice),
// every mark-all-read job completed exactly once.
//
// Both stores are PRIVATE instances started here (temp directory, free port), never the shared
// 5432/6379 ones. Redis runs as production should: `appendonly yes`, `appendfsync always`, so a
// kill -9 keeps every acknowledged write — event queues included, so no client has to
// re-register (asserted). (Without persistence a restart loses the queues, clients get
// BAD_EVENT_QUEUE_ID and re-register, which the protocol allows; committed events are still in
// event_outbox until relayed, but events already relayed into lost queues are gone from those
// queues: that is the documented cost of running Redis without persistence.) PostgreSQL is
// stopped in immediate mode (every backend killed, crash recovery at start).

import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import { ProcessCluster, type ClusterUser } from './support/cluster';
import { OwnPostgres, OwnRedis } from './support/instances';
import { baseline, createParticipants, finishAndCheck, startClients, Workload } from './support/workload';

jest.setTimeout(120_000);

let postgres: OwnPostgres;
let redis: OwnRedis;
let cluster: ProcessCluster;
let users: ClusterUser[];
let channelName: string;

beforeAll(async () => {
  postgres = await OwnPostgres.start();
  redis = await OwnRedis.start({ persistent: true });
  const databaseUrl = await postgres.createDatabase(`faults_${crypto.randomBytes(4).toString('hex')}`);
  cluster = await ProcessCluster.start({ databaseUrl, redisUrl: redis.url, eventReplicas: 2 });
  ({ users, channelName } = await createParticipants(cluster));
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  await redis?.stop();
  await postgres?.stop();
});

test('Redis killed (kill -9) and restarted mid-run: nothing lost, nothing twice, no re-registration', async () => {
  const clients = await startClients(users);
  const start = await baseline(cluster);
  const workload = new Workload(users, clients, channelName);
  workload.start();
  await workload.progressed(10);
  await redis.kill();
  await sleep(1000);
  await redis.startServer();
  await workload.progressed(10);
  const problems = await finishAndCheck(cluster, workload, clients, start);
  expect(problems).toEqual([]);
  expect(cluster.unexpectedExits(new Set())).toEqual([]);
  // While Redis is down, requests that need it are refused with a 503, never a 500.
  expect(workload.internalErrors).toEqual([]);
  console.log(`redis restart: ${JSON.stringify(workload.stats)}`);
});

test('PostgreSQL crashed (immediate stop) and restarted mid-run: nothing lost, nothing twice, no re-registration', async () => {
  const clients = await startClients(users);
  const start = await baseline(cluster);
  const workload = new Workload(users, clients, channelName);
  workload.start();
  await workload.progressed(10);
  postgres.stopServer('immediate');
  await sleep(1000);
  await postgres.startServer();
  await workload.progressed(10);
  const problems = await finishAndCheck(cluster, workload, clients, start);
  expect(problems).toEqual([]);
  expect(cluster.unexpectedExits(new Set())).toEqual([]);
  // While PostgreSQL is down, requests are refused with a 503 (Retry-After), never a 500.
  expect(workload.internalErrors).toEqual([]);
  expect(Object.keys(workload.stats.errors).some((key) => key.endsWith(' 503'))).toBe(true);
  console.log(`postgres restart: ${JSON.stringify(workload.stats)}`);
});
