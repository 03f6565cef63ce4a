// k8s/components/monitoring: the same alert rules, dashboard and series labels on Kubernetes as
// under compose's observability profile. The PrometheusRule and the dashboard's ConfigMap are
// generated from infra/ (scripts/generate-monitoring.mjs) and must say what their sources say;
// the PodMonitor's relabelings must give every process's series the labels compose's scrape
// configuration gives, and the alerts may group and select only on labels both give.

import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { schemaErrors, unknownFieldErrors } from './support/kubernetes-schema';
import { podTemplate, readYamlDocuments, renderKustomization, type Resource } from './support/kustomize';
import { selects } from './support/network-policy';
import { repoRoot, stackServices } from './support/processes';

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const PROCESSES = ['gateway', ...stackServices().services.map(({ name }) => name)];
const component = path.join(repoRoot, 'k8s/components/monitoring');
/** Labels Prometheus gives a target itself, whichever way it was discovered. */
const TARGET_LABELS = new Set(['job', 'instance', 'service', 'namespace', 'pod', 'container', 'endpoint']);

/** Prometheus' `replace` relabeling (the only action the PodMonitor uses). */
function relabel(labels: Record<string, string>, rules: any[]): Record<string, string> {
  const result = { ...labels };
  for (const rule of rules) {
    expect(rule.action ?? 'replace').toBe('replace');
    const value = (rule.sourceLabels ?? []).map((name: string) => result[name] ?? '').join(rule.separator ?? ';');
    const match = new RegExp(`^(?:${rule.regex ?? '(.*)'})$`).exec(value);
    if (!match) continue;
    result[rule.targetLabel] = (rule.replacement ?? '$1').replace(
      /\$(\d+)/g,
      (_: string, n: string) => match[Number(n)] ?? '',
    );
  }
  return result;
}

const prod = renderKustomization(path.join(repoRoot, 'k8s/overlays/prod'));
const withMonitoring = renderKustomization(component, structuredClone(prod));
const find = (kind: string, name: string) =>
  withMonitoring.find((resource) => resource.kind === kind && resource.metadata.name === name) as Resource;

test('the component’s PodMonitor, PrometheusRule and ConfigMap are valid against their API schemas', () => {
  const added = withMonitoring.slice(prod.length);
  expect(schemaErrors(added)).toEqual([]);
  expect(unknownFieldErrors(added)).toEqual([]);
  // The check can fail: a relabeling's action is an enum of the operator's schema.
  const broken = structuredClone(added.find((resource) => resource.kind === 'PodMonitor')!);
  broken.spec.podMetricsEndpoints[0].relabelings[0].action = 'rename';
  expect(schemaErrors([broken]).join('\n')).toMatch(/action/);
});

test('the PrometheusRule holds exactly infra/prometheus/alerts.yml, the ConfigMap exactly the Grafana dashboard', () => {
  expect(find('PrometheusRule', 'teamchat').spec.groups).toEqual(
    YAML.parse(read('infra/prometheus/alerts.yml')).groups,
  );
  const dashboard = find('ConfigMap', 'teamchat-grafana-dashboard');
  expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
  expect(JSON.parse(dashboard.data['teamchat.json'])).toEqual(
    JSON.parse(read('infra/grafana/dashboards/teamchat.json')),
  );
  // The component adds only these three, and changes nothing it is applied to.
  expect(withMonitoring.slice(0, prod.length)).toEqual(prod);
  expect(
    withMonitoring
      .slice(prod.length)
      .map((resource) => resource.kind)
      .sort(),
  ).toEqual(['ConfigMap', 'PodMonitor', 'PrometheusRule']);
  expect(readYamlDocuments(path.join(component, 'prometheus-rule.yaml'))).toHaveLength(1);
});

test('every process is scraped on its admin port with the job and service labels compose gives it', () => {
  const monitor = find('PodMonitor', 'teamchat');
  const [endpoint] = monitor.spec.podMetricsEndpoints;
  expect(monitor.spec.podMetricsEndpoints).toHaveLength(1);
  expect(endpoint).toMatchObject({ port: 'metrics', path: '/metrics' });
  const compose = YAML.parse(read('infra/prometheus/prometheus.yml')).scrape_configs;
  expect(compose).toHaveLength(1);
  const composeLabels = Object.fromEntries(
    compose[0].static_configs.map((config: { labels: { service: string } }) => [
      config.labels.service,
      { job: compose[0].job_name, service: config.labels.service },
    ]),
  );
  for (const name of PROCESSES) {
    const pod = podTemplate(find('Deployment', name))!;
    expect([name, selects(monitor.spec.selector, pod.metadata.labels)]).toEqual([name, true]);
    expect(pod.spec.containers[0].ports.map((port: { name: string }) => port.name)).toContain('metrics');
    const meta = Object.fromEntries(
      Object.entries(pod.metadata.labels as Record<string, string>).map(([key, value]) => [
        `__meta_kubernetes_pod_label_${key.replace(/[^a-zA-Z0-9_]/g, '_')}`,
        value,
      ]),
    );
    // What the operator sets before the endpoint's relabelings: job = <namespace>/<PodMonitor>.
    const labels = relabel({ ...meta, job: `teamchat/${monitor.metadata.name}` }, endpoint.relabelings);
    expect([name, { job: labels.job, service: labels.service }]).toEqual([name, composeLabels[name]]);
  }
  // Only those pods: the data stores of the dev overlay are not Teamchat's.
  expect(selects(monitor.spec.selector, { 'app.kubernetes.io/name': 'postgres' })).toBe(false);
});

test('alerts group and select only on target labels both scrapes give (job, service, instance)', () => {
  const rules = YAML.parse(read('infra/prometheus/alerts.yml')).groups.flatMap(
    (group: { rules: any[] }) => group.rules,
  );
  const used = new Set<string>();
  for (const rule of rules) {
    for (const [, list] of rule.expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g))
      for (const label of list.split(',').map((part: string) => part.trim())) if (label) used.add(label);
    for (const [, matchers] of rule.expr.matchAll(/\{([^}]*)\}/g))
      for (const [, label] of matchers.matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)) used.add(label);
    for (const text of Object.values(rule.annotations ?? {}) as string[])
      for (const [, label] of text.matchAll(/\$labels\.(\w+)/g)) used.add(label);
    for (const [, job] of rule.expr.matchAll(/\bjob\s*=~?\s*"([^"]*)"/g)) expect(job).toBe('teamchat');
  }
  expect(
    [...used].filter((label) => TARGET_LABELS.has(label) && !['job', 'service', 'instance'].includes(label)),
  ).toEqual([]);
  expect(used.has('job')).toBe(true);
});

test('prometheus-adapter finds the series it needs under the PodMonitor (namespace and pod)', () => {
  const adapter = YAML.parse(read('infra/prometheus/adapter-rules.yaml'));
  for (const rule of [...adapter.rules, ...adapter.externalRules])
    for (const label of Object.keys(rule.resources.overrides)) expect(['namespace', 'pod']).toContain(label);
  expect(read('docs/operations.md')).toContain('k8s/components/monitoring');
});
