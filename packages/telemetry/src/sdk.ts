// OpenTelemetry for one process: W3C trace context in and out of every HTTP request, spans for
// HTTP (node:http, express), PostgreSQL (pg, under Prisma's adapter), Redis (ioredis) and BullMQ
// (the job carries the trace context; the worker continues the trace), plus job metrics.
//
// Export is off by default: spans are still made (their ids go into every log line and into
// outgoing requests) but go nowhere. Setting OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER) turns export on, configured by
// the standard OTEL_* variables (protocol, headers, sampler: see docs/operations.md).

import { BullMQInstrumentation } from '@appsignal/opentelemetry-instrumentation-bullmq';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IncomingMessage } from 'node:http';
import { JobMetricsInstrumentation } from './job-instrumentation';
import { setTracingShutdown } from './process-hooks';
import { REDACTED_QUERY_PARAMETERS, redactQueryString, redisStatement } from './redaction';
import { RedisInstrumentation } from './redis-instrumentation';

export interface TelemetryOptions {
  /** service.name of every span (OTEL_SERVICE_NAME wins when set). */
  serviceName: string;
  env?: NodeJS.ProcessEnv;
  /** Replaces the exporters chosen from the environment (tests pass an in-memory exporter). */
  spanProcessors?: SpanProcessor[];
}

export interface Telemetry {
  /** Whether spans leave the process (OTLP or another exporter configured). */
  exporting: boolean;
  shutdown(): Promise<void>;
}

/** Paths that are polled, not used: probes and scrapes make no spans. */
const UNTRACED_PATHS = new Set(['/health/live', '/health/ready', '/metrics']);

function pathOf(url: string | undefined): string {
  const path = url ?? '/';
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

/** Whether the environment asks for spans to be exported (the standard OTEL_* variables). */
export function exportConfigured(env: NodeJS.ProcessEnv): boolean {
  const exporters = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporters === 'none') return false;
  return Boolean(
    exporters || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim(),
  );
}

export function instrumentations(): Instrumentation[] {
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has(pathOf(req.url)),
      // Outgoing URLs (url.full) are redacted by the instrumentation; incoming query strings
      // (url.query) are not, so they are replaced here.
      redactedQueryParams: REDACTED_QUERY_PARAMETERS,
      startIncomingSpanHook: (req: IncomingMessage) => {
        const url = req.url ?? '';
        const query = url.indexOf('?');
        return query === -1 ? {} : { 'url.query': redactQueryString(url.slice(query + 1)) };
      },
    }),
    // Route handlers make spans; the generic middleware (body parsers, token check) does not.
    new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
    // Only queries made on behalf of a traced request or job (not pool housekeeping).
    new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    // Blocking reads of idle BullMQ workers and event-tier consumers would otherwise make a
    // root span every few seconds.
    new RedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: redisStatement }),
    new BullMQInstrumentation({ useProducerSpanAsConsumerParent: true, requireParentSpanForPublish: false }),
    new JobMetricsInstrumentation(),
  ];
}

/**
 * Starts OpenTelemetry for this process. Call it before anything else is required (the
 * preload does): instrumentations patch modules when they are first loaded.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const env = options.env ?? process.env;
  const exporting = options.spanProcessors ? true : exportConfigured(env);
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.namespace': 'teamchat' }),
    serviceName: env.OTEL_SERVICE_NAME?.trim() || options.serviceName,
    instrumentations: instrumentations(),
    // Without an exporter a no-op processor still gives every request real trace ids.
    spanProcessors: options.spanProcessors ?? (exporting ? undefined : [new NoopSpanProcessor()]),
    // Metrics are Prometheus (prom-client, scraped at /metrics); logs are JSON lines on stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  const shutdown = () => sdk.shutdown();
  setTracingShutdown(shutdown);
  return { exporting, shutdown };
}
