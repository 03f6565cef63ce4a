// The process's Prometheus metrics: one registry per process, served at GET /metrics by every
// service (packages/runtime's serve() and createServiceApp in packages/core). Services add
// their own counters, gauges and histograms here (docs/operations.md lists them all).
//
// The telemetry preload (dist/telemetry.js) and the service bundle (dist/main.js) each carry a
// copy of this module, so the registry lives on globalThis: both copies see the same one.

import client from 'prom-client';

export type Counter<L extends string = string> = client.Counter<L>;
export type Gauge<L extends string = string> = client.Gauge<L>;
export type Histogram<L extends string = string> = client.Histogram<L>;

/** Runs before every scrape, to refresh gauges that are read rather than counted. */
export type ScrapeHook = () => Promise<void> | void;

interface MetricsState {
  registry: client.Registry;
  scrapeHooks: Set<ScrapeHook>;
}

const STATE_KEY = Symbol.for('teamchat.telemetry.metrics');
/** Longest a scrape waits for one hook (a slow Redis must not make the scrape time out). */
const SCRAPE_HOOK_TIMEOUT_MS = 2_000;

function state(): MetricsState {
  const holder = globalThis as unknown as Record<symbol, MetricsState | undefined>;
  let current = holder[STATE_KEY];
  if (!current) {
    const registry = new client.Registry();
    // process_* and nodejs_* (CPU, memory, event-loop lag, GC, handles).
    client.collectDefaultMetrics({ register: registry });
    current = { registry, scrapeHooks: new Set() };
    holder[STATE_KEY] = current;
  }
  return current;
}

export function metricsRegistry(): client.Registry {
  return state().registry;
}

interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

/**
 * Get-or-create by name, so a module that defines a metric can be loaded (or an app built)
 * more than once in a process. A second definition with other labels or another type is a bug.
 */
function getOrCreate<M extends client.Metric<string>>(
  name: string,
  type: string,
  labelNames: readonly string[],
  create: () => M,
): M {
  const existing = state().registry.getSingleMetric(name) as
    (client.Metric<string> & { labelNames?: string[] }) | undefined;
  if (existing) {
    const existingType = (existing as unknown as { type?: string }).type ?? existing.constructor.name.toLowerCase();
    const sameLabels =
      JSON.stringify([...(existing.labelNames ?? [])].sort()) === JSON.stringify([...labelNames].sort());
    if (existingType !== type || !sameLabels) {
      throw new Error(
        `metric ${name} is already defined as a ${existingType} with labels [${existing.labelNames?.join(', ')}]`,
      );
    }
    return existing as M;
  }
  return create();
}

export function counter<L extends string>(options: MetricOptions<L>): Counter<L> {
  const labelNames = options.labelNames ?? [];
  return getOrCreate(
    options.name,
    'counter',
    labelNames,
    () => new client.Counter<L>({ ...options, labelNames, registers: [state().registry] }),
  );
}

export function gauge<L extends string>(options: MetricOptions<L>): Gauge<L> {
  const labelNames = options.labelNames ?? [];
  return getOrCreate(
    options.name,
    'gauge',
    labelNames,
    () => new client.Gauge<L>({ ...options, labelNames, registers: [state().registry] }),
  );
}

export function histogram<L extends string>(options: MetricOptions<L> & { buckets?: number[] }): Histogram<L> {
  const labelNames = options.labelNames ?? [];
  return getOrCreate(
    options.name,
    'histogram',
    labelNames,
    () => new client.Histogram<L>({ ...options, labelNames, registers: [state().registry] }),
  );
}

type Labels<L extends string> = Partial<Record<L, string | number>>;

/**
 * Changes to a labelled counter or gauge, summed in plain numbers under a key the caller builds
 * and applied before each scrape. prom-client hashes and checks the labels on every inc() and
 * dec(); per long-poll answered, with the in-flight gauge up and down and the request counter,
 * that was most of the request metrics' ~5 % of an event replica's CPU (bench/README.md, events).
 */
export class DeferredCounts<L extends string> {
  private readonly pending = new Map<string, { labels: Labels<L>; delta: number; exported: boolean }>();

  constructor(private readonly metric: Counter<L> | Gauge<L>) {
    onScrape(() => this.flush());
  }

  /** Adds `delta` to the series `key` names; `labels` (the same for every call with that key) is read once. */
  add(key: string, labels: () => Labels<L>, delta = 1): void {
    const entry = this.pending.get(key);
    if (entry) entry.delta += delta;
    else this.pending.set(key, { labels: labels(), delta, exported: false });
  }

  flush(): void {
    for (const entry of this.pending.values()) {
      if (entry.delta < 0) (this.metric as Gauge<L>).dec(entry.labels, -entry.delta);
      // A series is exported from its first change on, even one that summed to 0 (a gauge's +1 -1).
      else if (entry.delta > 0 || !entry.exported) this.metric.inc(entry.labels, entry.delta);
      entry.exported = true;
      entry.delta = 0;
    }
  }
}

/** Registers a hook that runs before every scrape; returns a function that removes it. */
export function onScrape(hook: ScrapeHook): () => void {
  // Exported at 0 from the first hook on, so dashboards and increase() see its first failure.
  scrapeFailures();
  state().scrapeHooks.add(hook);
  return () => state().scrapeHooks.delete(hook);
}

const scrapeFailures = () =>
  counter({
    name: 'teamchat_metrics_scrape_hook_failures_total',
    help: 'Scrape hooks that failed or timed out (their gauges keep their previous value)',
  });

async function runScrapeHooks(): Promise<void> {
  await Promise.all(
    [...state().scrapeHooks].map(async (hook) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(hook),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('scrape hook timed out')), SCRAPE_HOOK_TIMEOUT_MS);
            timer.unref();
          }),
        ]);
      } catch {
        scrapeFailures().inc();
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

export interface MetricsExposition {
  contentType: string;
  body: string;
}

/** The Prometheus text exposition of every metric of the process. */
export async function renderMetrics(): Promise<MetricsExposition> {
  await runScrapeHooks();
  const registry = state().registry;
  return { contentType: registry.contentType, body: await registry.metrics() };
}
