// What services and shared packages use at run time: the metrics registry and the standard
// metrics, the active trace ids for log lines, and the hooks between the telemetry preload and
// the service. Starting OpenTelemetry itself is the preload's job (src/preload.ts, src/sdk.ts).
export {
  counter,
  DeferredCounts,
  gauge,
  histogram,
  metricsRegistry,
  onScrape,
  renderMetrics,
  type Counter,
  type Gauge,
  type Histogram,
  type MetricsExposition,
  type ScrapeHook,
} from './metrics';
export {
  databaseMetrics,
  eventDeliveryCounts,
  eventTierMetrics,
  gatewayMetrics,
  httpServerMetrics,
  jobMetrics,
} from './standard-metrics';
export { activeTraceIds, type TraceIds } from './trace-context';
export { flushTelemetry, setProcessLogger, type HookLogger } from './process-hooks';
