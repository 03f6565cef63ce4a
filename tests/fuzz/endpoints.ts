// Every endpoint of the stack, read from the route tables themselves (each service's
// src/routes.ts, and the gateway's src/routes.ts for who owns a path), so an endpoint added to
// a service is fuzzed without touching this file. Parameter names come from zulip.yaml.

import fs from 'node:fs';
import YAML from 'yaml';
import type { Route } from '@teamchat/core';
import { zulipOpenApiPath } from '@teamchat/testing';
import { matchRoute, ROUTES, type RouteRule, type ServiceName } from '../../services/gateway/src/routes';
import { routes as channelsRoutes } from '../../services/channels/src/routes';
import { routes as eventsRoutes } from '../../services/events/src/routes';
import { routes as messagesRoutes } from '../../services/messages/src/routes';
import { routes as uploadsRoutes } from '../../services/uploads/src/routes';
import { routes as usersRoutes } from '../../services/users/src/routes';
import { routes as webRoutes } from '../../services/web/src/routes';

export const SERVICE_ROUTES: Record<ServiceName, Route<unknown>[]> = {
  users: usersRoutes as Route<unknown>[],
  messages: messagesRoutes as Route<unknown>[],
  channels: channelsRoutes as Route<unknown>[],
  uploads: uploadsRoutes as Route<unknown>[],
  events: eventsRoutes as Route<unknown>[],
  web: webRoutes as Route<unknown>[],
};

export interface Endpoint {
  service: ServiceName;
  method: string;
  /** The express pattern, e.g. /api/v1/streams/:stream_id or /user_uploads/*path. */
  path: string;
  /** Names of the pattern's parameters (":x" and "*x"). */
  pathParams: string[];
  /** Every method the service serves on this path (to pick wrong ones). */
  methods: string[];
  body: 'form' | 'raw';
  /** The gateway rule that routes it (undefined: unreachable, a bug). */
  rule: RouteRule | undefined;
  /** Parameter names zulip.yaml gives the operation (empty when it is newer than zulip.yaml). */
  paramNames: string[];
}

/** A concrete path for the pattern, with one sample value per parameter (for routing checks). */
export function samplePath(pattern: string): string {
  return pattern.replace(/:(\w+)/g, '1').replace(/\*(\w+)/g, '2/ab/file.txt');
}

export function listEndpoints(): Endpoint[] {
  const spec = loadSpec();
  const endpoints: Endpoint[] = [];
  for (const [service, routes] of Object.entries(SERVICE_ROUTES) as [ServiceName, Route<unknown>[]][]) {
    for (const route of routes) {
      const methods = routes.filter((other) => other.path === route.path).map((other) => other.method);
      endpoints.push({
        service,
        method: route.method,
        path: route.path,
        pathParams: [...route.path.matchAll(/[:*](\w+)/g)].map((m) => m[1]),
        methods,
        body: route.body ?? 'form',
        rule: matchRoute(samplePath(route.path)),
        paramNames: specParamNames(spec, route.method, route.path),
      });
    }
  }
  return endpoints;
}

export { ROUTES };

// --- zulip.yaml -----------------------------------------------------------------------------

type Doc = Record<string, any>;
let cached: Doc | null | undefined;

function loadSpec(): Doc | null {
  if (cached !== undefined) return cached;
  cached = YAML.parse(fs.readFileSync(zulipOpenApiPath(), 'utf8'), { maxAliasCount: -1 }) as Doc;
  return cached;
}

function resolve(doc: Doc, node: any): any {
  let current = node;
  while (current && typeof current.$ref === 'string') {
    current = current.$ref
      .slice(2)
      .split('/')
      .reduce((target: any, part: string) => target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return current;
}

function specParamNames(doc: Doc | null, method: string, expressPath: string): string[] {
  if (!doc) return [];
  const relative = expressPath.replace(/^\/api\/v1/, '');
  const shape = relative.replace(/:\w+|\*\w+/g, '{}');
  const names = new Set<string>();
  for (const [template, item] of Object.entries(doc.paths as Record<string, Doc>)) {
    if (template.replace(/\{[^}]+\}/g, '{}') !== shape) continue;
    const operation = item[method.toLowerCase()];
    if (!operation) continue;
    for (const parameter of [...(item.parameters ?? []), ...(operation.parameters ?? [])]) {
      const resolved = resolve(doc, parameter);
      if (resolved?.in === 'query' && typeof resolved.name === 'string') names.add(resolved.name);
    }
    for (const media of Object.values((resolve(doc, operation.requestBody)?.content ?? {}) as Record<string, Doc>)) {
      for (const name of Object.keys(resolve(doc, media.schema)?.properties ?? {})) names.add(name);
    }
  }
  return [...names].sort();
}
