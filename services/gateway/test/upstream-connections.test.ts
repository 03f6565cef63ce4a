// The gateway's connections to a service behind a Kubernetes Service, which balances per TCP
// connection: after a scale-out the new replica must get requests (long-polls included, whose
// connections are reused at once after every answer and so never go idle), while connections
// are still reused (opening one per poll would cost more than the polls). Real servers: two
// upstream "replicas" behind one port that hands each accepted connection to the next live
// replica in turn, and the real gateway in front, with clients polling through it non-stop.

import http from 'node:http';
import net from 'node:net';
import { createLogger } from '@teamchat/core';
import { listen, serverUrl } from '@teamchat/runtime';
import { GENEROUS_RATE_LIMITS, startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, waitFor } from '@teamchat/testing';
import { createGateway } from '../src/app';

jest.setTimeout(90_000);

const MAX_SOCKET_AGE_MS = 1500;
/** Longest wait for something that should happen within about one socket age. */
const PATIENCE_MS = 30_000;

/** A service replica that answers every request after a wait (a parked poll's answer; `delay_ms`, else 5 ms), naming itself. */
class FakeReplica {
  requests = 0;
  connections = 0;
  closed = 0;
  private server: http.Server | undefined;
  port = 0;

  constructor(readonly name: string) {}

  async start(): Promise<this> {
    this.server = await listen(
      (req, res) => {
        this.requests++;
        const delayMs = Number(new URL(req.url ?? '/', 'http://replica').searchParams.get('delay_ms') ?? 5);
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ result: 'success', msg: '', events: [], replica: this.name, path: req.url }));
        }, delayMs);
      },
      0,
      '127.0.0.1',
    );
    this.server.on('connection', (socket: net.Socket) => {
      this.connections++;
      socket.on('close', () => this.closed++);
    });
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}

/** Like a Kubernetes Service: each accepted connection goes to the next live replica, for its whole life. */
class ConnectionBalancer {
  readonly replicas: FakeReplica[] = [];
  private next = 0;
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = net.createServer((client) => {
      const replica = this.replicas[this.next++ % this.replicas.length];
      const upstream = net.connect(replica.port, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

let stack: Stack;
let user: TestUser;
let balancer: ConnectionBalancer;
let first: FakeReplica;
let second: FakeReplica;
let gatewayServer: http.Server;
let closeGateway: () => Promise<void>;
let client: ApiClient;

beforeAll(async () => {
  stack = await startStack();
  user = await stack.createUser();
  first = await new FakeReplica('first').start();
  second = new FakeReplica('second');
  balancer = await new ConnectionBalancer().start();
  balancer.replicas.push(first);
  const gateway = createGateway({
    env: {
      INTERNAL_JWT_SECRET: 'upstream-connections-secret',
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      UPSTREAM_TIMEOUT_MS: 10_000,
      UPSTREAM_SOCKET_MAX_AGE_MS: MAX_SOCKET_AGE_MS,
      UPSTREAM_SOCKET_IDLE_MS: 60_000,
      ...GENEROUS_RATE_LIMITS,
    },
    db: stack.db,
    redis: stack.redis,
    logger: createLogger('upstream-connections', 'silent'),
    // Every service is "the Service" in front of the fake replicas.
    serviceUrls: {
      users: balancer.url,
      messages: balancer.url,
      channels: balancer.url,
      uploads: balancer.url,
      events: balancer.url,
      web: 'http://127.0.0.1:9',
    },
  });
  gatewayServer = await listen(gateway.handler, 0, '127.0.0.1');
  closeGateway = () => gateway.close();
  client = new ApiClient(
    serverUrl(gatewayServer),
    { email: user.deliveryEmail, apiKey: user.apiKey },
    { host: stack.realm.host },
  );
});

afterAll(async () => {
  gatewayServer.closeAllConnections();
  await new Promise((resolve) => gatewayServer.close(resolve));
  await closeGateway();
  await balancer.stop();
  await first.stop();
  await second.stop();
  await stack.close();
});

test('after a scale-out, long-polls and other requests reach the new replica, over connections that are still reused', async () => {
  const answeredBy: Record<string, number> = { first: 0, second: 0 };
  const failures: string[] = [];
  let running = true;
  // Polls and plain requests, each kind through its own agent of the gateway, without a pause.
  const loop = async (path: string) => {
    while (running) {
      // The fake replicas' bodies are not Zulip's: no schema check.
      const response = await client.get(path, {}, { validate: false });
      if (response.status !== 200) failures.push(`${path}: ${response.status} ${JSON.stringify(response.body)}`);
      else answeredBy[response.body.replica]++;
    }
  };
  const loops = [
    ...Array.from({ length: 4 }, () => loop('/api/v1/events?queue_id=q&last_event_id=-1')),
    ...Array.from({ length: 2 }, () => loop('/api/v1/users/me')),
  ];
  try {
    await waitFor(() => first.requests >= 50, { what: 'the first replica answers', timeoutMs: PATIENCE_MS });
    expect(second.requests).toBe(0);

    await second.start();
    balancer.replicas.push(second);
    await waitFor(() => second.requests >= 50 && answeredBy.second >= 50, {
      what: 'the new replica gets long-polls and requests',
      timeoutMs: PATIENCE_MS,
    });
    // The gateway still uses the first replica too (half of its new connections go there).
    const firstBefore = first.requests;
    await waitFor(() => first.requests >= firstBefore + 50, {
      what: 'the first replica keeps answering',
      timeoutMs: PATIENCE_MS,
    });
  } finally {
    running = false;
    await Promise.all(loops);
  }
  expect(failures).toEqual([]);
  // Connections are reused: many requests per connection, not one connection per request.
  const requests = first.requests + second.requests;
  const connections = first.connections + second.connections;
  expect(connections).toBeGreaterThan(2);
  expect(requests).toBeGreaterThan(connections * 5);
});

test('a long-poll parked past the maximum socket age is answered, not cut: a socket is closed only after its response', async () => {
  const response = await client.get(
    '/api/v1/events',
    { queue_id: 'q', last_event_id: -1, delay_ms: MAX_SOCKET_AGE_MS * 2 },
    { validate: false },
  );
  expect(response.status).toBe(200);
  expect(response.body).toMatchObject({ result: 'success', events: [] });
});

test('a connection to a service left unused is closed after UPSTREAM_SOCKET_IDLE_MS', async () => {
  const replica = await new FakeReplica('idle').start();
  const gateway = createGateway({
    env: {
      INTERNAL_JWT_SECRET: 'upstream-connections-secret',
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      UPSTREAM_TIMEOUT_MS: 10_000,
      UPSTREAM_SOCKET_MAX_AGE_MS: 60_000,
      UPSTREAM_SOCKET_IDLE_MS: 300,
      ...GENEROUS_RATE_LIMITS,
    },
    db: stack.db,
    redis: stack.redis,
    logger: createLogger('upstream-connections', 'silent'),
    serviceUrls: {
      users: `http://127.0.0.1:${replica.port}`,
      messages: 'http://127.0.0.1:9',
      channels: 'http://127.0.0.1:9',
      uploads: 'http://127.0.0.1:9',
      events: `http://127.0.0.1:${replica.port}`,
      web: 'http://127.0.0.1:9',
    },
  });
  const server = await listen(gateway.handler, 0, '127.0.0.1');
  try {
    const idleClient = new ApiClient(
      serverUrl(server),
      { email: user.deliveryEmail, apiKey: user.apiKey },
      { host: stack.realm.host },
    );
    // A plain request and a long-poll (two agents of the gateway).
    for (const [index, path] of ['/api/v1/users/me', '/api/v1/events?queue_id=q&last_event_id=-1'].entries()) {
      expect((await idleClient.get(path, {}, { validate: false })).status).toBe(200);
      expect(replica.connections).toBe(index + 1);
      // The gateway closes it (the replica would keep it for its keep-alive timeout, 65 s).
      await waitFor(() => replica.closed === index + 1, {
        what: 'the idle connection is closed',
        timeoutMs: PATIENCE_MS,
      });
    }
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await gateway.close();
    await replica.stop();
  }
});
