// Readiness is about the replica's own job: an event replica serves polls from
// Redis, so it stays ready while PostgreSQL is unreachable (a failover) and keeps answering
// long-polls; it goes unready when Redis is unreachable, and ready again once Redis is back.
// The replica under test is a real event service whose database URL points at a closed port
// and whose Redis sits behind a TCP proxy the test can cut; the test stack (its own events
// replica fans the events out) and a real gateway in front of the replica under test.
// Also here: the Redis memory headroom sampler the replica runs (alerted on).

import http from 'node:http';
import { createLogger } from '@teamchat/core';
import { createBaseDeps, listen, serverUrl, type BaseDeps, type RunningService } from '@teamchat/runtime';
import { createGateway } from '@teamchat/service-gateway';
import { eventTierMetrics } from '@teamchat/telemetry';
import { GENEROUS_RATE_LIMITS, startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, freePort, registerEventQueue, TcpProxy, testRedisUrl, waitFor } from '@teamchat/testing';
import { createService } from '../src/app';
import { parseRedisMemory, startRedisMemorySampler } from '../src/lib/redis-memory';
import { alertWords, commitEvent } from './support/producers';

jest.setTimeout(60_000);

const HEARTBEAT_MS = 5_000;

function get(url: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }),
        );
      })
      .on('error', reject);
  });
}

let stack: Stack;
let user: TestUser;
let redisProxy: TcpProxy;
let base: BaseDeps;
let replica: RunningService;
let replicaServer: http.Server;
let replicaUrl: string;
let gateway: RunningService;
let gatewayServer: http.Server;
/** `user` through the gateway whose event tier is the replica under test. */
let client: ApiClient;

beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  user = await stack.createUser();
  const redis = new URL(testRedisUrl());
  const redisPort = Number(redis.port || 6379);
  redisProxy = await new TcpProxy(() => redisPort, redis.hostname).listen();
  redis.port = String(redisProxy.port);
  // Nothing listens on that port: every PostgreSQL connection is refused.
  const database = new URL(stack.database.url);
  database.port = String(await freePort());
  base = createBaseDeps(
    'events-readiness',
    { ...stack.deps.env, DATABASE_URL: database.toString(), REDIS_URL: redis.toString() },
    { logger: createLogger('events-readiness', 'silent') },
  );
  // Heartbeats well after a poll's event comes, well before the last test's held subscriber does.
  replica = await createService(base, {
    EVENTS_REPLICA_ID: 'readiness-replica',
    EVENTS_HEARTBEAT_MIN_MS: String(HEARTBEAT_MS),
    EVENTS_HEARTBEAT_JITTER_MS: '0',
  });
  replicaServer = await listen(replica.handler, 0, '127.0.0.1');
  replicaUrl = serverUrl(replicaServer);
  gateway = createGateway({
    env: {
      INTERNAL_JWT_SECRET: stack.deps.env.INTERNAL_JWT_SECRET,
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      UPSTREAM_TIMEOUT_MS: 10_000,
      ...GENEROUS_RATE_LIMITS,
    },
    db: stack.db,
    redis: stack.redis,
    logger: createLogger('readiness-gateway', 'silent'),
    serviceUrls: {
      users: stack.serviceUrls.users!,
      messages: 'http://127.0.0.1:9',
      channels: 'http://127.0.0.1:9',
      uploads: 'http://127.0.0.1:9',
      events: replicaUrl,
      web: 'http://127.0.0.1:9',
    },
  });
  gatewayServer = await listen(gateway.handler, 0, '127.0.0.1');
  client = new ApiClient(
    serverUrl(gatewayServer),
    { email: user.deliveryEmail, apiKey: user.apiKey },
    { host: stack.realm.host },
  );
  // Connected to Redis (through the proxy) before the tests look.
  await waitFor(async () => (await get(`${replicaUrl}/health/ready`)).status === 200, { what: 'the replica is ready' });
});

afterAll(async () => {
  for (const server of [gatewayServer, replicaServer]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await gateway.close();
  await replica.close();
  await base.close();
  await redisProxy.close();
  await stack.close();
});

describe('an event replica whose PostgreSQL is unreachable', () => {
  test('is ready', async () => {
    expect(await get(`${replicaUrl}/health/ready`)).toEqual({ status: 200, body: { status: 'ok' } });
  });

  test('answers long-polls of an existing queue: a parked poll gets the event', async () => {
    // The queue was registered while PostgreSQL answered (through the stack's own replica).
    const queue = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
    const poll = client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: queue.lastEventId });
    await commitEvent(stack, alertWords(['failover']), [user.id]);
    const response = await poll;
    expect(response.status).toBe(200);
    expect(response.body.events).toEqual([
      { id: queue.lastEventId + 1, type: 'alert_words', alert_words: ['failover'] },
    ]);
  });

  test('refuses what needs PostgreSQL (register) with a 503, never a 500', async () => {
    const response = await client.post('/api/v1/register', { event_types: JSON.stringify(['alert_words']) });
    expect(response.status).toBe(503);
    expect(response.body).toMatchObject({ result: 'error' });
  });
});

test('an event replica whose Redis is unreachable is not ready, and ready again once Redis is back', async () => {
  // Every connection reset, new ones refused, for 5 s.
  const cut = redisProxy.cut(5_000);
  await waitFor(async () => (await get(`${replicaUrl}/health/ready`)).status === 503, {
    what: 'the replica is unready',
  });
  const unready = await get(`${replicaUrl}/health/ready`);
  expect(unready).toEqual({ status: 503, body: { status: 'unavailable', reason: expect.stringContaining('Redis') } });
  await cut;
  await waitFor(async () => (await get(`${replicaUrl}/health/ready`)).status === 200, {
    what: 'the replica is ready again',
  });
});

describe('the Redis memory headroom sampler', () => {
  test('reads used_memory and maxmemory from INFO memory', () => {
    const info =
      '# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\nmaxmemory:4294967296\r\nmaxmemory_human:4.00G\r\nmaxmemory_policy:noeviction\r\n';
    expect(parseRedisMemory(info)).toEqual({ usedBytes: 1048576, maxBytes: 4294967296 });
    expect(parseRedisMemory('# Memory\r\nused_memory_human:1.00M\r\n')).toBeUndefined();
  });

  test("sets the gauges to the Redis's own figures", async () => {
    const metrics = eventTierMetrics();
    metrics.redisMemoryUsedBytes.reset();
    metrics.redisMemoryMaxBytes.reset();
    const sampler = startRedisMemorySampler(stack.redis, createLogger('redis-memory', 'silent'), 60_000);
    try {
      await sampler.sample();
      const [, maxmemory] = (await stack.redis.config('GET', 'maxmemory')) as [string, string];
      // One series per master (one for a single server), named by its address.
      const max = (await metrics.redisMemoryMaxBytes.get()).values;
      const used = (await metrics.redisMemoryUsedBytes.get()).values;
      expect(max.length).toBeGreaterThan(0);
      expect(used.map((sample) => sample.labels.node)).toEqual(max.map((sample) => sample.labels.node));
      for (const sample of max) {
        expect(sample.labels.node).toMatch(/:\d+$/);
        expect(sample.value).toBe(Number(maxmemory));
      }
      for (const sample of used) expect(sample.value).toBeGreaterThan(0);
    } finally {
      await sampler.stop();
    }
  });
});

test('a poll that cannot subscribe to its wake-ups yet is answered at its heartbeat, not once the subscriber is back', async () => {
  // A fresh queue, so its poll must subscribe. Every connection of the replica is reset; the
  // others come back at once, the wake-up subscriber only after HOLD_MS (a replica just started
  // whose subscriber is slow to connect: a checker run saw polls wait 15 s there).
  const HOLD_MS = 4 * HEARTBEAT_MS;
  const queue = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  const cutAt = Date.now();
  await redisProxy.cut(200, { nameMatches: /:wake$/, ms: HOLD_MS });
  const response = await client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: queue.lastEventId });
  const answeredAt = Date.now();
  expect(response.status).toBe(200);
  expect(response.body.events).toEqual([{ type: 'heartbeat', id: queue.lastEventId + 1 }]);
  expect(answeredAt - cutAt).toBeLessThan(HOLD_MS);
});
