// Refusals that happen before a request is read to its end (found by tests/fuzz): a service
// that answers without reading the body must not leave the client's connection stalled, and
// a request node's parser refuses (URL or headers too large) still gets an error envelope.

import http from 'node:http';
import { createLogger } from '@teamchat/core';
import { listen, serverUrl } from '@teamchat/runtime';
import { GENEROUS_RATE_LIMITS, startStack, type Stack } from '@teamchat/stack';
import { createGateway } from '../src/app';

let stack: Stack;
let upstream: http.Server;
let gatewayServer: http.Server;
let gatewayUrl: URL;
let closeGateway: () => Promise<void>;

beforeAll(async () => {
  stack = await startStack();
  // A "users service" that refuses every request at once, without reading its body (as tus
  // does with a 412 when Tus-Resumable is missing).
  upstream = await listen(
    (_req, res) => {
      res
        .writeHead(412, { 'Content-Type': 'application/json' })
        .end('{"result":"error","msg":"refused early","code":"BAD_REQUEST"}');
    },
    0,
    '127.0.0.1',
  );
  const gateway = createGateway({
    env: {
      INTERNAL_JWT_SECRET: 'refusals-test-secret',
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      UPSTREAM_TIMEOUT_MS: 10_000,
      ...GENEROUS_RATE_LIMITS,
    },
    db: stack.db,
    redis: stack.redis,
    logger: createLogger('refusals', 'silent'),
    serviceUrls: {
      users: serverUrl(upstream),
      messages: 'http://127.0.0.1:9',
      channels: 'http://127.0.0.1:9',
      uploads: 'http://127.0.0.1:9',
      events: 'http://127.0.0.1:9',
      web: 'http://127.0.0.1:9',
    },
  });
  gatewayServer = await listen(gateway.handler, 0, '127.0.0.1');
  gatewayUrl = new URL(serverUrl(gatewayServer));
  closeGateway = () => gateway.close();
});

afterAll(async () => {
  for (const server of [gatewayServer, upstream]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await closeGateway();
  await stack.close();
});

function post(agent: http.Agent, path: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      hostname: gatewayUrl.hostname,
      port: gatewayUrl.port,
      method: 'POST',
      path,
      agent,
      headers: {
        host: new URL(stack.gatewayUrl).host,
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': body.length,
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a body the service did not read is dropped: the same keep-alive connection serves the next request', async () => {
  // One connection only: a stalled one would hold every later request (until a 65 s timeout).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = Buffer.alloc(8 * 1024 * 1024, 'a');
  try {
    for (let i = 0; i < 4; i++) {
      const response = await post(agent, '/api/v1/server_settings', body);
      expect(response.status).toBe(412);
      expect(JSON.parse(response.body)).toEqual({ result: 'error', msg: 'refused early', code: 'BAD_REQUEST' });
    }
  } finally {
    agent.destroy();
  }
}, 30_000);

test('a URL past the header size limit is a 431 error envelope, not a bare status line', async () => {
  const response = await new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
    const req = http.request({
      hostname: gatewayUrl.hostname,
      port: gatewayUrl.port,
      path: `/api/v1/users/me?q=${'x'.repeat(20_000)}`,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: res.headers['content-type'],
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
  expect(response.status).toBe(431);
  expect(response.type).toBe('application/json');
  expect(JSON.parse(response.body)).toEqual({
    result: 'error',
    msg: 'Request header fields too large',
    code: 'BAD_REQUEST',
  });
});
