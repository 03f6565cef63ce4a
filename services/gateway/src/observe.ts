// The gateway's request log and metrics: one JSON line per request (request id, trace id, the
// user once authenticated, the service behind it) and the gateway_* Prometheus metrics.
// Only the path is logged: query strings may carry credentials (?api_key= on file URLs).

import type http from 'node:http';
import { observeRequest, type Logger } from '@teamchat/core';
import { gatewayMetrics } from '@teamchat/telemetry';
import type { RouteRule } from './routes';

export interface RequestObservation {
  userId?: number;
  realmId?: number | null;
}

const ruleLabels = new WeakMap<RouteRule, string>();

/** A routing rule's label: its pattern without the anchors (`/api/v1/messages(/.*)?`). */
export function ruleLabel(rule: RouteRule | undefined): string {
  if (!rule) return 'unmatched';
  let label = ruleLabels.get(rule);
  if (label === undefined) {
    label = rule.pattern.source.replace(/^\^/, '').replace(/\$$/, '').replace(/\\\//g, '/');
    ruleLabels.set(rule, label);
  }
  return label;
}

export function countUpstreamFailure(service: string): void {
  gatewayMetrics().upstreamFailures.inc({ upstream: service });
}

/**
 * Starts observing one request (after routing): returns the object the handler fills in once
 * the user is known. The log line and metrics are written when the response ends, or with
 * status 499 when the client goes away first.
 */
export function observeGatewayRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  details: { path: string; requestId: string; rule: RouteRule | undefined },
  logger: Logger,
): RequestObservation {
  const upstream = details.rule?.service ?? 'none';
  const route = ruleLabel(details.rule);
  const method = req.method ?? 'GET';
  const observation: RequestObservation = {};
  observeRequest(req, res, logger, gatewayMetrics(), { upstream }, () => ({
    method,
    route,
    fields: {
      path: details.path,
      upstream,
      request_id: details.requestId,
      user_id: observation.userId,
      realm_id: observation.realmId ?? undefined,
    },
  }));
  return observation;
}
