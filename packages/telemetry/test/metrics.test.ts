// Metrics in one process: the registry services add their own metrics to, the request metrics
// and log line of every service app (createServiceApp), and the process endpoints every served
// process has (serve(): /metrics on an admin port of its own, readiness off while stopping).

import http from 'node:http';
import { Writable } from 'node:stream';
import { createLogger, createServiceApp, JsonableError, signInternalToken, type Route } from '@teamchat/core';
import { listen, listenMetrics, metricsPortFor, serverUrl, withProcessEndpoints } from '@teamchat/runtime';
import {
  counter,
  DeferredCounts,
  eventTierMetrics,
  gauge,
  histogram,
  onScrape,
  renderMetrics,
} from '@teamchat/telemetry';
import { waitFor } from '@teamchat/testing';
import { parseExposition, sampleValue } from './support/prometheus';

const SECRET = 'metrics-test-secret';

async function exposition() {
  return parseExposition((await renderMetrics()).body);
}

describe('the metrics registry', () => {
  test('a metric is defined once per process: defining it again returns it; a conflicting definition is refused', async () => {
    const first = counter({ name: 'teamchat_test_widgets_total', help: 'widgets', labelNames: ['colour'] });
    const again = counter({ name: 'teamchat_test_widgets_total', help: 'widgets', labelNames: ['colour'] });
    expect(again).toBe(first);
    first.inc({ colour: 'blue' }, 2);
    expect(sampleValue(await exposition(), 'teamchat_test_widgets_total', { colour: 'blue' })).toBe(2);
    expect(() => gauge({ name: 'teamchat_test_widgets_total', help: 'widgets', labelNames: ['colour'] })).toThrow(
      /already defined as a counter/,
    );
    expect(() => counter({ name: 'teamchat_test_widgets_total', help: 'widgets', labelNames: ['shape'] })).toThrow(
      /labels \[colour\]/,
    );
  });

  test('scrape hooks refresh gauges before every scrape; a failing hook is counted and the scrape still answers', async () => {
    const queueDepth = gauge({ name: 'teamchat_test_queue_depth', help: 'depth' });
    let depth = 3;
    const remove = onScrape(() => queueDepth.set(depth));
    const removeFailing = onScrape(async () => {
      throw new Error('redis is down');
    });
    const failuresBefore = sampleValue(await exposition(), 'teamchat_metrics_scrape_hook_failures_total') ?? 0;
    expect(sampleValue(await exposition(), 'teamchat_test_queue_depth')).toBe(3);
    depth = 5;
    const after = await exposition();
    expect(sampleValue(after, 'teamchat_test_queue_depth')).toBe(5);
    expect(sampleValue(after, 'teamchat_metrics_scrape_hook_failures_total')).toBe(failuresBefore + 2);
    remove();
    removeFailing();
    depth = 9;
    expect(sampleValue(await exposition(), 'teamchat_test_queue_depth')).toBe(5);
  });

  test('the event tier metrics have the names its autoscaler and alerts use', async () => {
    const metrics = eventTierMetrics();
    metrics.parkedPolls.inc();
    metrics.eventsFannedOut.inc(4);
    metrics.fanoutLag.observe(0.02);
    const scraped = await exposition();
    expect(scraped.types).toMatchObject({
      teamchat_event_parked_polls: 'gauge',
      teamchat_events_fanned_out_total: 'counter',
      teamchat_event_fanout_lag_seconds: 'histogram',
    });
    expect(sampleValue(scraped, 'teamchat_event_parked_polls')).toBe(1);
    expect(sampleValue(scraped, 'teamchat_events_fanned_out_total')).toBe(4);
    expect(sampleValue(scraped, 'teamchat_event_fanout_lag_seconds_bucket', { le: '0.025' })).toBe(1);
    metrics.parkedPolls.dec();
  });

  test('deferred counts reach their counter and gauge at the next scrape, a gauge that went up and down as 0', async () => {
    const served = counter({ name: 'teamchat_test_served_total', help: 'served', labelNames: ['kind'] });
    const busy = gauge({ name: 'teamchat_test_busy', help: 'busy', labelNames: ['kind'] });
    const servedCounts = new DeferredCounts(served);
    const busyCounts = new DeferredCounts(busy);
    for (let i = 0; i < 3; i++) servedCounts.add('a', () => ({ kind: 'a' }));
    servedCounts.add('b', () => ({ kind: 'b' }), 5);
    busyCounts.add('a', () => ({ kind: 'a' }), 1);
    busyCounts.add('a', () => ({ kind: 'a' }), -1);
    busyCounts.add('b', () => ({ kind: 'b' }), 2);
    let scraped = await exposition();
    expect(sampleValue(scraped, 'teamchat_test_served_total', { kind: 'a' })).toBe(3);
    expect(sampleValue(scraped, 'teamchat_test_served_total', { kind: 'b' })).toBe(5);
    expect(sampleValue(scraped, 'teamchat_test_busy', { kind: 'a' })).toBe(0);
    expect(sampleValue(scraped, 'teamchat_test_busy', { kind: 'b' })).toBe(2);

    servedCounts.add('a', () => ({ kind: 'a' }));
    busyCounts.add('b', () => ({ kind: 'b' }), -2);
    scraped = await exposition();
    expect(sampleValue(scraped, 'teamchat_test_served_total', { kind: 'a' })).toBe(4);
    expect(sampleValue(scraped, 'teamchat_test_served_total', { kind: 'b' })).toBe(5);
    expect(sampleValue(scraped, 'teamchat_test_busy', { kind: 'b' })).toBe(0);
  });

  test('histograms take their own buckets', async () => {
    histogram({ name: 'teamchat_test_batch_seconds', help: 'batches', buckets: [1, 2] }).observe(1.5);
    const scraped = await exposition();
    expect(sampleValue(scraped, 'teamchat_test_batch_seconds_bucket', { le: '1' })).toBe(0);
    expect(sampleValue(scraped, 'teamchat_test_batch_seconds_bucket', { le: '2' })).toBe(1);
  });
});

/** The process's admin listener (serve() starts one next to every service), on a free port. */
async function startMetricsListener(): Promise<{ server: http.Server; url: string }> {
  const server = (await listenMetrics(0, '127.0.0.1', createLogger('metrics-test', 'silent')))!;
  return { server, url: serverUrl(server) };
}

async function stop(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

describe('a service app (createServiceApp)', () => {
  const logLines: Record<string, any>[] = [];
  let server: http.Server;
  let url: string;
  let metrics: { server: http.Server; url: string };

  const routes: Route<object>[] = [
    {
      method: 'GET',
      path: '/api/v1/widgets/:widget_id',
      view: (ctx) => ({ widget: Number(ctx.req.params.widget_id) }),
    },
    {
      method: 'POST',
      path: '/api/v1/widgets',
      view: () => {
        throw new JsonableError('Invalid widget');
      },
    },
  ];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
        done();
      },
    });
    const app = createServiceApp({
      name: 'widgets',
      routes,
      deps: {},
      internalSecret: SECRET,
      logger: createLogger('widgets', 'info', destination),
    });
    server = await listen(app, 0, '127.0.0.1');
    url = serverUrl(server);
    metrics = await startMetricsListener();
  });

  afterAll(async () => {
    await stop(server);
    await stop(metrics.server);
  });

  function call(method: string, path: string, requestId: string) {
    const token = signInternalToken(SECRET, {
      user: { userId: 11, realmId: 2, role: 400, email: 'user11@example.com', isBot: false },
      realmId: 2,
      method,
      path,
    });
    return fetch(`${url}${path}`, {
      method,
      headers: { 'x-teamchat-internal-token': token, 'x-request-id': requestId },
    });
  }

  test('every request is counted and timed by route template and status, and logged once with its request id', async () => {
    expect((await call('GET', '/api/v1/widgets/42', 'req-widget-1')).status).toBe(200);
    expect((await call('GET', '/api/v1/widgets/43', 'req-widget-2')).status).toBe(200);
    expect((await call('POST', '/api/v1/widgets', 'req-widget-3')).status).toBe(400);
    expect((await call('GET', '/api/v1/nothing-here', 'req-widget-4')).status).toBe(404);

    const scraped = parseExposition(await (await fetch(`${metrics.url}/metrics`)).text());
    expect(
      sampleValue(scraped, 'teamchat_http_requests_total', {
        service: 'widgets',
        method: 'GET',
        route: '/api/v1/widgets/:widget_id',
        status: '200',
      }),
    ).toBe(2);
    expect(
      sampleValue(scraped, 'teamchat_http_requests_total', {
        service: 'widgets',
        method: 'POST',
        route: '/api/v1/widgets',
        status: '400',
      }),
    ).toBe(1);
    expect(
      sampleValue(scraped, 'teamchat_http_requests_total', {
        service: 'widgets',
        method: 'GET',
        route: 'unmatched',
        status: '404',
      }),
    ).toBe(1);
    expect(
      sampleValue(scraped, 'teamchat_http_request_duration_seconds_count', {
        service: 'widgets',
        method: 'GET',
        route: '/api/v1/widgets/:widget_id',
      }),
    ).toBe(2);
    expect(sampleValue(scraped, 'teamchat_http_requests_in_flight', { service: 'widgets' })).toBe(0);

    const requestLines = logLines.filter((line) => line.msg === 'request');
    expect(requestLines.map((line) => [line.request_id, line.route, line.status, line.user_id, line.realm_id])).toEqual(
      [
        ['req-widget-1', '/api/v1/widgets/:widget_id', 200, 11, 2],
        ['req-widget-2', '/api/v1/widgets/:widget_id', 200, 11, 2],
        ['req-widget-3', '/api/v1/widgets', 400, 11, 2],
        ['req-widget-4', 'unmatched', 404, undefined, undefined],
      ],
    );
    expect(requestLines[0]).toMatchObject({
      service: 'widgets',
      method: 'GET',
      path: '/api/v1/widgets/42',
      ms: expect.any(Number),
    });
  });

  test('probes and scrapes are neither counted nor logged; the service port does not serve /metrics', async () => {
    const before = logLines.length;
    expect((await fetch(`${url}/health/live`)).status).toBe(200);
    expect((await fetch(`${url}/health/ready`)).status).toBe(200);
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    const response = await fetch(`${metrics.url}/metrics`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const scraped = parseExposition(await response.text());
    expect(
      scraped.samples.some(
        (sample) => sample.name === 'teamchat_http_requests_total' && /health|metrics/.test(sample.labels.route),
      ),
    ).toBe(false);
    expect(logLines.length).toBe(before);
  });

  test('a request the client abandons is logged and counted with status 499', async () => {
    const { port } = server.address() as { port: number };
    const token = signInternalToken(SECRET, {
      user: { userId: 11, realmId: 2, role: 400, email: 'user11@example.com', isBot: false },
      realmId: 2,
      method: 'POST',
      path: '/api/v1/widgets',
    });
    // Headers and part of the announced body, then the client hangs up.
    const abandoned = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/v1/widgets',
      headers: {
        'content-length': '100',
        'content-type': 'application/x-www-form-urlencoded',
        'x-request-id': 'req-abandoned',
        'x-teamchat-internal-token': token,
      },
    });
    abandoned.on('error', () => undefined);
    abandoned.write('name=');
    await waitFor(
      async () =>
        sampleValue(
          parseExposition(await (await fetch(`${metrics.url}/metrics`)).text()),
          'teamchat_http_requests_in_flight',
          { service: 'widgets' },
        ) === 1,
    );
    abandoned.destroy();
    await waitFor(() => logLines.some((line) => line.request_id === 'req-abandoned'));
    expect(logLines.find((line) => line.request_id === 'req-abandoned')).toMatchObject({
      status: 499,
      route: '/api/v1/widgets',
    });
    const scraped = parseExposition(await (await fetch(`${metrics.url}/metrics`)).text());
    expect(
      sampleValue(scraped, 'teamchat_http_requests_total', {
        service: 'widgets',
        route: '/api/v1/widgets',
        status: '499',
      }),
    ).toBe(1);
    expect(sampleValue(scraped, 'teamchat_http_requests_in_flight', { service: 'widgets' })).toBe(0);
  });
});

describe('the process endpoints (serve)', () => {
  test('/metrics is served on the admin listener only; once stopping, readiness fails and connections close after each response', async () => {
    const state = { stopping: false };
    const handler: http.RequestListener = (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ path: req.url }));
    };
    const server = await listen(withProcessEndpoints(handler, state), 0, '127.0.0.1');
    const url = serverUrl(server);
    const metrics = await startMetricsListener();
    try {
      counter({ name: 'teamchat_test_plain_handler_total', help: 'x' }).inc();
      // The service's own port passes /metrics to its handler like any other path.
      expect(await (await fetch(`${url}/metrics`)).json()).toEqual({ path: '/metrics' });
      const scraped = await fetch(`${metrics.url}/metrics`);
      expect(scraped.status).toBe(200);
      expect(sampleValue(parseExposition(await scraped.text()), 'teamchat_test_plain_handler_total')).toBe(1);
      // The admin listener serves nothing else.
      expect((await fetch(`${metrics.url}/api/v1/users/me`)).status).toBe(404);
      expect(await (await fetch(`${url}/health/ready`)).json()).toEqual({ path: '/health/ready' });

      state.stopping = true;
      const ready = await fetch(`${url}/health/ready`);
      expect([ready.status, await ready.json(), ready.headers.get('connection')]).toEqual([
        503,
        { status: 'stopping' },
        'close',
      ]);
      const other = await fetch(`${url}/api/v1/anything`);
      expect([other.status, other.headers.get('connection')]).toEqual([200, 'close']);
      expect((await fetch(`${metrics.url}/metrics`)).status).toBe(200);
    } finally {
      await stop(server);
      await stop(metrics.server);
    }
  });

  test('the admin port: METRICS_PORT, by default the service port + 1000; a port already taken is not fatal', async () => {
    expect([9101, 9105, 9106, 0].map(metricsPortFor)).toEqual([10101, 10105, 10106, 0]);
    const first = await startMetricsListener();
    const { port } = first.server.address() as { port: number };
    const errors: string[] = [];
    const logger = createLogger('metrics-test', 'silent');
    logger.error = ((_obj: unknown, msg: string) => errors.push(msg)) as typeof logger.error;
    expect(await listenMetrics(port, '127.0.0.1', logger)).toBeUndefined();
    expect(errors).toEqual(['metrics listener failed to start; /metrics is not served']);
    await stop(first.server);
  });
});
