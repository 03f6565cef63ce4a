// The production shape end to end: every built service (services/*/dist after
// `node scripts/build.mjs`) runs as its own process with the telemetry preload, exactly as the
// launchers start it. One request is followed by its trace id through the gateway's and the
// service's log lines and spans (PostgreSQL and Redis included), into the worker when a running
// service enqueues jobs; every process's /metrics is scraped (on its admin port, METRICS_PORT); then each process gets SIGTERM
// while requests are in flight, and must answer them all, lose nothing, and exit 0.
//
// The stack grows as services appear: each step covers every service that is built. Services
// with a known in-flight request (below) are stopped in the middle of one.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Role } from '@teamchat/domain';
import { createBaseDeps, type BaseDeps } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import { ApiClient, createTestDatabase, testRedisTarget, waitFor } from '@teamchat/testing';
import { OtlpReceiver, SpanKind, type ReceivedSpan } from './support/otlp-receiver';
import {
  builtServices,
  freePort,
  type LogLine,
  type ServiceProcess,
  stackAddresses,
  stackServices,
  startServiceProcess,
} from './support/processes';
import { sampleValue, scrape } from './support/prometheus';
import { pendingGet, type SlowRequest, slowRequest } from './support/slow-request';

jest.setTimeout(300_000);

const { services: STACK } = stackServices();
const BUILT = new Set(builtServices());
/** Every backend process of the stack that is built, in scripts/lib/services.mjs order. */
const BACKENDS = STACK.filter((service) => BUILT.has(service.name));

const PASSWORD = 'production-shape-password';

/** Requests that enqueue a job, and the queue it lands in: how a trace reaches the worker. */
const JOB_REQUESTS = [
  { service: 'messages', queue: 'mark-all-read', method: 'POST', path: '/api/v1/mark_all_as_read' },
];

interface Context {
  email: string;
  userId: number;
  authorization: string;
  host: string;
  queueId?: string;
}

/**
 * For each service with one, how to keep a request in flight across its SIGTERM (through the
 * gateway), and what a correct answer is. Other services are stopped idle.
 */
const IN_FLIGHT: Record<
  string,
  {
    count: number;
    prepare?(context: Context): Promise<void>;
    open(gatewayUrl: string, context: Context, n: number): SlowRequest;
    check(body: any): void;
  }
> = {
  users: {
    count: 3,
    open: (gatewayUrl, context) =>
      slowRequest({
        url: gatewayUrl,
        host: context.host,
        method: 'POST',
        path: '/api/v1/fetch_api_key',
        body: new URLSearchParams({ username: context.email, password: PASSWORD }).toString(),
      }),
    check: (body) => expect(body).toMatchObject({ result: 'success', api_key: expect.any(String) }),
  },
  messages: {
    count: 3,
    open: (gatewayUrl, context, n) =>
      slowRequest({
        url: gatewayUrl,
        host: context.host,
        method: 'POST',
        path: '/api/v1/messages',
        headers: { authorization: context.authorization },
        body: new URLSearchParams({
          type: 'direct',
          to: JSON.stringify([context.userId]),
          content: `in flight across a restart ${n}`,
        }).toString(),
      }),
    check: (body) => expect(body).toMatchObject({ result: 'success', id: expect.any(Number) }),
  },
  events: {
    count: 1,
    // A fresh queue (nothing else happens now), so the poll parks.
    prepare: async (context) => {
      const registered = await client.post('/api/v1/register', { event_types: ['message'] });
      expect(registered.status).toBe(200);
      context.queueId = registered.body.queue_id;
    },
    // A parked long-poll: the event tier must hand it back (answer it) when told to stop.
    open: (gatewayUrl, context) =>
      pendingGet({
        url: gatewayUrl,
        host: context.host,
        path: `/api/v1/events?queue_id=${encodeURIComponent(context.queueId ?? '')}&last_event_id=-1`,
        headers: { authorization: context.authorization },
      }),
    check: (body) => expect(body).toMatchObject({ result: 'success', events: expect.any(Array) }),
  },
};

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let receiver: OtlpReceiver;
let deps: BaseDeps;
let gateway: ServiceProcess;
const processes = new Map<string, ServiceProcess>();
let gatewayUrl: string;
let client: ApiClient;
let context: Context;
let apiKey: string;
let uploadsDir: string;

function requestLine(process: ServiceProcess, requestId: string): Promise<LogLine> {
  return process.waitForLog((line) => line.msg === 'request' && line.request_id === requestId);
}

/** Each process's admin listener (METRICS_PORT), where /metrics is served. */
const metricsUrls = new Map<string, string>();
const metricsUrlOf = (process: ServiceProcess) => metricsUrls.get(process.name)!;

async function inFlight(process: ServiceProcess, name: string, labels: Record<string, string>): Promise<number> {
  const { exposition } = await scrape(metricsUrlOf(process));
  return sampleValue(exposition, name, labels) ?? 0;
}

beforeAll(async () => {
  expect(BUILT.has('gateway')).toBe(true);
  expect(BUILT.has('users')).toBe(true);
  database = await createTestDatabase();
  receiver = await OtlpReceiver.start();
  const redisPrefix = `t:${crypto.randomBytes(6).toString('hex')}:`;
  const secret = crypto.randomBytes(24).toString('hex');
  const { ports, urlVars } = await stackAddresses(BACKENDS);
  const metricsPorts = new Map<string, number>();
  for (const name of ports.keys()) {
    metricsPorts.set(name, await freePort());
    metricsUrls.set(name, `http://127.0.0.1:${metricsPorts.get(name)}`);
  }
  uploadsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-production-stack-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    UPLOADS_LOCAL_DIR: uploadsDir,
    DATABASE_URL: database.url,
    ...testRedisTarget(),
    REDIS_PREFIX: redisPrefix,
    INTERNAL_JWT_SECRET: secret,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DB_POOL_SIZE: '4',
    EVENT_PARTITIONS: '4',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...urlVars,
  };
  const started = await Promise.all(
    BACKENDS.map((service) =>
      startServiceProcess(service.name, {
        ...env,
        PORT: String(ports.get(service.name)),
        METRICS_PORT: String(metricsPorts.get(service.name)),
      }),
    ),
  );
  for (const service of started) processes.set(service.name, service);
  gateway = await startServiceProcess('gateway', {
    ...env,
    PORT: String(ports.get('gateway')),
    METRICS_PORT: String(metricsPorts.get('gateway')),
  });
  processes.set('gateway', gateway);
  gatewayUrl = gateway.url;

  deps = createBaseDeps('production-stack-test', {
    DATABASE_URL: database.url,
    ...testRedisTarget(),
    REDIS_PREFIX: redisPrefix,
    INTERNAL_JWT_SECRET: secret,
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    EXTERNAL_SCHEME: 'http',
    EVENT_PARTITIONS: 4,
    DB_POOL_SIZE: 2,
  });
  const host = new URL(gatewayUrl).host;
  const realm = await doCreateRealm(deps.db, { stringId: '', name: 'Production shape', host });
  const created = await doCreateUser(deps, realm, {
    email: 'operator@example.com',
    fullName: 'Operator',
    role: Role.OWNER,
    password: PASSWORD,
  });
  apiKey = created.apiKey;
  client = new ApiClient(gatewayUrl, { email: created.user.delivery_email, apiKey });
  context = {
    email: created.user.delivery_email,
    userId: created.user.id,
    authorization: `Basic ${Buffer.from(`${created.user.delivery_email}:${apiKey}`).toString('base64')}`,
    host,
  };
});

afterAll(async () => {
  for (const service of processes.values()) if (service.running) await service.stop('SIGKILL');
  await deps?.close();
  await database?.drop();
  await receiver?.close();
  if (uploadsDir) fs.rmSync(uploadsDir, { recursive: true, force: true });
});

test('one request is followed by its trace id through the gateway, the service, PostgreSQL and Redis', async () => {
  const users = processes.get('users')!;
  const response = await client.get('/api/v1/users/me');
  expect(response.status).toBe(200);
  const requestId = String(response.headers['x-request-id']);

  const gatewayLine = await requestLine(gateway, requestId);
  const usersLine = await requestLine(users, requestId);
  expect(gatewayLine).toMatchObject({
    service: 'gateway',
    method: 'GET',
    path: '/api/v1/users/me',
    upstream: 'users',
    status: 200,
    user_id: context.userId,
  });
  expect(usersLine).toMatchObject({
    service: 'users',
    method: 'GET',
    route: '/api/v1/users/me',
    status: 200,
    user_id: context.userId,
  });
  const traceId = String(gatewayLine.trace_id);
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(usersLine.trace_id).toBe(traceId);

  const spans = await waitFor(
    () => {
      const trace = receiver.trace(traceId);
      const gatewayServer = trace.find((span) => span.serviceName === 'gateway' && span.kind === SpanKind.SERVER);
      const gatewayClient = trace.find(
        (span) =>
          span.serviceName === 'gateway' &&
          span.kind === SpanKind.CLIENT &&
          span.attributes['http.request.method'] !== undefined,
      );
      const usersServer = trace.find((span) => span.serviceName === 'users' && span.kind === SpanKind.SERVER);
      const usersQuery = trace.find(
        (span) =>
          span.serviceName === 'users' &&
          (span.attributes['db.system'] ?? span.attributes['db.system.name']) === 'postgresql',
      );
      const gatewayRedis = trace.find(
        (span) =>
          span.serviceName === 'gateway' &&
          (span.attributes['db.system'] ?? span.attributes['db.system.name']) === 'redis',
      );
      return gatewayServer && gatewayClient && usersServer && usersQuery && gatewayRedis
        ? { gatewayServer, gatewayClient, usersServer, usersQuery, gatewayRedis }
        : undefined;
    },
    { intervalMs: 100, what: 'the request spans of gateway and users' },
  );
  // One tree: client request → gateway → its call to users → users' handling → its queries.
  expect(spans.gatewayServer.parentSpanId).toBeUndefined();
  expect(spans.gatewayClient.parentSpanId).toBe(spans.gatewayServer.spanId);
  expect(spans.usersServer.parentSpanId).toBe(spans.gatewayClient.spanId);
  const usersSpanIds = new Set(
    receiver
      .trace(traceId)
      .filter((span) => span.serviceName === 'users')
      .map((span) => span.spanId),
  );
  expect(usersSpanIds.has(spans.usersQuery.parentSpanId!)).toBe(true);
  expect(spans.usersServer.attributes).toMatchObject({
    'http.route': '/api/v1/users/me',
    'http.response.status_code': 200,
  });
  // The Redis command is named, its values are not.
  expect(
    String(spans.gatewayRedis.attributes['db.statement'] ?? spans.gatewayRedis.attributes['db.query.text']),
  ).not.toMatch(/[0-9a-f]{64}/);
  // Each request line names its process's server span.
  expect(gatewayLine.span_id).toBe(spans.gatewayServer.spanId);
  expect(usersLine.span_id).toBe(spans.usersServer.spanId);
});

test('no credential reaches a log line or a span', async () => {
  // Zulip's legacy ?api_key= on a file URL, and a login with a password in the body.
  const download = await client.get('/user_uploads/1/ab/secret.txt', { api_key: apiKey }, { validate: false });
  const downloadLine = await requestLine(gateway, String(download.headers['x-request-id']));
  // The query string is in the gateway's span, with the key's value replaced.
  const downloadSpan = await waitFor(
    () =>
      receiver
        .trace(String(downloadLine.trace_id))
        .find((span) => span.serviceName === 'gateway' && span.kind === SpanKind.SERVER),
    { intervalMs: 100, what: 'the file request span' },
  );
  expect(downloadSpan.attributes['url.query']).toBe('api_key=REDACTED');
  const login = await new ApiClient(gatewayUrl).post('/api/v1/fetch_api_key', {
    username: context.email,
    password: PASSWORD,
  });
  expect(login.status).toBe(200);
  const issuedKey = login.body.api_key as string;
  const loginLine = await requestLine(processes.get('users')!, String(login.headers['x-request-id']));
  await waitFor(
    () =>
      receiver
        .trace(String(loginLine.trace_id))
        .find((span) => span.serviceName === 'users' && span.kind === SpanKind.SERVER),
    { intervalMs: 100, what: 'the login span' },
  );

  const everything = JSON.stringify([
    ...[...processes.values()].flatMap((service) => [service.logs, service.otherOutput]),
    receiver.spans,
  ]);
  for (const secret of [apiKey, issuedKey, PASSWORD, context.authorization.slice('Basic '.length)]) {
    expect(everything).not.toContain(secret);
  }
});

test('a request that enqueues a job continues its trace in the worker', async () => {
  const worker = processes.get('worker');
  expect(worker).toBeDefined();
  const ready = await fetch(`${worker!.url}/health/ready`);
  expect(ready.status).toBe(200);
  // The worker reports the queues it consumes; the flows below run for those whose producer is up.
  const { exposition } = await scrape(metricsUrlOf(worker!));
  const consumed = new Set(
    exposition.samples.filter((sample) => sample.name === 'teamchat_jobs').map((sample) => sample.labels.queue),
  );
  const flows = JOB_REQUESTS.filter((flow) => processes.has(flow.service) && consumed.has(flow.queue));
  for (const flow of flows) {
    const response = await client.request(flow.method, flow.path);
    expect(response.status).toBe(200);
    const line = await requestLine(gateway, String(response.headers['x-request-id']));
    const traceId = String(line.trace_id);
    // Spans of two processes arrive in their own batches: wait for both ends of the hop.
    const { producer, consumer } = await waitFor(
      () => {
        const spans = receiver.trace(traceId);
        const producer = spans.find(
          (span: ReceivedSpan) => span.serviceName === flow.service && span.kind === SpanKind.PRODUCER,
        );
        const consumer = spans.find(
          (span: ReceivedSpan) => span.serviceName === 'worker' && span.kind === SpanKind.CONSUMER,
        );
        return producer && consumer ? { producer, consumer } : undefined;
      },
      { intervalMs: 100, what: `the ${flow.queue} job spans of ${flow.service} and the worker` },
    );
    expect(consumer.parentSpanId).toBe(producer.spanId);
    const jobLine = await worker!.waitForLog(
      (log) => log.msg === 'job' && log.queue === flow.queue && log.trace_id === traceId,
    );
    expect(jobLine).toMatchObject({ outcome: 'completed' });
  }
});

test('every process serves its health and Prometheus metrics', async () => {
  for (const [name, service] of processes) {
    expect([name, (await fetch(`${service.url}/health/live`)).status]).toEqual([name, 200]);
    expect([name, (await fetch(`${service.url}/health/ready`)).status]).toEqual([name, 200]);
    const { contentType, exposition } = await scrape(metricsUrlOf(service));
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(exposition.types.process_cpu_user_seconds_total).toBe('counter');
    expect(exposition.types.nodejs_eventloop_lag_seconds).toBe('gauge');
  }
  const gatewayMetrics = (await scrape(metricsUrlOf(gateway))).exposition;
  // Not on the public port: metrics are for the operator's scraper only (docs/operations.md).
  expect((await fetch(`${gateway.url}/metrics`)).status).toBe(404);
  expect(
    sampleValue(gatewayMetrics, 'teamchat_gateway_requests_total', {
      upstream: 'users',
      route: '/api/v1/users(/.*)?',
      method: 'GET',
      status: '200',
    }),
  ).toBeGreaterThanOrEqual(1);
  expect(
    sampleValue(gatewayMetrics, 'teamchat_gateway_requests_total', {
      upstream: 'none',
      route: 'unmatched',
      status: '404',
    }),
  ).toBeUndefined();
  expect(
    sampleValue(gatewayMetrics, 'teamchat_gateway_request_duration_seconds_count', {
      upstream: 'users',
      method: 'GET',
    }),
  ).toBeGreaterThanOrEqual(1);
  const usersMetrics = (await scrape(metricsUrlOf(processes.get('users')!))).exposition;
  expect(
    sampleValue(usersMetrics, 'teamchat_http_requests_total', {
      service: 'users',
      method: 'GET',
      route: '/api/v1/users/me',
      status: '200',
    }),
  ).toBeGreaterThanOrEqual(1);
  expect(
    sampleValue(usersMetrics, 'teamchat_http_request_duration_seconds_bucket', {
      service: 'users',
      route: '/api/v1/users/me',
      le: '+Inf',
    }),
  ).toBeGreaterThanOrEqual(1);
  // Probes and scrapes are neither counted nor traced.
  expect(
    usersMetrics.samples.some(
      (sample) => sample.name === 'teamchat_http_requests_total' && sample.labels.route === '/metrics',
    ),
  ).toBe(false);
  expect(receiver.spans.some((span) => String(span.attributes['url.path']).startsWith('/health/'))).toBe(false);
});

test('SIGTERM while requests are in flight: every request is answered, nothing is lost, every process exits 0', async () => {
  const apiKeysBefore = await deps.db.apiKey.count();
  const messagesBefore = await deps.db.message.count();

  /** Stops `names` together, each in the middle of its in-flight requests; all must be answered. */
  async function stopDuringRequests(names: string[]): Promise<void> {
    const pending: { name: string; request: SlowRequest }[] = [];
    for (const name of names) {
      const recipe = IN_FLIGHT[name];
      if (!recipe) continue;
      await recipe.prepare?.(context);
      for (let n = 0; n < recipe.count; n++) pending.push({ name, request: recipe.open(gatewayUrl, context, n) });
      const service = processes.get(name)!;
      await waitFor(
        async () => (await inFlight(service, 'teamchat_http_requests_in_flight', { service: name })) >= recipe.count,
        {
          intervalMs: 100,
          what: () =>
            `${recipe.count} requests in flight at ${name}\n${name} log:\n${service.tail()}\ngateway log:\n${gateway.tail(10)}`,
        },
      );
      // The event tier's autoscaling signal counts the same parked polls.
      if (name === 'events')
        expect(await inFlight(service, 'teamchat_event_parked_polls', {})).toBeGreaterThanOrEqual(recipe.count);
    }
    if (names.includes('gateway')) {
      const expected = pending.length;
      await waitFor(
        async () => {
          const { exposition } = await scrape(metricsUrlOf(gateway));
          const total = exposition.samples
            .filter((sample) => sample.name === 'teamchat_gateway_requests_in_flight')
            .reduce((sum, sample) => sum + sample.value, 0);
          return total >= expected;
        },
        { intervalMs: 100, what: `${expected} requests in flight at the gateway` },
      );
    }
    const stopping = names.map((name) => processes.get(name)!);
    const exits = stopping.map((service) => service.stop('SIGTERM'));
    await Promise.all(
      stopping.map((service) => service.waitForLog((line) => line.msg === `${service.name} shutting down`)),
    );
    for (const { request } of pending) request.finish();
    for (const { name, request } of pending) {
      const answer = await request.response;
      expect([name, answer.status]).toEqual([name, 200]);
      IN_FLIGHT[name].check(answer.body);
    }
    const codes = await Promise.all(exits);
    for (const [index, service] of stopping.entries()) {
      expect([service.name, codes[index]]).toEqual([service.name, { code: 0, signal: null }]);
      await service.waitForLog((line) => line.msg === `${service.name} stopped`);
    }
  }

  // The services behind the gateway one by one (users last: the gateway needs it to log in)...
  for (const { name } of BACKENDS) {
    if (name === 'users' || name === 'worker') continue;
    await stopDuringRequests([name]);
  }
  // ...then the gateway together with users, in the middle of requests through both...
  await stopDuringRequests(['gateway', 'users']);
  // ...and the worker, which finishes the jobs it holds.
  if (processes.has('worker')) await stopDuringRequests(['worker']);

  // Nothing lost: every answered login issued its key; every answered message was stored.
  expect(await deps.db.apiKey.count()).toBe(apiKeysBefore + IN_FLIGHT.users.count);
  if (processes.has('messages')) expect(await deps.db.message.count()).toBe(messagesBefore + IN_FLIGHT.messages.count);
  // And the spans of the last requests were flushed before each process exited.
  const lastLogin = processes
    .get('users')!
    .logs.filter((line) => line.msg === 'request' && line.route === '/api/v1/fetch_api_key')
    .at(-1)!;
  expect(
    receiver
      .trace(String(lastLogin.trace_id))
      .some((span) => span.serviceName === 'users' && span.kind === SpanKind.SERVER),
  ).toBe(true);
});
