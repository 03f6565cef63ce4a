// The metrics every operator dashboard, alert and autoscaler refers to, defined once so their
// names and labels cannot drift between the code, k8s/ (HPAs), infra/prometheus and
// docs/operations.md. Call a getter where the metric is updated: each bundle is made once per
// registry (one per process), so the getters cost nothing on hot paths.

import { counter, DeferredCounts, gauge, histogram, metricsRegistry, type Counter, type Gauge } from './metrics';

function perRegistry<T>(make: () => T): () => T {
  let made: { registry: object; bundle: T } | undefined;
  return () => {
    const registry = metricsRegistry();
    if (made?.registry !== registry) made = { registry, bundle: make() };
    return made.bundle;
  };
}

/** Latency buckets (seconds) for API requests: 5 ms to a long-poll's 90 s. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 90];

/**
 * A request-metrics bundle plus what the per-request code updates: the request counter and the
 * in-flight gauge through DeferredCounts (applied to them at each scrape).
 */
function withDeferredCounts<T extends { requests: Counter<string>; inFlight: Gauge<string> }>(bundle: T) {
  return {
    ...bundle,
    requestCounts: new DeferredCounts(bundle.requests),
    inFlightCounts: new DeferredCounts(bundle.inFlight),
  };
}

/** Requests answered by a service's express app (createServiceApp), by route template. */
export const httpServerMetrics = perRegistry(() =>
  withDeferredCounts({
    requests: counter({
      name: 'teamchat_http_requests_total',
      help: 'HTTP requests answered, by service, method, route template and status code',
      labelNames: ['service', 'method', 'route', 'status'],
    }),
    duration: histogram({
      name: 'teamchat_http_request_duration_seconds',
      help: 'Time from request to the end of the response, by service, method and route template',
      labelNames: ['service', 'method', 'route'],
      buckets: REQUEST_BUCKETS,
    }),
    inFlight: gauge({
      name: 'teamchat_http_requests_in_flight',
      help: 'Requests being answered right now (parked long-polls included)',
      labelNames: ['service'],
    }),
  }),
);

/** Requests through the gateway, by the routing rule that matched and the service behind it. */
export const gatewayMetrics = perRegistry(() =>
  withDeferredCounts({
    requests: counter({
      name: 'teamchat_gateway_requests_total',
      help: 'Requests the gateway answered, by upstream service, routing rule, method and status code',
      labelNames: ['upstream', 'route', 'method', 'status'],
    }),
    duration: histogram({
      name: 'teamchat_gateway_request_duration_seconds',
      help: 'Time from request to the end of the response at the gateway (authentication and upstream included)',
      labelNames: ['upstream', 'route', 'method'],
      buckets: REQUEST_BUCKETS,
    }),
    upstreamFailures: counter({
      name: 'teamchat_gateway_upstream_failures_total',
      help: 'Forwarded requests that failed to reach their service (connection refused, reset, timeout)',
      labelNames: ['upstream'],
    }),
    inFlight: gauge({
      name: 'teamchat_gateway_requests_in_flight',
      help: 'Requests the gateway is handling right now (parked long-polls included)',
      labelNames: ['upstream'],
    }),
  }),
);

/**
 * The event tier's own signals. `parkedPolls` is what its HorizontalPodAutoscaler scales on
 * (k8s/base/events/hpa.yaml), so keep it per replica: +1 when a GET /events parks, -1 when
 * it is answered or the client goes away.
 */
export const eventTierMetrics = perRegistry(() => ({
  parkedPolls: gauge({
    name: 'teamchat_event_parked_polls',
    help: 'GET /events requests parked on this replica, waiting for an event or the heartbeat',
  }),
  eventsFannedOut: counter({
    name: 'teamchat_events_fanned_out_total',
    help: 'Events appended to client queues by this replica (one per receiving queue)',
  }),
  fanoutLag: histogram({
    name: 'teamchat_event_fanout_lag_seconds',
    help: 'Time from an event entering the intake stream (right after its transaction commits) to its being in every receiving queue',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  }),
  leaseHandovers: counter({
    name: 'teamchat_event_lease_handovers_total',
    help: 'Intake partition leases this replica took (acquired), gave back (released) or found taken by another replica (lost)',
    labelNames: ['change'],
  }),
  appendsFenced: counter({
    name: 'teamchat_event_appends_fenced_total',
    help: 'Queue appends refused because a newer lease generation of the partition had already written to the queue (a replica acting on an expired lease)',
  }),
  readsFenced: counter({
    name: 'teamchat_event_intake_reads_fenced_total',
    help: 'Intake reads or acknowledgements refused because this replica no longer held the partition lease',
  }),
  outboxBacklog: gauge({
    name: 'teamchat_event_outbox_backlog',
    help: 'event_outbox rows older than the relay grace (their after-commit publish failed or has not been confirmed), read by the relay',
  }),
  outboxOldestSeconds: gauge({
    name: 'teamchat_event_outbox_oldest_seconds',
    help: 'Age of the oldest event_outbox row, read by the relay (0 when the outbox is empty)',
  }),
  relayPublished: counter({
    name: 'teamchat_event_relay_published_total',
    help: 'Outbox rows the relay published because their after-commit publish failed (0 in a healthy deployment)',
  }),
  publishFailures: counter({
    name: 'teamchat_event_publish_failures_total',
    help: 'After-commit publishes that failed (the relay publishes those rows later)',
  }),
  redisRollbacks: counter({
    name: 'teamchat_event_redis_rollbacks_total',
    help: 'Times this replica found Redis older than an epoch it had acknowledged (restored from an older copy, or acknowledged writes lost) and dropped every event queue',
  }),
  redisMemoryUsedBytes: gauge({
    name: 'teamchat_redis_memory_used_bytes',
    help: 'used_memory of each Redis master the event tier uses (INFO memory, by node host:port), sampled by each replica',
    labelNames: ['node'],
  }),
  redisMemoryMaxBytes: gauge({
    name: 'teamchat_redis_memory_max_bytes',
    help: 'maxmemory of each Redis master the event tier uses (0: no limit, by node host:port), sampled by each replica',
    labelNames: ['node'],
  }),
  partitionOwned: gauge({
    name: 'teamchat_event_partition_owned',
    help: 'Intake partitions by whether this replica holds their lease (1) or not (0), read at scrape time; summed over replicas each partition should be 1',
    labelNames: ['partition'],
  }),
  deliveries: counter({
    name: 'teamchat_event_deliveries_total',
    help: 'GET /events answers this replica sent, by what they carried: events, a heartbeat, or nothing (superseded, dont_block, shutdown)',
    labelNames: ['answer'],
  }),
}));

/** What the event tier's poll answers update (applied to eventTierMetrics().deliveries at each scrape). */
export const eventDeliveryCounts = perRegistry(() => new DeferredCounts(eventTierMetrics().deliveries));

/**
 * PostgreSQL streaming replicas as the primary sees them (pg_stat_replication), read at scrape
 * time by the event tier: what an operator adding a read replica (DATABASE_REPLICA_URL) watches.
 */
export const databaseMetrics = perRegistry(() => ({
  replicas: gauge({
    name: 'teamchat_db_replicas_streaming',
    help: 'Standbys streaming from the primary PostgreSQL (pg_stat_replication, state streaming)',
  }),
  replicaLagSeconds: gauge({
    name: 'teamchat_db_replica_lag_seconds',
    help: 'How long ago the newest WAL a standby has replayed was written on the primary (replay_lag; 0 once caught up), by standby application_name',
    labelNames: ['replica'],
  }),
  replicaLagBytes: gauge({
    name: 'teamchat_db_replica_lag_bytes',
    help: 'WAL the primary has written that a standby has not replayed yet, by standby application_name',
    labelNames: ['replica'],
  }),
}));

/** BullMQ jobs; the worker's telemetry preload records these for every queue it consumes. */
export const jobMetrics = perRegistry(() => ({
  jobs: gauge({
    name: 'teamchat_jobs',
    help: 'Jobs by queue and state (waiting, active, delayed, prioritized, waiting-children, failed, completed), read from Redis at scrape time',
    labelNames: ['queue', 'state'],
  }),
  processed: counter({
    name: 'teamchat_jobs_processed_total',
    help: 'Job attempts this worker finished, by queue and outcome (completed or failed)',
    labelNames: ['queue', 'outcome'],
  }),
  duration: histogram({
    name: 'teamchat_job_duration_seconds',
    help: 'Time a job attempt ran in this worker, by queue and outcome',
    labelNames: ['queue', 'outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  }),
  batchDuration: histogram({
    name: 'teamchat_job_batch_duration_seconds',
    help: 'Time between a job start or progress report and its next progress report (one batch), by queue',
    labelNames: ['queue'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
}));
