// Every route of every service is reachable from outside through the Kubernetes Ingress, as each
// overlay renders it: the route's path (and, for an /api/v1/ path, the web app's /json/ alias of
// it) is matched by an Ingress path the way ingress-nginx matches them (an Exact path first, then
// the longest Prefix, whole path segments only), and that path's backend serves it: the gateway,
// whose routing table sends it on to the route's own service, or the event tier, for the
// event-tier routes it serves directly (docs/adr/0006). The routes come from the route tables
// themselves (tests/fuzz/endpoints.ts), so a route added to a service, or a page added to the web
// service, is checked here without touching this file, and the Ingress cannot drift from them.

import path from 'node:path';
import {
  ingressRoutes,
  renderKustomization,
  type IngressRoute,
  type Resource,
} from '../../packages/telemetry/test/support/kustomize';
import { listEndpoints, samplePath } from '../fuzz/endpoints';

const repoRoot = path.resolve(__dirname, '../..');
const OVERLAYS = ['dev', 'prod', 'external-stores'];

interface IngressPath {
  path: string;
  pathType: IngressRoute['pathType'];
  backend: string;
}

function ingressPaths(resources: Resource[]): IngressPath[] {
  return ingressRoutes(resources).map((route) => ({
    path: route.path,
    pathType: route.pathType,
    backend: route.backend.service.name,
  }));
}

/** The Ingress path a request path goes to, as Kubernetes defines the matching (Exact wins, then the longest Prefix). */
function matchIngress(paths: IngressPath[], requestPath: string): IngressPath | undefined {
  const exact = paths.find((route) => route.pathType === 'Exact' && route.path === requestPath);
  if (exact) return exact;
  const segmentPrefix = (prefix: string) => {
    const trimmed = prefix.replace(/\/+$/, '');
    return trimmed === '' || requestPath === trimmed || requestPath.startsWith(`${trimmed}/`);
  };
  return paths
    .filter((route) => route.pathType === 'Prefix' && segmentPrefix(route.path))
    .sort((a, b) => b.path.length - a.path.length)[0];
}

const publicEndpoints = listEndpoints().filter((endpoint) => !endpoint.path.startsWith('/internal/'));

test('the route tables give routes of every service to check', () => {
  const services = new Set(publicEndpoints.map((endpoint) => endpoint.service));
  expect([...services].sort()).toEqual(
    expect.arrayContaining(['channels', 'events', 'messages', 'uploads', 'users'].sort()),
  );
});

test.each(OVERLAYS)('%s: every public route of every service is reachable through the Ingress', (overlay) => {
  const paths = ingressPaths(renderKustomization(path.join(repoRoot, 'k8s/overlays', overlay)));
  const unreachable: string[] = [];
  for (const endpoint of publicEndpoints) {
    const apiPath = samplePath(endpoint.path);
    const requestPaths = apiPath.startsWith('/api/v1/')
      ? [apiPath, `/json/${apiPath.slice('/api/v1/'.length)}`]
      : [apiPath];
    for (const requestPath of requestPaths) {
      const route = matchIngress(paths, requestPath);
      const served =
        route?.backend === 'gateway'
          ? endpoint.rule?.service === endpoint.service
          : route?.backend === 'events' && endpoint.service === 'events';
      if (!served)
        unreachable.push(
          `${endpoint.method} ${requestPath} (${endpoint.service}) -> ${route ? `${route.pathType} ${route.path} -> ${route.backend}` : 'no Ingress path'}`,
        );
    }
  }
  expect(unreachable).toEqual([]);
});
