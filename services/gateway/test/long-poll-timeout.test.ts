// A long-poll parked on an event replica that goes silent (its host cut off the network: nothing
// closes the connection) is ended after UPSTREAM_LONG_POLL_TIMEOUT_MS with a 503 envelope, and
// the upstream request is dropped, so the client's next poll is balanced to a live replica
// (tests/multihost showed clients stalled for the whole cut without it).

import http from 'node:http';
import type net from 'node:net';
import { createLogger } from '@teamchat/core';
import { listen, serverUrl } from '@teamchat/runtime';
import { GENEROUS_RATE_LIMITS, startStack, type Stack } from '@teamchat/stack';
import { ApiClient, sleep } from '@teamchat/testing';
import { createGateway } from '../src/app';

const LONG_POLL_TIMEOUT_MS = 1500;

let stack: Stack;
let silentReplica: http.Server;
let gatewayServer: http.Server;
let closeGateway: () => Promise<void>;
const upstreamSockets: net.Socket[] = [];

beforeAll(async () => {
  stack = await startStack();
  // An "event replica" that takes the poll and never answers, as one behind a cut link.
  silentReplica = await listen(() => undefined, 0, '127.0.0.1');
  silentReplica.on('connection', (socket) => upstreamSockets.push(socket));
  const gateway = createGateway({
    env: {
      INTERNAL_JWT_SECRET: stack.deps.env.INTERNAL_JWT_SECRET,
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      UPSTREAM_TIMEOUT_MS: 10_000,
      UPSTREAM_LONG_POLL_TIMEOUT_MS: LONG_POLL_TIMEOUT_MS,
      ...GENEROUS_RATE_LIMITS,
    },
    db: stack.db,
    redis: stack.redis,
    logger: createLogger('long-poll-timeout', 'silent'),
    serviceUrls: {
      users: stack.serviceUrls.users!,
      messages: 'http://127.0.0.1:9',
      channels: 'http://127.0.0.1:9',
      uploads: 'http://127.0.0.1:9',
      events: serverUrl(silentReplica),
      web: 'http://127.0.0.1:9',
    },
  });
  gatewayServer = await listen(gateway.handler, 0, '127.0.0.1');
  closeGateway = () => gateway.close();
});

afterAll(async () => {
  for (const server of [gatewayServer, silentReplica]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await closeGateway();
  await stack.close();
});

test('a poll an event replica never answers ends in a 503 after the long-poll timeout, and its upstream request is dropped', async () => {
  const user = await stack.createUser();
  const client = new ApiClient(
    serverUrl(gatewayServer),
    { email: user.deliveryEmail, apiKey: user.apiKey },
    { host: new URL(stack.gatewayUrl).host },
  );
  const started = Date.now();
  const response = await client.get('/api/v1/events', { queue_id: 'some-queue', last_event_id: -1 });
  const waitedMs = Date.now() - started;
  expect(response.status).toBe(503);
  expect(response.body).toEqual({ result: 'error', msg: 'The events service is unavailable', code: 'BAD_REQUEST' });
  expect(waitedMs).toBeGreaterThanOrEqual(LONG_POLL_TIMEOUT_MS - 100);
  // The gateway let go of the replica's connection (the replica sees it close).
  expect(upstreamSockets.length).toBeGreaterThan(0);
  const closed = () => upstreamSockets.every((socket) => socket.destroyed || socket.readableEnded);
  for (let tries = 0; tries < 100 && !closed(); tries++) await sleep(50);
  expect(closed()).toBe(true);
}, 30_000);
