// The gateway once served Prometheus /metrics on its public port, without credentials. Metrics are
// now served by an admin listener on METRICS_PORT (9990 by default for the gateway), which no
// Ingress route and no published compose port reaches.

import { listen, serverUrl, withProcessEndpoints } from '@teamchat/runtime';
import { startStack, type Stack } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';
import type http from 'node:http';
import { loadGatewayEnv } from '../src/env';

const NOWHERE = 'http://127.0.0.1:9';
let stack: Stack;
let publicServer: http.Server;
beforeAll(async () => {
  stack = await startStack();
  // The gateway's handler as serve() puts it on the public port.
  const { createGateway } = await import('../src/app');
  const gateway = createGateway({
    env: {
      INTERNAL_JWT_SECRET: stack.deps.env.INTERNAL_JWT_SECRET,
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      UPSTREAM_TIMEOUT_MS: 10_000,
    },
    db: stack.db,
    redis: stack.redis,
    logger: stack.deps.logger,
    serviceUrls: {
      users: stack.serviceUrls.users!,
      messages: NOWHERE,
      channels: NOWHERE,
      uploads: NOWHERE,
      events: NOWHERE,
      web: 'http://127.0.0.1:9',
    },
  });
  publicServer = await listen(withProcessEndpoints(gateway.handler, { stopping: false }), 0, '127.0.0.1');
  publicServer.on('close', () => void gateway.close());
});
afterAll(async () => {
  publicServer.closeAllConnections();
  await new Promise((resolve) => publicServer.close(resolve));
  await stack.close();
});

test('the public port does not serve /metrics: 404, as any unknown path', async () => {
  const url = `${serverUrl(publicServer)}/metrics`;
  const response = await fetch(url);
  expect(response.status).toBe(404);
  const body = await response.json();
  expect(body).toEqual({ result: 'error', msg: 'Endpoint does not exist', code: 'BAD_REQUEST' });
  // The stack's own gateway, with credentials, too.
  const user = await stack.createUser();
  const viaStack = await user.client.get('/metrics', {}, { validate: false });
  expectError(viaStack, 404, 'BAD_REQUEST', 'Endpoint does not exist');
});

test('its admin port is METRICS_PORT, 9990 unless set', () => {
  const base = { DATABASE_URL: 'postgresql://x@127.0.0.1/x', INTERNAL_JWT_SECRET: 'x'.repeat(32) };
  expect(loadGatewayEnv(base).METRICS_PORT).toBe(9990);
  expect(loadGatewayEnv({ ...base, METRICS_PORT: '19990' }).METRICS_PORT).toBe(19990);
});
