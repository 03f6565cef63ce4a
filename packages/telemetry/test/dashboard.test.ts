// The operator's Grafana dashboard (infra/grafana/dashboards/teamchat.json) against the running
// system: every PromQL query of every panel is taken apart and each metric it names must be on
// the /metrics of a process of a real stack (every built service as its own process, as
// deployed, on a private PostgreSQL primary with a streaming standby and the test Redis), after
// the traffic an operator would see. Also how docker-compose's observability profile provisions
// it, and that it imports anywhere (its Prometheus is a variable).

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { Role } from '@teamchat/domain';
import { createBaseDeps, type BaseDeps } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import { ApiClient, StreamingReplica, testRedisTarget, waitFor } from '@teamchat/testing';
import { databaseMetrics, eventTierMetrics, gatewayMetrics, httpServerMetrics, jobMetrics } from '@teamchat/telemetry';
import {
  builtServices,
  freePort,
  repoRoot,
  type ServiceProcess,
  stackAddresses,
  stackServices,
  startServiceProcess,
} from './support/processes';
import { sampleValue, scrape, type Exposition } from './support/prometheus';

jest.setTimeout(300_000);

const DASHBOARD_FILE = 'infra/grafana/dashboards/teamchat.json';
const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');

interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; datasource?: { type: string; uid: string } }[];
  panels?: Panel[];
}
const dashboard = JSON.parse(read(DASHBOARD_FILE)) as { panels: Panel[]; templating: { list: any[] }; uid: string };
const panels = dashboard.panels
  .flatMap((panel) => [panel, ...(panel.panels ?? [])])
  .filter((panel) => panel.type !== 'row');

/** PromQL's functions and aggregation operators (Prometheus 3), the only names a query may call. */
const PROMQL_FUNCTIONS = new Set(
  (
    'abs absent absent_over_time avg avg_over_time bottomk ceil changes clamp clamp_max clamp_min count count_over_time ' +
    'count_values day_of_month day_of_week day_of_year days_in_month delta deriv exp floor group histogram_avg ' +
    'histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters ' +
    'hour idelta increase irate label_join label_replace last_over_time limitk limit_ratio ln log10 log2 mad_over_time ' +
    'max max_over_time min min_over_time minute month predict_linear present_over_time quantile quantile_over_time rate ' +
    'resets round scalar sgn sort sort_by_label sort_by_label_desc sort_desc sqrt stddev stddev_over_time stdvar ' +
    'stdvar_over_time sum sum_over_time time timestamp topk vector year'
  ).split(' '),
);
const PROMQL_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects, and the functions it calls. String literals,
 * label matchers, ranges and grouping clauses are removed first; what is left is identifiers
 * (a name followed by "(" is a call), numbers and operators.
 */
function promqlNames(expr: string): { metrics: string[]; functions: string[] } {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const metrics: string[] = [];
  const functions: string[] = [];
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const name = match[0];
    const before = stripped[match.index - 1];
    // Part of a number (1e3) or a duration: not a name.
    if (before !== undefined && /[0-9.]/.test(before)) continue;
    if (PROMQL_KEYWORDS.has(name.toLowerCase())) continue;
    if (/^\s*\(/.test(stripped.slice(match.index + name.length))) functions.push(name);
    else metrics.push(name);
  }
  return { metrics, functions };
}

const queries = panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
);
const namedOnDashboard = new Set(queries.flatMap(({ expr }) => promqlNames(expr).metrics));
/** The name a metric is exported under (prom-client keeps it on the metric). */
const metricName = (metric: object) => (metric as { name: string }).name;

test('the PromQL reader finds metric names and calls, and nothing else', () => {
  expect(
    promqlNames(
      'histogram_quantile(0.95, sum by (le, upstream) (rate(teamchat_gateway_request_duration_seconds_bucket{route!="/api/v1/events"}[$__rate_interval]))) > 1e3',
    ),
  ).toEqual({
    metrics: ['teamchat_gateway_request_duration_seconds_bucket'],
    functions: ['histogram_quantile', 'sum', 'rate'],
  });
  expect(
    promqlNames('count(sum by (partition) (a_b) != 1) or vector(0) / on (instance) group_left c offset 5m'),
  ).toEqual({
    metrics: ['a_b', 'c'],
    functions: ['count', 'sum', 'vector'],
  });
});

test("every panel has a query, against the dashboard's Prometheus variable, calling only PromQL functions", () => {
  expect(panels.length).toBeGreaterThan(20);
  const variable = dashboard.templating.list.find((entry) => entry.type === 'datasource');
  expect(variable).toMatchObject({ name: 'datasource', query: 'prometheus' });
  for (const panel of panels) {
    expect([panel.title, panel.targets?.length ?? 0]).not.toEqual([panel.title, 0]);
    expect([panel.title, panel.datasource]).toEqual([panel.title, { type: 'prometheus', uid: '${datasource}' }]);
    for (const target of panel.targets!) {
      expect([panel.title, target.datasource]).toEqual([panel.title, { type: 'prometheus', uid: '${datasource}' }]);
      const { functions } = promqlNames(target.expr);
      expect([panel.title, functions.filter((name) => !PROMQL_FUNCTIONS.has(name))]).toEqual([panel.title, []]);
    }
  }
});

test('the dashboard shows what an operator scaling the tiers watches', () => {
  const gateway = gatewayMetrics();
  const http = httpServerMetrics();
  const events = eventTierMetrics();
  const jobs = jobMetrics();
  const database = databaseMetrics();
  const histogram = (metric: object) => `${metricName(metric)}_bucket`;
  const watched = [
    // requests, errors and latency per service
    metricName(gateway.requests),
    histogram(gateway.duration),
    metricName(http.requests),
    histogram(http.duration),
    // parked polls and deliveries per event replica, fan-out lag, partition owners and handovers
    metricName(events.parkedPolls),
    metricName(events.deliveries),
    histogram(events.fanoutLag),
    metricName(events.partitionOwned),
    metricName(events.leaseHandovers),
    // outbox backlog, BullMQ queue depth, Redis memory, PostgreSQL replica lag
    metricName(events.outboxBacklog),
    metricName(jobs.jobs),
    metricName(events.redisMemoryUsedBytes),
    metricName(database.replicaLagSeconds),
  ];
  expect(watched.filter((name) => !namedOnDashboard.has(name))).toEqual([]);
});

describe("docker-compose's observability profile", () => {
  const compose = YAML.parse(read('docker-compose.yml'), { merge: true });

  test('provisions Grafana with the dashboard and the Prometheus beside it', () => {
    const grafana = compose.services.grafana;
    expect(grafana.profiles).toEqual(['observability']);
    expect(grafana.image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    const mounts = Object.fromEntries(
      (grafana.volumes as string[])
        .filter((volume) => volume.startsWith('./'))
        .map((volume) => volume.split(':').slice(0, 2).reverse()),
    );
    expect(mounts['/etc/grafana/provisioning']).toBe('./infra/grafana/provisioning');
    const dashboards = mounts['/etc/grafana/dashboards'];
    expect(fs.existsSync(path.join(repoRoot, dashboards, path.basename(DASHBOARD_FILE)))).toBe(true);
    const provider = YAML.parse(read('infra/grafana/provisioning/dashboards/teamchat.yaml')).providers[0];
    expect(provider).toMatchObject({ type: 'file', options: { path: '/etc/grafana/dashboards' } });
    const [datasource] = YAML.parse(read('infra/grafana/provisioning/datasources/prometheus.yaml')).datasources;
    expect(datasource).toMatchObject({ type: 'prometheus', isDefault: true });
    const prometheusPort = /^(\d+):/.exec(compose.services.prometheus.ports[0])![1];
    expect(datasource.url).toBe(`http://prometheus:${prometheusPort}`);
    expect(grafana.depends_on.prometheus).toBeDefined();
  });
});

describe('against a running stack', () => {
  const { services: STACK } = stackServices();
  const BUILT = new Set(builtServices());
  const BACKENDS = STACK.filter((service) => BUILT.has(service.name));
  const PARTITIONS = 4;
  const processes: ServiceProcess[] = [];
  const metricsUrls = new Map<ServiceProcess, string>();
  let postgres: StreamingReplica;
  let deps: BaseDeps;
  let client: ApiClient;
  let uploadsDir: string;

  async function start(name: string, env: NodeJS.ProcessEnv, ports: Map<string, number>): Promise<ServiceProcess> {
    const metricsPort = await freePort();
    const started = await startServiceProcess(name, {
      ...env,
      PORT: String(ports.get(name) ?? (await freePort())),
      METRICS_PORT: String(metricsPort),
    });
    processes.push(started);
    metricsUrls.set(started, `http://127.0.0.1:${metricsPort}`);
    return started;
  }

  const scrapeAll = async () =>
    Promise.all(processes.map(async (process) => ({ process, ...(await scrape(metricsUrls.get(process)!)) })));

  beforeAll(async () => {
    expect(BUILT.has('gateway')).toBe(true);
    postgres = await StreamingReplica.start();
    const databaseUrl = await postgres.createDatabase('teamchat_dashboard');
    const redisPrefix = `t:${crypto.randomBytes(6).toString('hex')}:`;
    const secret = crypto.randomBytes(24).toString('hex');
    const { ports, urlVars } = await stackAddresses(BACKENDS);
    uploadsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-dashboard-'));
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      UPLOADS_LOCAL_DIR: uploadsDir,
      DATABASE_URL: databaseUrl,
      ...testRedisTarget(),
      REDIS_PREFIX: redisPrefix,
      INTERNAL_JWT_SECRET: secret,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DB_POOL_SIZE: '3',
      EVENT_PARTITIONS: String(PARTITIONS),
      // Short leases: the second event replica takes its share of the partitions within seconds.
      EVENTS_LEASE_MS: '1000',
      ...urlVars,
    };
    await Promise.all(BACKENDS.map((service) => start(service.name, env, ports)));
    // A second event replica (behind no balancer: it only consumes partitions here).
    if (BUILT.has('events')) await start('events', { ...env, EVENTS_REPLICA_ID: 'dashboard-events-2' }, new Map());
    await start('gateway', env, ports);

    deps = createBaseDeps('dashboard-test', {
      DATABASE_URL: databaseUrl,
      ...testRedisTarget(),
      REDIS_PREFIX: redisPrefix,
      INTERNAL_JWT_SECRET: secret,
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      EXTERNAL_SCHEME: 'http',
      EVENT_PARTITIONS: PARTITIONS,
      DB_POOL_SIZE: 2,
    });
    const gatewayUrl = `http://127.0.0.1:${ports.get('gateway')}`;
    const host = new URL(gatewayUrl).host;
    const realm = await doCreateRealm(deps.db, { stringId: '', name: 'Dashboard', host });
    const created = await doCreateUser(deps, realm, {
      email: 'operator@example.com',
      fullName: 'Operator',
      role: Role.OWNER,
      password: 'dashboard-password',
    });
    client = new ApiClient(gatewayUrl, { email: created.user.delivery_email, apiKey: created.apiKey });

    // What an operator's stack does: a client registers and polls, a message is sent and
    // delivered, a job runs.
    const registered = await client.post('/api/v1/register', { event_types: JSON.stringify(['message']) });
    expect(registered.status).toBe(200);
    const { queue_id: queueId, last_event_id: lastEventId } = registered.body;
    const empty = await client.get('/api/v1/events', {
      queue_id: queueId,
      last_event_id: lastEventId,
      dont_block: 'true',
    });
    expect(empty.body.events).toEqual([]);
    const sent = await client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([created.user.id]),
      content: 'watched on the dashboard',
    });
    expect(sent.status).toBe(200);
    const polled = await client.get('/api/v1/events', { queue_id: queueId, last_event_id: lastEventId });
    expect(polled.body.events.map((event: { type: string }) => event.type)).toContain('message');
    if (BUILT.has('worker')) expect((await client.post('/api/v1/mark_all_as_read')).status).toBe(200);
  });

  afterAll(async () => {
    for (const service of processes) if (service.running) await service.stop('SIGKILL');
    await deps?.close();
    await postgres?.stop();
    if (uploadsDir) fs.rmSync(uploadsDir, { recursive: true, force: true });
  });

  test('every metric a panel names is on the /metrics of a running process (and a misspelt one is not)', async () => {
    const suffixes: Record<string, string[]> = {
      histogram: ['_bucket', '_sum', '_count'],
      summary: ['_sum', '_count'],
    };
    const exported = new Set<string>();
    for (const { exposition } of await scrapeAll())
      for (const [name, type] of Object.entries(exposition.types))
        for (const suffix of ['', ...(suffixes[type] ?? [])]) exported.add(name + suffix);
    const unknown = queries.flatMap(({ panel, expr }) =>
      promqlNames(expr)
        .metrics.filter((name) => !exported.has(name))
        .map((name) => `${panel}: ${name}`),
    );
    expect(unknown).toEqual([]);
    expect(exported.has('teamchat_event_parked_poll')).toBe(false);
    expect(exported.has('teamchat_event_parked_polls')).toBe(true);
  });

  test('poll answers are counted per replica by what they carried', async () => {
    const answers = (exposition: Exposition, answer: string) =>
      sampleValue(exposition, metricName(eventTierMetrics().deliveries), { answer }) ?? 0;
    const events = (await scrapeAll()).filter(({ process }) => process.name === 'events');
    expect(events.reduce((total, { exposition }) => total + answers(exposition, 'events'), 0)).toBeGreaterThanOrEqual(
      1,
    );
    expect(events.reduce((total, { exposition }) => total + answers(exposition, 'empty'), 0)).toBeGreaterThanOrEqual(1);
  });

  test('every intake partition has exactly one owner across the event replicas', async () => {
    const name = metricName(eventTierMetrics().partitionOwned);
    const owners = await waitFor(
      async () => {
        const replicas = (await scrapeAll()).filter(({ process }) => process.name === 'events');
        const perPartition = [...Array(PARTITIONS).keys()].map((partition) =>
          replicas.map(({ exposition }) => sampleValue(exposition, name, { partition: String(partition) }) ?? 0),
        );
        const settled =
          perPartition.every((values) => values.reduce((a, b) => a + b, 0) === 1) &&
          replicas.every((_, replica) => perPartition.some((values) => values[replica] === 1));
        return settled ? perPartition : undefined;
      },
      { intervalMs: 200, what: 'one owner per partition on both replicas' },
    );
    expect(owners).toHaveLength(PARTITIONS);
  });

  test('PostgreSQL replica lag: the standby streaming from the primary is reported', async () => {
    const { replicas, replicaLagSeconds, replicaLagBytes } = databaseMetrics();
    const [events] = (await scrapeAll()).filter(({ process }) => process.name === 'events');
    const exposition = events.exposition;
    expect(sampleValue(exposition, metricName(replicas))).toBe(1);
    const labels = { replica: StreamingReplica.STANDBY_NAME };
    expect(sampleValue(exposition, metricName(replicaLagSeconds), labels)).toBeGreaterThanOrEqual(0);
    expect(sampleValue(exposition, metricName(replicaLagBytes), labels)).toBeGreaterThanOrEqual(0);
  });
});
