// A poll parks (its mark in Redis, field k) as soon as its script ran, whether or not the
// replica's wake-up subscription for its queue is confirmed yet. A replica short of CPU confirms
// thousands of subscriptions late; polls that waited for the confirmation before parking stayed
// unparked (and, but for their heartbeat, unanswered) meanwhile. Here the replica's subscriber
// connection is held back (a TCP proxy between the replica and Redis) for longer than a
// heartbeat: the poll must be parked before it is answered, and an event appended while the
// subscription is still pending must still reach it once the subscription comes.
import http from 'node:http';
import { createLogger } from '@teamchat/core';
import { createBaseDeps, listen, serverUrl, type BaseDeps, type RunningService } from '@teamchat/runtime';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, TcpProxy, testRedisUrl, until, waitFor } from '@teamchat/testing';
import { createService } from '../src/app';
import { alertWords, commitEvent } from './support/producers';

jest.setTimeout(240_000);

const HEARTBEAT_MS = 20_000;
/** How long the subscriber connection is held back after the cut: past a heartbeat. */
const HOLD_MS = 2 * HEARTBEAT_MS + 5_000;

let stack: Stack;
let user: TestUser;
let redisProxy: TcpProxy;
let base: BaseDeps;
let replica: RunningService;
let replicaServer: http.Server;
let replicaUrl: string;

beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  user = await stack.createUser();
  const redis = new URL(testRedisUrl());
  const redisPort = Number(redis.port || 6379);
  redisProxy = await new TcpProxy(() => redisPort, redis.hostname).listen();
  redis.port = String(redisProxy.port);
  base = createBaseDeps(
    'events-park-first',
    { ...stack.deps.env, REDIS_URL: redis.toString() },
    { logger: createLogger('events-park-first', 'silent') },
  );
  replica = await createService(base, {
    EVENTS_REPLICA_ID: 'park-first-replica',
    EVENTS_HEARTBEAT_MIN_MS: String(HEARTBEAT_MS),
    EVENTS_HEARTBEAT_JITTER_MS: '0',
  });
  replicaServer = await listen(replica.handler, 0, '127.0.0.1');
  replicaUrl = serverUrl(replicaServer);
  await waitFor(async () => (await status(`${replicaUrl}/health/ready`)) === 200, { what: 'the replica is ready' });
});

afterAll(async () => {
  replicaServer.closeAllConnections();
  await new Promise((resolve) => replicaServer.close(resolve));
  await replica.close();
  await base.close();
  await redisProxy.close();
  await stack.close();
});

function status(url: string): Promise<number> {
  return new Promise((resolve) =>
    http
      .get(url, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0)),
  );
}

/** A poll straight to the replica (as the Ingress sends it), answered with its status and body. */
function poll(queueId: string, lastEventId: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    http
      .get(
        `${replicaUrl}/api/v1/events?queue_id=${queueId}&last_event_id=${lastEventId}`,
        {
          headers: {
            host: stack.realm.host,
            authorization: `Basic ${Buffer.from(`${user.deliveryEmail}:${user.apiKey}`).toString('base64')}`,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
          );
        },
      )
      .on('error', reject);
  });
}

const metaKey = (queueId: string) => `${stack.deps.env.REDIS_PREFIX}{q:${queueId}}:m`;

test('a poll whose wake-up subscription is not confirmed yet is parked before it is answered', async () => {
  // Fresh queues (registered through the stack's own replica), so the replica must subscribe.
  const idle = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  const woken = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  // Every connection of the replica is reset; the others come back at once, the subscriber only
  // after HOLD_MS.
  await redisProxy.cut(200, { nameMatches: /:wake$/, ms: HOLD_MS });
  let idleAnswered = false;
  const idlePoll = poll(idle.queueId, idle.lastEventId).then((answer) => {
    idleAnswered = true;
    return answer;
  });
  let wokenAnswered = false;
  const wokenPoll = poll(woken.queueId, woken.lastEventId).then((answer) => {
    wokenAnswered = true;
    return answer;
  });
  // Both parked (their marks in Redis) while neither was answered.
  const parked = await until(
    async () => idleAnswered || (await stack.redis.hexists(metaKey(idle.queueId), 'k')) === 1,
    HEARTBEAT_MS * 10,
  );
  expect({ parked, answeredFirst: idleAnswered }).toEqual({ parked: true, answeredFirst: false });
  expect(
    await until(
      async () => wokenAnswered || (await stack.redis.hexists(metaKey(woken.queueId), 'k')) === 1,
      HEARTBEAT_MS * 10,
    ),
  ).toBe(true);
  expect(wokenAnswered).toBe(false);
  // An event for both queues while the subscription is still pending: its wake-up is lost, the
  // queues hold it; each poll gets it by its heartbeat's answer at the latest (or, on a machine
  // slow enough that the heartbeat came first, the next poll does).
  await commitEvent(stack, alertWords(['while-subscribing']), [user.id]);
  for (const [queue, answer] of [
    [woken, wokenPoll],
    [idle, idlePoll],
  ] as const) {
    let reply = await answer;
    let lastEventId = queue.lastEventId;
    for (let polls = 0; ; polls++) {
      expect(reply.status).toBe(200);
      const events = reply.body.events as { id: number; type: string }[];
      const real = events.filter((event) => event.type !== 'heartbeat');
      if (real.length > 0) {
        expect(real).toEqual([{ id: expect.any(Number), type: 'alert_words', alert_words: ['while-subscribing'] }]);
        break;
      }
      expect(polls).toBeLessThan(5);
      lastEventId = Math.max(lastEventId, ...events.map((event) => event.id));
      reply = await poll(queue.queueId, lastEventId);
    }
  }
});
