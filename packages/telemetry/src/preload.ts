// The telemetry preload: scripts/build.mjs bundles it into services/<name>/dist/telemetry.js and
// every launcher runs `node --require ./dist/telemetry.js dist/main.js`, so OpenTelemetry is
// set up before the service requires http, express, pg, ioredis or bullmq.
// A failure here is reported and the service boots without tracing: telemetry never stops it.

import path from 'node:path';
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { startTelemetry } from './sdk';

// Replaced by scripts/build.mjs with the service's name; absent when run from source.
declare const TEAMCHAT_SERVICE: string | undefined;

const serviceName =
  typeof TEAMCHAT_SERVICE === 'string' ? TEAMCHAT_SERVICE : path.basename(path.resolve(__dirname, '..'));

/** OpenTelemetry's own warnings (an unreachable collector, a dropped span) as JSON lines on stderr. */
function jsonDiagLogger(): DiagLogger {
  const write =
    (level: string) =>
    (message: string, ...args: unknown[]) => {
      const detail = args
        .map((arg) => (arg instanceof Error ? arg.message : typeof arg === 'string' ? arg : JSON.stringify(arg)))
        .join(' ');
      process.stderr.write(
        `${JSON.stringify({ level, time: new Date().toISOString(), service: serviceName, msg: `opentelemetry: ${message}${detail ? ` ${detail}` : ''}` })}\n`,
      );
    };
  return {
    error: write('error'),
    warn: write('warn'),
    info: write('info'),
    debug: write('debug'),
    verbose: write('trace'),
  };
}

if (!process.env.OTEL_LOG_LEVEL) diag.setLogger(jsonDiagLogger(), DiagLogLevel.WARN);

try {
  startTelemetry({ serviceName });
} catch (error) {
  process.stderr.write(
    `${JSON.stringify({ level: 'warn', time: new Date().toISOString(), service: serviceName, msg: `telemetry disabled: ${(error as Error).message}` })}\n`,
  );
}
