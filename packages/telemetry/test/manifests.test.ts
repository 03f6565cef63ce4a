// The deployment descriptions, checked without Docker or a cluster: docker-compose.yml against
// the Compose specification's schema, the kustomize overlays rendered and checked against the
// Kubernetes API schemas, infra/Dockerfile's shape, and the wiring between all of them and the
// services themselves (names, ports, variables, probes, resources, autoscaling signals).

import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import YAML from 'yaml';
import { metricsPortFor } from '@teamchat/runtime';
import {
  eventTierMetrics,
  gatewayMetrics,
  httpServerMetrics,
  jobMetrics,
  onScrape,
  renderMetrics,
} from '@teamchat/telemetry';
import { parseExposition } from './support/prometheus';
import {
  containersOf,
  ingressRoutes,
  podTemplate,
  readYamlDocuments,
  renderKustomization,
  resourceId,
  strategicMerge,
  type Resource,
} from './support/kustomize';
import { schemaErrors, unknownFieldErrors } from './support/kubernetes-schema';
import { repoRoot, stackServices } from './support/processes';
import {
  defaultPort,
  isPlatformVariable,
  REQUIRED_VARIABLES,
  serviceFolders,
  variablesReadBy,
} from './support/service-config';

jest.setTimeout(60_000);

const { gatewayPort, gatewayNodeOptions, services: STACK } = stackServices();
/** Every process of the stack with its port and node's options: scripts/lib/services.mjs plus the gateway. */
const PROCESSES = [
  { name: 'gateway', port: gatewayPort, nodeOptions: gatewayNodeOptions as string | undefined },
  ...STACK.map(({ name, port, nodeOptions }) => ({ name, port, nodeOptions })),
];
const HTTP_BACKENDS = STACK.filter((service) => service.urlVar);
const LONG_POLL_SECONDS = 90;

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
/** The admin port serving /metrics: the gateway's METRICS_PORT default (its env.ts), PORT + 1000 for the others. */
const GATEWAY_METRICS_PORT = Number(
  /METRICS_PORT:\s*env\.int\(.*,\s*([\d_]+)\),?$/m.exec(read('services/gateway/src/env.ts'))![1].replaceAll('_', ''),
);
const metricsPortOf = ({ name, port }: { name: string; port: number }) =>
  name === 'gateway' ? GATEWAY_METRICS_PORT : metricsPortFor(port);
/** The name a metric is exported under (prom-client keeps it on the metric). */
const metricName = (metric: object) => (metric as { name: string }).name;

test('scripts/lib/services.mjs, the services and their env defaults agree on every process and port', () => {
  expect(PROCESSES.map((process) => process.name).sort()).toEqual(serviceFolders());
  for (const { name, port } of PROCESSES) expect([name, defaultPort(name)]).toEqual([name, port]);
});

describe('docker-compose.yml', () => {
  const compose = YAML.parse(read('docker-compose.yml'), { merge: true });
  const schema = JSON.parse(fs.readFileSync(path.join(__dirname, 'schemas/compose-spec.json'), 'utf8'));
  delete schema.$schema;
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

  test('is valid against the Compose specification (and the check catches a misspelt key)', () => {
    expect(validate(compose) ? [] : validate.errors).toEqual([]);
    const broken = structuredClone(compose);
    broken.services.users.healtcheck = broken.services.users.healthcheck;
    expect(validate(broken)).toBe(false);
  });

  test('every process is a service built from infra/Dockerfile, with a pinned image, its port, node options, probes and dependencies', () => {
    for (const { name, port, nodeOptions } of PROCESSES) {
      const service = compose.services[name];
      expect([name, service?.build]).toEqual([
        name,
        { context: '.', dockerfile: 'infra/Dockerfile', target: 'runtime', args: { SERVICE: name } },
      ]);
      expect(service.image).toBe(`teamchat/${name}:0.1.0`);
      expect([name, service.environment.PORT]).toEqual([name, String(port)]);
      expect([name, service.environment.NODE_OPTIONS]).toEqual([name, nodeOptions]);
      expect(service.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${port}/health/ready`);
      expect(service.depends_on).toMatchObject({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      });
      expect(service.read_only).toBe(true);
    }
    // Only the gateway is published, and only its API port: never an admin (/metrics) port.
    const published = Object.entries(compose.services)
      .filter(([, service]: [string, any]) => service.ports)
      .map(([name]) => name);
    expect(published.filter((name) => PROCESSES.some((process) => process.name === name))).toEqual(['gateway']);
    expect(compose.services.gateway.ports).toEqual(['${TEAMCHAT_PORT:-9991}:9991']);
    expect(GATEWAY_METRICS_PORT).toBe(9990);
    for (const { name } of HTTP_BACKENDS)
      expect(compose.services.gateway.depends_on[name]).toEqual({ condition: 'service_healthy' });
  });

  test('every variable a service is given is one it reads, the required ones are set, and service URLs point at the services', () => {
    for (const { name } of PROCESSES) {
      const environment = compose.services[name].environment as Record<string, string>;
      const known = variablesReadBy(name);
      const unknown = Object.keys(environment).filter(
        (variable) => !known.has(variable) && !isPlatformVariable(variable),
      );
      expect([name, unknown]).toEqual([name, []]);
      for (const variable of REQUIRED_VARIABLES)
        expect([name, variable, Boolean(environment[variable])]).toEqual([name, variable, true]);
      expect(environment.HOST).toBe('0.0.0.0');
      for (const backend of HTTP_BACKENDS)
        expect(environment[backend.urlVar!]).toBe(`http://${backend.name}:${backend.port}`);
      // Traces are exported only when the operator sets an endpoint.
      expect(environment.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    }
    expect(compose.services.uploads.environment).toMatchObject({
      UPLOADS_STORAGE: 's3',
      UPLOADS_S3_ENDPOINT: 'http://minio:9000',
      UPLOADS_S3_FORCE_PATH_STYLE: 'true',
    });
    expect(compose.services.uploads.depends_on['minio-setup']).toEqual({ condition: 'service_completed_successfully' });
  });

  test('the users service and the worker get the notification settings from .env; emails land on a writable absolute path; the mail profile catches them', () => {
    const notificationVariables = [...variablesReadBy('worker')].filter((name) =>
      /^(EMAIL_|PUSH_NOTIFICATION_(BOUNCER_URL|DELAY_MS)$|ZULIP_ORG_|NOREPLY_EMAIL_ADDRESS$)/.test(name),
    );
    expect(notificationVariables).toEqual(expect.arrayContaining(['EMAIL_HOST', 'EMAIL_LOG_DIR', 'ZULIP_ORG_KEY']));
    for (const name of ['users', 'worker']) {
      const service = compose.services[name];
      for (const variable of notificationVariables) {
        const value = service.environment[variable];
        // Passed through from .env (with the code's default), except the email folder.
        if (variable === 'EMAIL_LOG_DIR') continue;
        expect([name, variable, value]).toEqual([
          name,
          variable,
          expect.stringMatching(new RegExp(`^\\$\\{${variable}:-`)),
        ]);
      }
      // The root filesystem is read-only: the folder is absolute and on the service's tmpfs.
      const folder = service.environment.EMAIL_LOG_DIR as string;
      expect(service.read_only).toBe(true);
      expect(path.isAbsolute(folder)).toBe(true);
      expect([name, (service.tmpfs as string[]).some((mount) => folder.startsWith(`${mount}/`))]).toEqual([name, true]);
    }
    expect(compose.services.mailpit).toMatchObject({
      profiles: ['mail'],
      image: expect.stringMatching(/^axllent\/mailpit:v[\d.]+$/),
    });
    expect(compose.services.mailpit.ports).toEqual(['127.0.0.1:${MAILPIT_PORT:-8025}:8025']);
    expect(read('docker-compose.yml')).toContain('EMAIL_HOST=mailpit EMAIL_PORT=1025 EMAIL_USE_TLS=false');
  });

  test('data stores use the production configuration; the migration runs once before the services', () => {
    expect(compose.services.redis.volumes).toContain('./infra/redis/redis.conf:/usr/local/etc/redis/redis.conf:ro');
    const redisConf = read('infra/redis/redis.conf');
    expect(redisConf).toMatch(/^maxmemory-policy noeviction$/m);
    expect(redisConf).toMatch(/^appendonly yes$/m);
    expect(compose.services.postgres.command).toEqual([
      'postgres',
      '-c',
      'config_file=/etc/postgresql/postgresql.conf',
    ]);
    expect(compose.services.postgres.volumes).toContain(
      './infra/postgres/postgresql.conf:/etc/postgresql/postgresql.conf:ro',
    );
    expect(compose.services.migrate).toMatchObject({
      build: { target: 'migrate' },
      restart: 'no',
      depends_on: { postgres: { condition: 'service_healthy' } },
    });
    expect(compose.services.minio.image).toMatch(/^minio\/minio:RELEASE\./);
    for (const [name, service] of Object.entries(compose.services) as [string, any][]) {
      expect([name, service.image]).not.toEqual([name, expect.stringMatching(/:latest$|^[^:]+$/)]);
    }
  });

  test('stop grace periods cover the long-poll; the observability profile brings a collector, a trace viewer and Prometheus', () => {
    const seconds = (value: string) => Number(/^(\d+)s$/.exec(value)![1]);
    expect(seconds(compose.services.events.stop_grace_period)).toBeGreaterThan(LONG_POLL_SECONDS);
    expect(seconds(compose.services.gateway.stop_grace_period)).toBeGreaterThan(LONG_POLL_SECONDS);
    for (const name of ['otel-collector', 'jaeger', 'prometheus'])
      expect([name, compose.services[name].profiles]).toEqual([name, ['observability']]);
    const collector = YAML.parse(read('infra/otel-collector/config.yaml'));
    expect(collector.receivers.otlp.protocols.http.endpoint).toBe('0.0.0.0:4318');
    expect(collector.service.pipelines.traces.exporters).toEqual(['otlp/jaeger']);
    const prometheus = YAML.parse(read('infra/prometheus/prometheus.yml'));
    const targets = prometheus.scrape_configs[0].static_configs.map(
      (config: { targets: string[] }) => config.targets[0],
    );
    // Each process's admin port, where /metrics is served.
    expect(targets.sort()).toEqual(PROCESSES.map((process) => `${process.name}:${metricsPortOf(process)}`).sort());
  });
});

describe('infra/Dockerfile', () => {
  const dockerfile = read('infra/Dockerfile');
  const instructions = dockerfile
    .replace(/\s*\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stages = instructions.filter((line) => line.startsWith('FROM ')).map((line) => line.split(/\s+/).at(-1));

  test('one multi-stage file builds any service (named by a build argument) and the migration image', () => {
    expect(stages).toEqual([
      'workspace',
      'build',
      'production-dependencies',
      'migrate-dependencies',
      'migrate',
      'runtime',
    ]);
    expect(instructions).toContain('ARG SERVICE');
    expect(instructions).toContain('RUN node scripts/build.mjs "$SERVICE"');
    // The base image is pinned to an exact release of a Node.js LTS line still supported (20
    // ended in April 2026: 22 or 24), which package.json's engines allow.
    const nodeImage = /^ARG NODE_IMAGE=node:(\d+)\.(\d+)\.(\d+)-bookworm-slim$/.exec(
      instructions.find((line) => line.startsWith('ARG NODE_IMAGE='))!,
    );
    expect(nodeImage).not.toBeNull();
    expect([22, 24]).toContain(Number(nodeImage![1]));
    const engines = JSON.parse(read('package.json')).engines.node as string;
    expect(engines).toMatch(new RegExp(`>=${nodeImage![1]}\\b|>=2[0-2](\\.\\d+)?$`));
    // Local runs and CI still use Node 20.
    expect(engines).toMatch(/^>=20\.\d+ <21 \|\|/);
    // Installs follow the lockfile exactly.
    expect(instructions.filter((line) => /\bnpm install\b/.test(line))).toEqual([]);
    expect(instructions.some((line) => line.startsWith('RUN npm ci'))).toBe(true);
    const migrate = instructions.slice(
      instructions.indexOf('FROM ${NODE_IMAGE} AS migrate'),
      instructions.indexOf('FROM ${NODE_IMAGE} AS runtime'),
    );
    expect(migrate.find((line) => line.startsWith('CMD '))).toBe('CMD ["node", "scripts/migrate-deploy.mjs"]');
    // Without development dependencies: only packages/db's production ones.
    expect(
      migrate
        .filter((line) => line.startsWith('COPY '))
        .every((line) => line.startsWith('COPY --from=migrate-dependencies ')),
    ).toBe(true);
    expect(instructions).toContain(
      'RUN rm -rf node_modules packages/*/node_modules services/*/node_modules && npm ci --omit=dev --workspace packages/db --include-workspace-root=false',
    );
    expect(read('packages/db/scripts/migrate-deploy.mjs')).toContain("'migrate', 'deploy'");
  });

  test('the runtime image is small, unprivileged and starts the telemetry preload first', () => {
    const runtime = instructions.slice(instructions.indexOf('FROM ${NODE_IMAGE} AS runtime'));
    expect(runtime).toContain('USER node');
    expect(runtime.filter((line) => line.startsWith('COPY '))).toEqual([
      'COPY --from=production-dependencies /app/node_modules ./node_modules',
      'COPY --from=build /app/services/${SERVICE}/dist ./services/${SERVICE}/dist',
    ]);
    expect(runtime.find((line) => line.startsWith('ENV '))).toContain('HOST=0.0.0.0');
    expect(runtime.at(-1)).toBe(
      'CMD ["node", "--enable-source-maps", "--require", "./dist/telemetry.js", "./dist/main.js"]',
    );
    expect(instructions).toContain(
      'RUN rm -rf node_modules packages/*/node_modules services/*/node_modules && npm ci --omit=dev --workspace "services/$SERVICE" --include-workspace-root=false',
    );
    const ignored = read('infra/Dockerfile.dockerignore').split('\n');
    for (const pattern of ['**/node_modules', '**/dist', '.git', 'var']) expect(ignored).toContain(pattern);
  });
});

describe('Kubernetes manifests (k8s/)', () => {
  /** external-stores is production with a Redis Cluster and a PostgreSQL read replica by URL. */
  const overlays = ['dev', 'prod', 'external-stores'] as const;
  const rendered = Object.fromEntries(
    overlays.map((overlay) => [overlay, renderKustomization(path.join(repoRoot, 'k8s/overlays', overlay))]),
  ) as Record<(typeof overlays)[number], Resource[]>;
  const find = (resources: Resource[], kind: string, name: string) =>
    resources.find((resource) => resource.kind === kind && resource.metadata.name === name);
  const configMaps = (resources: Resource[]) => resources.filter((resource) => resource.kind === 'ConfigMap');

  test.each(overlays)(
    'the %s overlay renders, and every resource is valid against the Kubernetes API schemas',
    (overlay) => {
      const resources = rendered[overlay];
      expect(resources.length).toBeGreaterThan(30);
      expect(schemaErrors(resources)).toEqual([]);
      expect(unknownFieldErrors(resources)).toEqual([]);
    },
  );

  test('the schema checks catch wrong types and misspelt fields', () => {
    const deployment = structuredClone(find(rendered.prod, 'Deployment', 'users')!);
    const container = deployment.spec.template.spec.containers[0];
    container.readinesProbe = container.readinessProbe;
    container.resources.limits.memory = 'a lot';
    expect(schemaErrors([deployment]).join('\n')).toMatch(/limits\/memory/);
    expect(unknownFieldErrors([deployment]).join('\n')).toMatch(/readinesProbe/);
  });

  test.each(overlays)(
    '%s: every process has a Deployment and a Service whose names, ports and node options agree with the services',
    (overlay) => {
      const resources = rendered[overlay];
      for (const { name, port, nodeOptions } of PROCESSES) {
        const deployment = find(resources, 'Deployment', name);
        const service = find(resources, 'Service', name);
        expect([name, Boolean(deployment), Boolean(service)]).toEqual([name, true, true]);
        const pod = podTemplate(deployment!)!;
        const container = pod.spec.containers.find((candidate: { name: string }) => candidate.name === name);
        const metricsPort = metricsPortOf({ name, port });
        expect(container.ports).toEqual([
          { name: 'http', containerPort: port, protocol: 'TCP' },
          { name: 'metrics', containerPort: metricsPort, protocol: 'TCP' },
        ]);
        expect(container.env).toContainEqual({ name: 'PORT', value: String(port) });
        expect(container.env).toContainEqual({ name: 'METRICS_PORT', value: String(metricsPort) });
        const nodeOptionsEnv = container.env.find((variable: { name: string }) => variable.name === 'NODE_OPTIONS');
        expect([name, nodeOptionsEnv?.value]).toEqual([name, nodeOptions]);
        // The Service (hence the Ingress) offers only the API port; Prometheus scrapes the pods.
        expect(service!.spec.ports).toEqual([{ name: 'http', port, targetPort: 'http', protocol: 'TCP' }]);
        // The Service, the Deployment's selector and the pods agree.
        expect(deployment!.spec.selector.matchLabels).toEqual(service!.spec.selector);
        expect(pod.metadata.labels).toMatchObject(service!.spec.selector);
        expect(pod.metadata.annotations).toMatchObject({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(metricsPort),
          'prometheus.io/path': '/metrics',
        });
      }
      // Services find each other through the Services (the config's *_URL variables).
      const config = find(resources, 'ConfigMap', 'teamchat-config')!;
      for (const backend of HTTP_BACKENDS)
        expect(config.data[backend.urlVar!]).toBe(`http://${backend.name}:${backend.port}`);
    },
  );

  test.each(overlays)(
    '%s: every container has probes, resources, a pinned image and a locked-down security context',
    (overlay) => {
      const resources = rendered[overlay];
      for (const { name } of PROCESSES) {
        const deployment = find(resources, 'Deployment', name)!;
        const pod = podTemplate(deployment)!;
        const container = pod.spec.containers[0];
        expect([name, container.readinessProbe?.httpGet]).toEqual([name, { path: '/health/ready', port: 'http' }]);
        expect([name, container.livenessProbe?.httpGet]).toEqual([name, { path: '/health/live', port: 'http' }]);
        expect([name, container.startupProbe?.httpGet]).toEqual([name, { path: '/health/live', port: 'http' }]);
        expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
        expect(pod.spec.automountServiceAccountToken).toBe(false);
        for (const each of containersOf(deployment)) {
          expect([
            name,
            each.name,
            Object.keys(each.resources?.requests ?? {}).sort(),
            Object.keys(each.resources?.limits ?? {}).sort(),
          ]).toEqual([name, each.name, ['cpu', 'memory'], ['cpu', 'memory']]);
          expect(each.securityContext).toMatchObject({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
        }
      }
      for (const resource of resources) {
        for (const container of containersOf(resource)) {
          expect([resourceId(resource), container.image]).toEqual([
            resourceId(resource),
            expect.stringMatching(/^[^@]+:(?!latest$)[\w.-]+$|@sha256:[0-9a-f]{64}$/),
          ]);
        }
      }
    },
  );

  test('production images come from the registry at one pinned release', () => {
    const images = new Set(rendered.prod.flatMap(containersOf).map((container) => container.image));
    expect([...images].sort()).toEqual(
      [...PROCESSES.map(({ name }) => name), 'migrate']
        .map((name) => `registry.example.com/teamchat/${name}:0.1.0`)
        .sort(),
    );
  });

  test.each(overlays)(
    '%s: every variable a container is given is one its service reads; config and secrets it needs exist',
    (overlay) => {
      const resources = rendered[overlay];
      const present = new Set(resources.map((resource) => `${resource.kind}/${resource.metadata.name}`));
      // Production's Secrets are created out of band; docs/operations.md says how.
      const external =
        overlay !== 'dev'
          ? new Set([
              'Secret/teamchat-secrets',
              'Secret/teamchat-storage-secrets',
              'Secret/teamchat-notification-secrets',
              'Secret/teamchat-tls',
            ])
          : new Set<string>();
      const operations = read('docs/operations.md');
      for (const secret of external) expect(operations).toContain(secret.split('/')[1]);
      // The keys of each Secret, as the dev overlay's throw-away copies have them.
      const secretKeys = (name: string) => Object.keys(find(rendered.dev, 'Secret', name)!.stringData);

      for (const { name } of PROCESSES) {
        const deployment = find(resources, 'Deployment', name)!;
        const container = podTemplate(deployment)!.spec.containers[0];
        const given = new Set<string>(container.env.map((variable: { name: string }) => variable.name));
        for (const source of container.envFrom) {
          const reference = source.configMapRef
            ? `ConfigMap/${source.configMapRef.name}`
            : `Secret/${source.secretRef.name}`;
          expect([name, reference, present.has(reference) || external.has(reference)]).toEqual([name, reference, true]);
          if (source.configMapRef)
            for (const key of Object.keys(find(resources, 'ConfigMap', source.configMapRef.name)!.data)) given.add(key);
          else for (const key of secretKeys(source.secretRef.name)) given.add(key);
        }
        const known = variablesReadBy(name);
        const unknown = [...given].filter((variable) => !known.has(variable) && !isPlatformVariable(variable));
        expect([name, unknown]).toEqual([name, []]);
        for (const variable of [...REQUIRED_VARIABLES, 'REDIS_URL', 'HOST'])
          expect([name, variable, given.has(variable)]).toEqual([name, variable, true]);
      }
      expect(find(resources, 'ConfigMap', 'teamchat-config')!.data.HOST).toBe('0.0.0.0');
      // Uploaded files: the readers of the storage settings get them, nobody else (the users service
      // writes avatars, realm icons and logos into the uploads storage).
      const storageReaders = PROCESSES.filter(({ name }) =>
        podTemplate(find(resources, 'Deployment', name)!)!.spec.containers[0].envFrom.some(
          (source: any) => source.configMapRef?.name === 'teamchat-storage',
        ),
      ).map(({ name }) => name);
      expect(storageReaders.sort()).toEqual(['uploads', 'users', 'worker']);
      const storageSecretReaders = PROCESSES.filter(({ name }) =>
        podTemplate(find(resources, 'Deployment', name)!)!.spec.containers[0].envFrom.some(
          (source: any) => source.secretRef?.name === 'teamchat-storage-secrets',
        ),
      ).map(({ name }) => name);
      expect(storageSecretReaders.sort()).toEqual(['uploads', 'users', 'worker']);
      // Notifications: the worker sends them, the users service sends test notifications.
      for (const reference of ['teamchat-notifications', 'teamchat-notification-secrets']) {
        const readers = PROCESSES.filter(({ name }) =>
          podTemplate(find(resources, 'Deployment', name)!)!.spec.containers[0].envFrom.some(
            (source: any) => (source.configMapRef ?? source.secretRef).name === reference,
          ),
        ).map(({ name }) => name);
        expect([reference, readers.sort()]).toEqual([reference, ['users', 'worker']]);
      }
      expect(
        configMaps(resources)
          .map((map) => map.metadata.name)
          .sort(),
      ).toEqual(['teamchat-config', 'teamchat-notifications', 'teamchat-storage']);
    },
  );

  test.each(overlays)(
    '%s: the event tier scales on its own signal, survives disruptions and outlives its long-polls',
    (overlay) => {
      const resources = rendered[overlay];
      const hpa = find(resources, 'HorizontalPodAutoscaler', 'events')!;
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'events' });
      const signals = hpa.spec.metrics.map((metric: any) => metric.pods?.metric.name ?? metric.resource?.name);
      expect(signals).toEqual([metricName(eventTierMetrics().parkedPolls), 'cpu']);
      const pdb = find(resources, 'PodDisruptionBudget', 'events')!;
      expect(pdb.spec.selector.matchLabels).toEqual(find(resources, 'Deployment', 'events')!.spec.selector.matchLabels);
      const pod = podTemplate(find(resources, 'Deployment', 'events')!)!;
      expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(LONG_POLL_SECONDS);
      expect(
        podTemplate(find(resources, 'Deployment', 'gateway')!)!.spec.terminationGracePeriodSeconds,
      ).toBeGreaterThan(LONG_POLL_SECONDS);
      // Each replica is its own intake consumer: its name comes from the pod.
      expect(pod.spec.containers[0].env).toContainEqual({
        name: 'EVENTS_REPLICA_ID',
        valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
      });
    },
  );

  test.each(overlays)('%s: every tier has its autoscaler: HTTP services on CPU, workers on queue depth', (overlay) => {
    const resources = rendered[overlay];
    for (const { name } of PROCESSES) {
      const hpa = find(resources, 'HorizontalPodAutoscaler', name);
      expect([name, hpa?.spec.scaleTargetRef]).toEqual([name, { apiVersion: 'apps/v1', kind: 'Deployment', name }]);
      expect(hpa!.spec.minReplicas).toBeLessThanOrEqual(hpa!.spec.maxReplicas);
      expect(find(resources, 'PodDisruptionBudget', name)).toBeDefined();
    }
    for (const { name } of HTTP_BACKENDS.filter((backend) => backend.name !== 'events').concat([
      { name: 'gateway', port: gatewayPort },
    ])) {
      expect([name, find(resources, 'HorizontalPodAutoscaler', name)!.spec.metrics]).toEqual([
        name,
        [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }],
      ]);
    }
    const worker = find(resources, 'HorizontalPodAutoscaler', 'worker')!;
    expect(worker.spec.metrics).toEqual([
      {
        type: 'External',
        external: { metric: { name: 'teamchat_jobs_waiting' }, target: { type: 'AverageValue', averageValue: '100' } },
      },
    ]);
    // The adapter rules turn the metrics the processes export into the HPAs' signals.
    const adapter = YAML.parse(read('infra/prometheus/adapter-rules.yaml'));
    expect(adapter.rules[0]).toMatchObject({
      name: { as: 'teamchat_event_parked_polls' },
      seriesQuery: expect.stringContaining('teamchat_event_parked_polls{'),
    });
    expect(adapter.externalRules[0]).toMatchObject({
      name: { as: 'teamchat_jobs_waiting' },
      seriesQuery: expect.stringContaining(`${metricName(jobMetrics().jobs)}{`),
    });
  });

  test.each(overlays)(
    '%s: the Ingress routes /api/v1/events, /json/events and /api/v1/register straight to the event tier, the rest to the gateway, with long-poll timeouts for the events',
    (overlay) => {
      const ingresses = rendered[overlay].filter((resource) => resource.kind === 'Ingress');
      const routes = ingressRoutes(rendered[overlay]);
      // docs/adr/0006: the long-polls (and DELETE /events) and POST /register go to the event tier,
      // which authenticates them; everything else to the gateway.
      expect(routes.map((route) => `${route.pathType} ${route.path} -> ${route.backend.service.name}`).sort()).toEqual([
        'Exact / -> gateway',
        'Exact /api/v1/events -> events',
        'Exact /api/v1/register -> events',
        'Exact /json/events -> events',
        'Exact /login/ -> gateway',
        'Prefix /accounts/ -> gateway',
        'Prefix /api/ -> gateway',
        'Prefix /avatar/ -> gateway',
        'Prefix /calls/ -> gateway',
        'Prefix /join/ -> gateway',
        'Prefix /json/ -> gateway',
        'Prefix /static/ -> gateway',
        'Prefix /user_avatars/ -> gateway',
        'Prefix /user_uploads/ -> gateway',
      ]);
      expect(new Set(routes.map((route) => route.backend.service.port.name))).toEqual(new Set(['http']));
      // The port the routes name is the one each Service offers (the API port, never the metrics one).
      for (const route of routes) {
        const service = find(rendered[overlay], 'Service', route.backend.service.name)!;
        expect(service.spec.ports.map((port: { name: string }) => port.name)).toEqual([
          route.backend.service.port.name,
        ]);
      }
      expect(routes.map((route) => `${route.pathType} ${route.path}`).sort()).toEqual([
        'Exact /',
        'Exact /api/v1/events',
        'Exact /api/v1/register',
        'Exact /json/events',
        'Exact /login/',
        'Prefix /accounts/',
        'Prefix /api/',
        'Prefix /avatar/',
        'Prefix /calls/',
        'Prefix /join/',
        'Prefix /json/',
        'Prefix /static/',
        'Prefix /user_avatars/',
        'Prefix /user_uploads/',
      ]);
      const events = ingresses.find((ingress) =>
        ingress.spec.rules.some((rule: any) => rule.http.paths.some((route: any) => route.path === '/api/v1/events')),
      )!;
      expect(Number(events.metadata.annotations!['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThan(
        LONG_POLL_SECONDS,
      );
      expect(events.metadata.annotations!['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
      const main = ingresses.find((ingress) => ingress !== events)!;
      expect(Number(main.metadata.annotations!['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeLessThanOrEqual(
        LONG_POLL_SECONDS,
      );
      // /metrics and /health are not public (only the home page is routed at /, exactly).
      expect(
        routes.some(
          (route) =>
            (route.path === '/' && route.pathType !== 'Exact') ||
            route.path.startsWith('/metrics') ||
            route.path.startsWith('/health'),
        ),
      ).toBe(false);
      // Behind the Ingress, the gateway takes each client's address from the X-Forwarded-For entry
      // ingress-nginx writes (otherwise every anonymous client shares one rate-limit bucket).
      // The event tier, which clients long-poll directly, too.
      for (const name of ['gateway', 'events']) {
        const container = podTemplate(find(rendered[overlay], 'Deployment', name)!)!.spec.containers[0];
        expect([name, container.env]).toEqual([
          name,
          expect.arrayContaining([{ name: 'RATE_LIMIT_TRUST_FORWARDED_FOR', value: 'true' }]),
        ]);
      }
      // What the event tier's API-key lookup reads (PostgreSQL, Redis and its prefix, the token secret) it
      // gets as the gateway does, from the same ConfigMap and Secret.
      const envSources = (name: string) =>
        podTemplate(find(rendered[overlay], 'Deployment', name)!)!.spec.containers[0].envFrom;
      expect(envSources('events')).toEqual(envSources('gateway'));
      const annotations = ingresses.flatMap((ingress) => Object.keys(ingress.metadata.annotations ?? {}));
      // No annotation that would let clients' own X-Forwarded-For through (those are controller settings, documented).
      expect(annotations.filter((name) => /forwarded|real-ip|snippet/.test(name))).toEqual([]);
      const host = overlay === 'dev' ? 'teamchat.localtest.me' : 'chat.example.com';
      expect(new Set(routes.map((route) => route.host))).toEqual(new Set([host]));
      if (overlay !== 'dev')
        for (const ingress of ingresses)
          expect(ingress.spec.tls).toEqual([{ hosts: [host], secretName: 'teamchat-tls' }]);
    },
  );

  test.each(overlays)(
    '%s: each pod applies pending migrations before its service starts, one at a time; no Job to collide with on re-apply',
    (overlay) => {
      const resources = rendered[overlay];
      // Jobs are immutable: a Job applied again with another image within its TTL is refused.
      expect(resources.filter((resource) => resource.kind === 'Job' && resource.metadata.name === 'migrate')).toEqual(
        [],
      );
      const migrateImage = rendered[overlay]
        .flatMap(containersOf)
        .find((container) => container.name === 'migrate')!.image;
      expect(migrateImage).toMatch(/\/migrate:/);
      for (const { name } of PROCESSES) {
        const pod = podTemplate(find(resources, 'Deployment', name)!)!;
        const [init] = pod.spec.initContainers;
        expect([name, init.name, init.image, init.command]).toEqual([
          name,
          'migrate',
          migrateImage,
          ['node', 'scripts/migrate-deploy.mjs'],
        ]);
        expect(init.env).toContainEqual({
          name: 'DATABASE_URL',
          valueFrom: { secretKeyRef: { name: 'teamchat-secrets', key: 'DATABASE_URL' } },
        });
      }
      // The script serializes the runs with an advisory lock (packages/db/test/migrate-deploy.test.ts).
      expect(read('packages/db/scripts/migrate-deploy.mjs')).toMatch(/pg_advisory_lock/);
    },
  );

  test('each resource is in the overlay namespace; dev brings its data stores and a throw-away Secret, production neither', () => {
    for (const [overlay, namespace] of [
      ['dev', 'teamchat-dev'],
      ['prod', 'teamchat'],
      ['external-stores', 'teamchat'],
    ] as const) {
      for (const resource of rendered[overlay]) {
        if (resource.kind === 'Namespace') expect(resource.metadata.name).toBe(namespace);
        else expect([resourceId(resource), resource.metadata.namespace]).toEqual([resourceId(resource), namespace]);
      }
    }
    for (const name of ['postgres', 'redis']) expect(find(rendered.dev, 'StatefulSet', name)).toBeDefined();
    expect(find(rendered.dev, 'Secret', 'teamchat-secrets')).toBeDefined();
    for (const overlay of ['prod', 'external-stores'] as const)
      expect(rendered[overlay].some((resource) => resource.kind === 'Secret' || resource.kind === 'StatefulSet')).toBe(
        false,
      );
    const redis = podTemplate(find(rendered.dev, 'StatefulSet', 'redis')!)!.spec.containers[0];
    expect(redis.args.join(' ')).toContain('--maxmemory-policy noeviction');
  });

  test('external-stores: production plus a Redis Cluster and a read replica by URL, nothing else; migrations stay on the primary', () => {
    const external = rendered['external-stores'];
    const config = find(external, 'ConfigMap', 'teamchat-config')!;
    // host:port seeds, comma-separated (packages/bus reads them); the password stays in REDIS_URL.
    expect(config.data.REDIS_CLUSTER_NODES).toMatch(/^[\w.-]+:\d+(,[\w.-]+:\d+)*$/);
    // Writes the event tier acknowledges are on a replica too (a failover keeps them).
    expect(config.data.REDIS_WAIT_REPLICAS).toBe('1');
    const replicaUrl = {
      name: 'DATABASE_REPLICA_URL',
      valueFrom: { secretKeyRef: { name: 'teamchat-secrets', key: 'DATABASE_REPLICA_URL' } },
    };
    for (const { name } of PROCESSES) {
      const pod = podTemplate(find(external, 'Deployment', name)!)!;
      expect([name, pod.spec.containers[0].env]).toEqual([name, expect.arrayContaining([replicaUrl])]);
      // The schema check and the migrations run against the primary only.
      const init = pod.spec.initContainers[0];
      expect([name, init.env.map((variable: { name: string }) => variable.name)]).not.toContainEqual([
        name,
        expect.arrayContaining(['DATABASE_REPLICA_URL']),
      ]);
    }
    // Take those two settings out again and what is left is the production overlay, unchanged.
    const withoutStores = structuredClone(external).map((resource) => {
      if (resource.kind === 'ConfigMap' && resource.metadata.name === 'teamchat-config') {
        delete resource.data.REDIS_CLUSTER_NODES;
        delete resource.data.REDIS_WAIT_REPLICAS;
      }
      const pod = resource.kind === 'Deployment' ? podTemplate(resource) : undefined;
      if (pod)
        pod.spec.containers[0].env = pod.spec.containers[0].env.filter(
          (variable: { name: string }) => variable.name !== 'DATABASE_REPLICA_URL',
        );
      return resource;
    });
    expect(withoutStores).toEqual(rendered.prod);
    // The Secret is created out of band: the docs name its new key, and both settings.
    const operations = read('docs/operations.md');
    for (const variable of [
      'DATABASE_REPLICA_URL',
      'REDIS_CLUSTER_NODES',
      'REDIS_WAIT_REPLICAS',
      'k8s/overlays/external-stores',
    ])
      expect([variable, operations.includes(variable)]).toEqual([variable, true]);
  });

  test.each(overlays)(
    '%s: nothing pins a client or a long-poll to a replica, so added event replicas take polls',
    (overlay) => {
      const resources = rendered[overlay];
      // The gateway reaches each tier through its Service (kube-proxy picks a ready pod per
      // connection): no session affinity, not headless (the gateway would keep the addresses it resolved).
      for (const { name } of HTTP_BACKENDS) {
        const service = find(resources, 'Service', name)!;
        expect([name, service.spec.sessionAffinity ?? 'None', service.spec.clusterIP ?? '']).toEqual([
          name,
          'None',
          '',
        ]);
      }
      // No cookie or hash affinity at the Ingress: every request may land on any gateway.
      const annotations = resources
        .filter((resource) => resource.kind === 'Ingress')
        .flatMap((ingress) => Object.keys(ingress.metadata.annotations ?? {}));
      expect(annotations.filter((name) => /affinity|session-cookie|upstream-hash-by/.test(name))).toEqual([]);
      // A long-poll is one request, and the gateway retires each upstream connection after
      // UPSTREAM_SOCKET_MAX_AGE_MS: within the event HPA's scale-up window, new replicas carry
      // polls before it decides again.
      const gatewayEnv = podTemplate(find(resources, 'Deployment', 'gateway')!)!.spec.containers[0].env as {
        name: string;
        value?: string;
      }[];
      const maxAgeMs = Number(
        gatewayEnv.find((variable) => variable.name === 'UPSTREAM_SOCKET_MAX_AGE_MS')?.value ??
          /maxAgeMs:\s*([\d_]+)/.exec(read('services/gateway/src/env.ts'))![1].replaceAll('_', ''),
      );
      const scaleUpWindow = find(resources, 'HorizontalPodAutoscaler', 'events')!.spec.behavior.scaleUp
        .stabilizationWindowSeconds;
      expect(maxAgeMs).toBeGreaterThan(0);
      expect(maxAgeMs).toBeLessThanOrEqual(scaleUpWindow * 1000);
    },
  );
});

describe('the kustomize renderer', () => {
  test('strategic merge: maps merge, keyed lists merge by name, other lists are replaced, null deletes', () => {
    const base = {
      spec: {
        replicas: 2,
        containers: [
          { name: 'a', image: 'x:1', args: ['--one'] },
          { name: 'b', image: 'y:1' },
        ],
        paused: true,
      },
    };
    const patch = { spec: { replicas: 3, containers: [{ name: 'b', image: 'y:2' }], paused: null } };
    expect(strategicMerge(base, patch)).toEqual({
      spec: {
        replicas: 3,
        containers: [
          { name: 'a', image: 'x:1', args: ['--one'] },
          { name: 'b', image: 'y:2' },
        ],
      },
    });
    expect(strategicMerge({ args: ['a', 'b'] }, { args: ['c'] })).toEqual({ args: ['c'] });
  });

  test('a patch that matches nothing, or a kustomize feature it does not implement, is an error', () => {
    fs.mkdirSync(path.join(repoRoot, 'var'), { recursive: true });
    const dir = fs.mkdtempSync(path.join(repoRoot, 'var', 'kustomize-test-'));
    try {
      fs.writeFileSync(
        path.join(dir, 'cm.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  A: "1"\n',
      );
      fs.writeFileSync(
        path.join(dir, 'patch.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\ndata:\n  A: "2"\n',
      );
      fs.writeFileSync(path.join(dir, 'kustomization.yaml'), 'resources: [cm.yaml]\npatches:\n  - path: patch.yaml\n');
      expect(() => renderKustomization(dir)).toThrow(/no resource matches the patch for ConfigMap\/two/);
      fs.writeFileSync(path.join(dir, 'kustomization.yaml'), 'resources: [cm.yaml]\nnamePrefix: x-\n');
      expect(() => renderKustomization(dir)).toThrow(/"namePrefix" is not supported/);
      expect(readYamlDocuments(path.join(dir, 'cm.yaml'))).toHaveLength(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('infra/prometheus/alerts.yml', () => {
  interface AlertRule {
    alert: string;
    expr: string;
    for?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  }
  const rules: AlertRule[] = YAML.parse(read('infra/prometheus/alerts.yml')).groups.flatMap(
    (group: { rules: AlertRule[] }) => group.rules,
  );
  /** Metric names of our processes an expression refers to (ours, and node's process/runtime metrics). */
  const metricsIn = (expr: string) =>
    [...expr.matchAll(/\b(?:teamchat|nodejs|process)_[a-z0-9_]+/g)].map(([name]) => name);

  /** Every series name a process exports: the standard metrics (code, autoscalers and alerts share them), the registry's own, node's. */
  async function exportedNames(): Promise<Set<string>> {
    httpServerMetrics();
    gatewayMetrics();
    eventTierMetrics();
    jobMetrics();
    // The registry's own counter of failed scrape hooks exists once a hook has failed.
    const remove = onScrape(() => {
      throw new Error('a failing hook');
    });
    const { types } = parseExposition((await renderMetrics()).body);
    remove();
    const suffixes: Record<string, string[]> = {
      histogram: ['_bucket', '_sum', '_count'],
      summary: ['_sum', '_count'],
    };
    return new Set(
      Object.entries(types).flatMap(([name, type]) => [name, ...(suffixes[type] ?? []).map((suffix) => name + suffix)]),
    );
  }

  test('every alert refers only to metrics the processes export (and the check catches a misspelt one)', async () => {
    const exported = await exportedNames();
    const unknown = rules.flatMap((rule) =>
      metricsIn(rule.expr)
        .filter((name) => !exported.has(name))
        .map((name) => `${rule.alert}: ${name}`),
    );
    expect(unknown).toEqual([]);
    expect(metricsIn('max(teamchat_event_outbox_backlogs) > 0').filter((name) => !exported.has(name))).toEqual([
      'teamchat_event_outbox_backlogs',
    ]);
    // The event tier's delivery-path metrics are all alerted on.
    const alerted = new Set(rules.flatMap((rule) => metricsIn(rule.expr)));
    const {
      leaseHandovers,
      appendsFenced,
      readsFenced,
      outboxBacklog,
      relayPublished,
      redisMemoryUsedBytes,
      redisMemoryMaxBytes,
    } = eventTierMetrics();
    for (const metric of [
      leaseHandovers,
      appendsFenced,
      readsFenced,
      outboxBacklog,
      relayPublished,
      redisMemoryUsedBytes,
      redisMemoryMaxBytes,
    ]) {
      expect([metricName(metric), alerted.has(metricName(metric))]).toEqual([metricName(metric), true]);
    }
  });

  test('every alert has a unique name, a severity and a summary, and docs/operations.md lists it', () => {
    const names = rules.map((rule) => rule.alert);
    expect(new Set(names).size).toBe(names.length);
    const operations = read('docs/operations.md');
    for (const rule of rules) {
      expect([rule.alert, rule.labels?.severity]).toEqual([rule.alert, expect.stringMatching(/^(page|ticket)$/)]);
      expect([rule.alert, typeof rule.annotations?.summary]).toEqual([rule.alert, 'string']);
      expect([rule.alert, operations.includes(`| \`${rule.alert}\` |`)]).toEqual([rule.alert, true]);
    }
  });
});
