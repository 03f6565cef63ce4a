// Metrics and one log line per BullMQ job attempt, for every Worker in the process, without
// touching the worker's code: an OpenTelemetry instrumentation that wraps bullmq's Worker and
// Job when they are first required (the preload registers it before the service loads).
//
// - teamchat_jobs_processed_total / teamchat_job_duration_seconds: per attempt, by outcome;
// - teamchat_job_batch_duration_seconds: jobs work in batches and report progress after each
//   one (packages/bus/src/jobs.ts), so the time between two progress reports is one batch;
// - teamchat_jobs{queue,state}: counts read from Redis at scrape time for every queue a
//   running Worker consumes (what the worker autoscaler scales on).
//
// The processor function itself is wrapped (per Worker, when it starts running), not
// Worker.prototype.callProcessJob: that method belongs to the BullMQ tracing instrumentation,
// and OpenTelemetry's _wrap replaces an existing wrapper instead of stacking on it. Inside
// callProcessJob the consumer span is active, so the job's log line carries its trace id.

import {
  InstrumentationBase,
  InstrumentationNodeModuleDefinition,
  type InstrumentationConfig,
} from '@opentelemetry/instrumentation';
import { onScrape } from './metrics';
import { processLogger } from './process-hooks';
import { jobMetrics } from './standard-metrics';

/** The parts of bullmq's classes this instrumentation uses. */
interface BullJob {
  id?: string;
  name: string;
  queueName: string;
  attemptsMade: number;
}
type Processor = (job: BullJob, ...rest: unknown[]) => Promise<unknown>;
interface BullWorker {
  name: string;
  processFn?: Processor;
  opts: { prefix?: string };
  closing?: Promise<void>;
  client: Promise<unknown>;
}
interface BullQueue {
  getJobCounts(...states: string[]): Promise<Record<string, number>>;
}
interface BullmqExports {
  Worker: { prototype: { run: (...args: unknown[]) => Promise<unknown> } };
  Job: { prototype: { updateProgress: (progress: unknown) => Promise<void> } };
  Queue: new (name: string, opts: { connection: unknown; prefix?: string }) => BullQueue;
}

const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed', 'completed'];

export class JobMetricsInstrumentation extends InstrumentationBase<InstrumentationConfig> {
  private readonly runningWorkers = new Set<BullWorker>();
  /** One getter Queue per consumed queue, on the worker's own (non-blocking) connection. */
  private readonly countQueues = new Map<string, BullQueue>();
  /** When the current batch of a job attempt started (the attempt's start or its last progress report). */
  private readonly batchStarted = new WeakMap<object, number>();
  private readonly measuredProcessors = new WeakSet<Processor>();
  private removeScrapeHook?: () => void;

  constructor(config: InstrumentationConfig = {}) {
    super('@teamchat/telemetry/bullmq-jobs', '0.1.0', config);
  }

  protected init() {
    return new InstrumentationNodeModuleDefinition(
      'bullmq',
      ['>=5 <6'],
      (exports: BullmqExports) => {
        this.patch(exports);
        return exports;
      },
      (exports: BullmqExports) => {
        this._unwrap(exports.Worker.prototype, 'run');
        this._unwrap(exports.Job.prototype, 'updateProgress');
        this.removeScrapeHook?.();
      },
    );
  }

  /** The processor, timed and counted, with one log line per attempt. */
  private measure(processor: Processor): Processor {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the wrapper's own `this` is BullMQ's
    const instrumentation = this;
    const metrics = jobMetrics();
    return async function measuredProcessor(this: unknown, job: BullJob, ...rest: unknown[]) {
      const started = performance.now();
      instrumentation.batchStarted.set(job, started);
      let outcome: 'completed' | 'failed' = 'failed';
      try {
        const result = await processor.apply(this, [job, ...rest]);
        outcome = 'completed';
        return result;
      } finally {
        const seconds = (performance.now() - started) / 1000;
        metrics.processed.inc({ queue: job.queueName, outcome });
        metrics.duration.observe({ queue: job.queueName, outcome }, seconds);
        processLogger()?.info(
          {
            queue: job.queueName,
            job_id: job.id,
            job_name: job.name,
            attempt: job.attemptsMade + 1,
            outcome,
            ms: Math.round(seconds * 1e4) / 10,
          },
          'job',
        );
      }
    };
  }

  private patch(bullmq: BullmqExports): void {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the wrapper's own `this` is BullMQ's
    const instrumentation = this;
    const metrics = jobMetrics();

    this._wrap(
      bullmq.Worker.prototype,
      'run',
      (original) =>
        async function run(this: BullWorker, ...args: unknown[]) {
          if (this.processFn && !instrumentation.measuredProcessors.has(this.processFn)) {
            this.processFn = instrumentation.measure(this.processFn);
            instrumentation.measuredProcessors.add(this.processFn);
          }
          instrumentation.runningWorkers.add(this);
          try {
            return await original.apply(this, args);
          } finally {
            instrumentation.runningWorkers.delete(this);
          }
        },
    );

    this._wrap(
      bullmq.Job.prototype,
      'updateProgress',
      (original) =>
        async function updateProgress(this: BullJob, progress: unknown) {
          const batchStarted = instrumentation.batchStarted.get(this);
          const now = performance.now();
          if (batchStarted !== undefined) {
            metrics.batchDuration.observe({ queue: this.queueName }, (now - batchStarted) / 1000);
            instrumentation.batchStarted.set(this, now);
          }
          return original.call(this, progress);
        },
    );

    this.removeScrapeHook?.();
    this.removeScrapeHook = onScrape(async () => {
      const seen = new Set<string>();
      for (const worker of this.runningWorkers) {
        const key = `${worker.opts.prefix ?? 'bull'}\u0000${worker.name}`;
        if (worker.closing || seen.has(key)) continue;
        seen.add(key);
        let queue = this.countQueues.get(key);
        if (!queue) {
          queue = new bullmq.Queue(worker.name, { connection: await worker.client, prefix: worker.opts.prefix });
          this.countQueues.set(key, queue);
        }
        const counts = await queue.getJobCounts(...JOB_STATES);
        for (const state of JOB_STATES) metrics.jobs.set({ queue: worker.name, state }, counts[state] ?? 0);
      }
    });
  }
}
