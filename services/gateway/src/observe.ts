// The gateway's request log and metrics: one JSON line per request (request id, trace id, the
// user once authenticated, the service behind it) and the gateway_* Prometheus metrics.
// Only the path is logged: query strings may carry credentials (?api_key= on file URLs).

import type http from 'node:http';
import { answeredStatus, type Logger } from '@teamchat/core';
import { activeTraceIds, gatewayMetrics } from '@teamchat/telemetry';
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
export function observeRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  details: { path: string; requestId: string; rule: RouteRule | undefined },
  logger: Logger,
): RequestObservation {
  const metrics = gatewayMetrics();
  const started = process.hrtime.bigint();
  const traceIds = activeTraceIds();
  const upstream = details.rule?.service ?? 'none';
  const route = ruleLabel(details.rule);
  const method = req.method ?? 'GET';
  const observation: RequestObservation = {};
  metrics.inFlight.inc({ upstream });
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    metrics.inFlight.dec({ upstream });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const status = answeredStatus(req, res);
    metrics.requests.inc({ upstream, route, method, status: String(status) });
    metrics.duration.observe({ upstream, route, method }, seconds);
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        method,
        path: details.path,
        upstream,
        route,
        status,
        ms: Math.round(seconds * 1e4) / 10,
        request_id: details.requestId,
        user_id: observation.userId,
        realm_id: observation.realmId ?? undefined,
        ...traceIds,
      },
      'request',
    );
  };
  res.on('finish', finish);
  res.on('close', finish);
  return observation;
}
