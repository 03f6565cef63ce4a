// BullMQ under the telemetry preload, in a process of its own (OpenTelemetry patches modules
// as Node loads them, which jest's module registry bypasses): a job carries the trace context
// of the request that enqueued it and the worker continues that trace; every attempt gets a
// log line with the trace id and the job metrics; the job's data never reaches a span.

import fs from 'node:fs';
import path from 'node:path';
import { bundleWithPreload, runBundle } from './support/bundle';
import { OtlpReceiver, SpanKind } from './support/otlp-receiver';
import { parseExposition, sampleValue } from './support/prometheus';

jest.setTimeout(60_000);

let bundle: Awaited<ReturnType<typeof bundleWithPreload>>;

beforeAll(async () => {
  bundle = await bundleWithPreload(path.join(__dirname, 'fixtures/job-roundtrip.ts'), 'fixture-worker');
});

afterAll(() => {
  if (bundle) fs.rmSync(bundle.dir, { recursive: true, force: true });
});

const runFixture = (env: NodeJS.ProcessEnv) => runBundle(bundle, env);

test('a job continues the trace of the request that enqueued it, with a log line and metrics per attempt', async () => {
  const receiver = await OtlpReceiver.start();
  try {
    const run = await runFixture({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const result = run.lines.find((line) => line.msg === 'result')!;
    const { completes, fails } = result.traceIds as Record<string, string>;

    for (const [traceId, outcome] of [
      [completes, 'completed'],
      [fails, 'failed'],
    ]) {
      const spans = receiver.trace(traceId);
      const request = spans.find((span) => span.name === `request ${outcome === 'completed' ? 'completes' : 'fails'}`)!;
      const producer = spans.find((span) => span.kind === SpanKind.PRODUCER)!;
      const consumer = spans.find((span) => span.kind === SpanKind.CONSUMER)!;
      expect(request).toBeDefined();
      // request → Queue.add (producer) → the worker's processing (consumer): one trace.
      expect(producer).toMatchObject({ serviceName: 'fixture-worker', parentSpanId: request.spanId });
      expect(consumer).toMatchObject({ serviceName: 'fixture-worker', parentSpanId: producer.spanId });
      expect(consumer.attributes['messaging.destination.name']).toBe('roundtrip');
      // Redis commands the job made are part of the trace (progress reports).
      expect(
        spans.some(
          (span) =>
            (span.attributes['db.system'] ?? span.attributes['db.system.name']) === 'redis' &&
            span.parentSpanId === consumer.spanId,
        ),
      ).toBe(true);

      const processing = run.lines.find((line) => line.msg === 'processing' && line.trace_id === traceId);
      expect(processing).toMatchObject({ span_id: consumer.spanId });
      const jobLine = run.lines.find((line) => line.msg === 'job' && line.trace_id === traceId);
      expect(jobLine).toMatchObject({
        service: 'fixture',
        queue: 'roundtrip',
        outcome,
        attempt: 1,
        ms: expect.any(Number),
      });
    }

    // Job data (Lua script arguments) never reaches a span; the log line masked it by name.
    expect(JSON.stringify(receiver.spans)).not.toContain('job-data-secret-value');
    expect(JSON.stringify(run.lines)).not.toContain('job-data-secret-value');

    const metrics = parseExposition(result.metrics);
    expect(sampleValue(metrics, 'teamchat_jobs_processed_total', { queue: 'roundtrip', outcome: 'completed' })).toBe(1);
    expect(sampleValue(metrics, 'teamchat_jobs_processed_total', { queue: 'roundtrip', outcome: 'failed' })).toBe(1);
    expect(
      sampleValue(metrics, 'teamchat_job_duration_seconds_count', { queue: 'roundtrip', outcome: 'completed' }),
    ).toBe(1);
    // Two progress reports per attempt: two batches each.
    expect(sampleValue(metrics, 'teamchat_job_batch_duration_seconds_count', { queue: 'roundtrip' })).toBe(4);
    expect(sampleValue(metrics, 'teamchat_jobs', { queue: 'roundtrip', state: 'completed' })).toBe(1);
    expect(sampleValue(metrics, 'teamchat_jobs', { queue: 'roundtrip', state: 'failed' })).toBe(1);
    expect(sampleValue(metrics, 'teamchat_jobs', { queue: 'roundtrip', state: 'waiting' })).toBe(0);
  } finally {
    await receiver.close();
  }
});

test('without an OTLP endpoint nothing is exported, yet every log line still carries its trace id', async () => {
  const run = await runFixture({});
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  const result = run.lines.find((line) => line.msg === 'result')!;
  const jobLine = run.lines.find((line) => line.msg === 'job' && line.outcome === 'completed');
  expect(jobLine?.trace_id).toBe(result.traceIds.completes);
  expect(jobLine?.trace_id).toMatch(/^[0-9a-f]{32}$/);
});
