// k8s/components/network-policy, rendered in the overlays that take it and evaluated edge by
// edge: the Ingress controller reaches exactly the Ingress's backends, each service accepts
// exactly the services whose settings point at it (their *_URL variables), Prometheus reaches
// only the admin ports, and nothing else in or out of the namespace gets in. Trusting the
// X-Forwarded-For entry the controller writes (RATE_LIMIT_TRUST_FORWARDED_FOR) rests on this.

import fs from 'node:fs';
import path from 'node:path';
import { ingressRoutes, podTemplate, renderKustomization, type Resource } from './support/kustomize';
import { ingressAllowed, type Destination, type Endpoint } from './support/network-policy';
import { repoRoot, stackServices } from './support/processes';
import { variablesReadBy } from './support/service-config';

jest.setTimeout(60_000);

const { services: STACK } = stackServices();
const PROCESSES = ['gateway', ...STACK.map(({ name }) => name)];
/** The setting by which a process finds each HTTP service (USERS_URL, ...). */
const URL_VARIABLES = new Map(
  STACK.filter((service) => service.urlVar).map((service) => [service.name, service.urlVar!]),
);

const INGRESS_CONTROLLER = { namespace: 'ingress-nginx', podLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } };
const PROMETHEUS = { namespace: 'monitoring', podLabels: { 'app.kubernetes.io/name': 'prometheus' } };

const overlays = [
  ['dev', 'teamchat-dev'],
  ['prod', 'teamchat'],
  ['external-stores', 'teamchat'],
] as const;

describe.each(overlays)('the %s overlay (namespace %s)', (overlay, namespace) => {
  const resources = renderKustomization(path.join(repoRoot, 'k8s/overlays', overlay));
  const policies = resources.filter((resource) => resource.kind === 'NetworkPolicy');
  const find = (kind: string, name: string) =>
    resources.find((resource) => resource.kind === kind && resource.metadata.name === name) as Resource;
  const pod = (kind: string, name: string): Destination => {
    const template = podTemplate(find(kind, name))!;
    return { namespace, podLabels: template.metadata.labels, ports: template.spec.containers[0].ports };
  };
  const portOf = (destination: Destination, name: string) =>
    destination.ports.find((port) => port.name === name)!.containerPort;
  const allowed = (source: Endpoint, destination: Destination, portName: string) =>
    ingressAllowed(policies, source, destination, portOf(destination, portName));
  const processPod = (name: string) => pod('Deployment', name);
  const stranger: Endpoint = { namespace, podLabels: { 'app.kubernetes.io/name': 'debug-shell' } };
  const elsewhere: Endpoint = { namespace: 'other', podLabels: { 'app.kubernetes.io/name': 'gateway' } };

  test('the component is there, and refuses by default', () => {
    expect(policies.length).toBeGreaterThan(PROCESSES.length / 2);
    expect(policies.every((policy) => policy.metadata.namespace === namespace)).toBe(true);
    expect(policies.find((policy) => policy.metadata.name === 'default-deny-ingress')?.spec).toEqual({
      podSelector: {},
      policyTypes: ['Ingress'],
    });
  });

  test('each service accepts exactly the services whose settings point at it', () => {
    const edges: string[] = [];
    const expected: string[] = [];
    for (const caller of PROCESSES) {
      const reads = variablesReadBy(caller);
      for (const callee of PROCESSES) {
        if (caller === callee) continue;
        const urlVariable = URL_VARIABLES.get(callee);
        if (urlVariable && reads.has(urlVariable)) expected.push(`${caller} -> ${callee}`);
        const source = { namespace, podLabels: processPod(caller).podLabels };
        if (allowed(source, processPod(callee), 'http')) edges.push(`${caller} -> ${callee}`);
      }
    }
    expect(edges.sort()).toEqual(expected.sort());
    // What the services call today (callService and the URL settings): if a new call appears,
    // its setting appears, the expectation above grows and the policy must follow.
    expect(expected).toEqual(
      expect.arrayContaining([
        'users -> channels',
        'users -> messages',
        'web -> users',
        'web -> events',
        'worker -> messages',
      ]),
    );
    for (const callee of PROCESSES.filter((name) => name !== 'gateway' && URL_VARIABLES.has(name)))
      expect(expected).toContain(`gateway -> ${callee}`);
  });

  test('the Ingress controller reaches exactly the Ingress backends, on their API port', () => {
    const backends = new Set(
      ingressRoutes(resources).map(({ backend }) => {
        expect(backend.service.port).toEqual({ name: 'http' });
        return backend.service.name;
      }),
    );
    expect([...backends].sort()).toEqual(['events', 'gateway']);
    for (const name of PROCESSES) {
      const service = find('Service', name);
      const destination = processPod(name);
      const targetPort = service.spec.ports[0].targetPort;
      expect([name, allowed(INGRESS_CONTROLLER, destination, targetPort)]).toEqual([name, backends.has(name)]);
      expect([name, allowed(INGRESS_CONTROLLER, destination, 'metrics')]).toEqual([name, false]);
      // Another pod of the controller's namespace is not the controller.
      expect(
        allowed({ ...INGRESS_CONTROLLER, podLabels: { 'app.kubernetes.io/name': 'x' } }, destination, 'http'),
      ).toBe(false);
    }
  });

  test('Prometheus reaches every admin (metrics) port and nothing else; strangers reach nothing', () => {
    for (const name of PROCESSES) {
      const destination = processPod(name);
      expect([name, allowed(PROMETHEUS, destination, 'metrics')]).toEqual([name, true]);
      expect([name, allowed(PROMETHEUS, destination, 'http')]).toEqual([name, false]);
      for (const source of [stranger, elsewhere])
        for (const port of ['http', 'metrics'])
          expect([name, source.namespace, port, allowed(source, destination, port)]).toEqual([
            name,
            source.namespace,
            port,
            false,
          ]);
    }
  });

  if (overlay === 'dev')
    test('the in-cluster data stores accept only the app pods (and MinIO its bucket Job)', () => {
      const appPods = PROCESSES.map(processPod);
      for (const [store, port] of [
        ['postgres', 'postgres'],
        ['redis', 'redis'],
      ] as const) {
        const destination = pod('StatefulSet', store);
        for (const app of appPods) expect(allowed(app, destination, port)).toBe(true);
        for (const source of [stranger, elsewhere, INGRESS_CONTROLLER, PROMETHEUS])
          expect([store, source.namespace, allowed(source, destination, port)]).toEqual([
            store,
            source.namespace,
            false,
          ]);
      }
      const minio = pod('Deployment', 'minio');
      expect(allowed(pod('Job', 'minio-bucket'), minio, 's3')).toBe(true);
      expect(allowed(processPod('uploads'), minio, 's3')).toBe(true);
      expect(allowed(stranger, minio, 's3')).toBe(false);
    });
});

test('the evaluator: no policy lets everything in; policies add up; a named port must be the pod’s', () => {
  const destination: Destination = {
    namespace: 'a',
    podLabels: { app: 'x' },
    ports: [{ name: 'http', containerPort: 80 }],
  };
  const source: Endpoint = { namespace: 'a', podLabels: { app: 'y' } };
  expect(ingressAllowed([], source, destination, 80)).toBe(true);
  const policy = (name: string, spec: object) =>
    ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace: 'a' },
      spec,
    }) as Resource;
  const deny = policy('deny', { podSelector: {}, policyTypes: ['Ingress'] });
  expect(ingressAllowed([deny], source, destination, 80)).toBe(false);
  const allowY = policy('y', {
    podSelector: { matchLabels: { app: 'x' } },
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'y' } } }], ports: [{ port: 'http' }] }],
  });
  expect(ingressAllowed([deny, allowY], source, destination, 80)).toBe(true);
  expect(ingressAllowed([deny, allowY], source, destination, 81)).toBe(false);
  expect(ingressAllowed([deny, allowY], { ...source, namespace: 'b' }, destination, 80)).toBe(false);
  expect(fs.existsSync(path.join(repoRoot, 'k8s/components/network-policy/kustomization.yaml'))).toBe(true);
});
