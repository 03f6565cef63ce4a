// A Redis command's span under the telemetry preload, in a process of its own (OpenTelemetry
// patches modules as Node loads them, which jest's module registry bypasses): a command ioredis
// gave up and then got a reply for is one span, ended once, and OpenTelemetry logs nothing about
// it (the ioredis instrumentation ends the span again on the late reply: each Redis failover
// logged a thousand or more such warnings, hiding the ones that matter).

import fs from 'node:fs';
import path from 'node:path';
import { bundleWithPreload, runBundle } from './support/bundle';
import { OtlpReceiver } from './support/otlp-receiver';

jest.setTimeout(60_000);

let bundle: Awaited<ReturnType<typeof bundleWithPreload>>;
beforeAll(async () => {
  bundle = await bundleWithPreload(path.join(__dirname, 'fixtures/redis-late-reply.ts'), 'fixture-redis');
});
afterAll(() => {
  if (bundle) fs.rmSync(bundle.dir, { recursive: true, force: true });
});

test('a command given up by ioredis and answered late is one span, ended once, with no OpenTelemetry warning', async () => {
  const receiver = await OtlpReceiver.start();
  try {
    const run = await runBundle(bundle, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const result = run.lines.find((line) => line.msg === 'result')!;
    expect(result.answer).toBe('Command timed out');
    const commands = receiver.trace(result.traceId).filter((span) => span.name === 'blpop');
    expect(commands).toHaveLength(1);
  } finally {
    await receiver.close();
  }
});
