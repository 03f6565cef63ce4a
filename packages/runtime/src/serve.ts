// Listening and graceful shutdown, the same for every service: on SIGTERM/SIGINT stop
// accepting connections, let the service hand back what it holds (e.g. parked polls),
// finish in-flight requests, close connections, flush telemetry, exit 0.
// Every served process also answers GET /metrics (Prometheus), on an admin port of its own
// (METRICS_PORT; by default PORT + 1000, the gateway's 9990): never on the port clients reach.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { JsonableError, settledWithin, type Logger } from '@teamchat/core';
import { flushTelemetry, renderMetrics, setProcessLogger } from '@teamchat/telemetry';
import { collectWhenIdle, exposedHeap } from './idle-collection';

export interface RunningService {
  /** Handles HTTP requests. */
  handler: http.RequestListener;
  /** Called first on shutdown: stop background work, answer parked requests. */
  drain?(): Promise<void>;
  /** Called last: close connections. */
  close(): Promise<void>;
}

export interface ServeOptions {
  name: string;
  port: number;
  host: string;
  /** Port of the admin listener serving GET /metrics; 0 or absent: metricsPortFor(port). */
  metricsPort?: number;
  logger: Logger;
  /** Longest wait for in-flight requests before closing anyway. */
  shutdownTimeoutMs?: number;
  /**
   * Longest a shutdown may take in all: past it the process exits with status 1 whatever it was
   * waiting for (a dependency that never answers must not keep a stopping pod alive). Default:
   * shutdownTimeoutMs + 10 s, well inside every Deployment's terminationGracePeriodSeconds.
   */
  shutdownDeadlineMs?: number;
}

/**
 * Connections the kernel holds for us until we accept them (capped by net.core.somaxconn). Node's
 * 511 overflowed when 10,000 long-polls came to a busy event replica at once: the dropped
 * connection attempts were retried by TCP 1, 3, 7, 15, 31, 63 s later, and polls parked two
 * minutes late.
 */
const LISTEN_BACKLOG = 8192;

export async function listen(handler: http.RequestListener, port: number, host: string): Promise<http.Server> {
  const server = http.createServer(handler);
  server.on('clientError', answerClientError);
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => resolve());
  });
  return server;
}

/**
 * A request node's parser refuses before any handler sees it (a URL or headers past the 16 KiB
 * limit, a malformed request line): answered with an error envelope, as every other refusal
 * is, instead of node's bodiless 400/431.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: import('node:stream').Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const body = JSON.stringify(
    new JsonableError(tooLarge ? 'Request header fields too large' : 'Malformed HTTP request').toJSON(),
  );
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export function serverUrl(server: http.Server): string {
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

export interface ProcessState {
  /** Set when shutdown has begun. */
  stopping: boolean;
}

function pathOf(url: string | undefined): string {
  const path = url ?? '/';
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

/** The default admin port: the service's port + 1000 (users 9101 → 10101); a random one for port 0. */
export function metricsPortFor(port: number): number {
  return port === 0 ? 0 : port + 1000;
}

/** The admin listener's handler: GET /metrics (Prometheus text), nothing else. */
export const serveMetrics: http.RequestListener = (req, res) => {
  if (pathOf(req.url) !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    return;
  }
  renderMetrics().then(
    ({ contentType, body }) => {
      res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) }).end(body);
    },
    (error: Error) => {
      res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${error.message}\n`);
    },
  );
};

/**
 * Starts the admin listener. A port already taken is logged, not fatal: metrics are for
 * watching the service, which must not fail to start over them.
 */
export async function listenMetrics(port: number, host: string, logger: Logger): Promise<http.Server | undefined> {
  const server = http.createServer(serveMetrics);
  server.keepAliveTimeout = 65_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (error) {
    logger.error({ err: error, port }, 'metrics listener failed to start; /metrics is not served');
    return undefined;
  }
  return server;
}

/**
 * The process-level behaviour in front of a service's handler: once shutdown has begun, a 503
 * from /health/ready (so no new work is routed here) and `Connection: close` on every response
 * (so keep-alive clients move to another replica).
 */
export function withProcessEndpoints(handler: http.RequestListener, state: ProcessState): http.RequestListener {
  return (req, res) => {
    const path = pathOf(req.url);
    if (state.stopping) {
      res.setHeader('Connection', 'close');
      if (path === '/health/ready') {
        res.writeHead(503, { 'Content-Type': 'application/json' }).end('{"status":"stopping"}');
        return;
      }
    }
    handler(req, res);
  };
}

/** Boots a service: listen, log, and shut down cleanly on SIGTERM or SIGINT. */
export async function serve(service: RunningService, options: ServeOptions): Promise<http.Server> {
  setProcessLogger(options.logger);
  const state: ProcessState = { stopping: false };
  const server = await listen(withProcessEndpoints(service.handler, state), options.port, options.host);
  const metricsPort = options.metricsPort || metricsPortFor(options.port);
  const metricsServer = await listenMetrics(metricsPort, options.host, options.logger);
  const metricsUrl = metricsServer ? `${serverUrl(metricsServer)}/metrics` : undefined;
  options.logger.info({ url: serverUrl(server), metrics_url: metricsUrl }, `${options.name} listening`);
  const heap = exposedHeap();
  if (heap) collectWhenIdle(heap, options.logger);
  const shutdown = async (signal: string) => {
    if (state.stopping) return;
    state.stopping = true;
    const started = Date.now();
    options.logger.info({ signal }, `${options.name} shutting down`);
    const deadline = setTimeout(
      () => {
        options.logger.error({ signal, ms: Date.now() - started }, `${options.name} shutdown deadline passed; exiting`);
        process.exit(1);
      },
      options.shutdownDeadlineMs ?? (options.shutdownTimeoutMs ?? 10_000) + 10_000,
    );
    deadline.unref();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive connections close as soon as their current response is done.
    server.closeIdleConnections();
    const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
    try {
      await service.drain?.();
      await settledWithin(closed, options.shutdownTimeoutMs ?? 10_000);
      clearInterval(idleSweep);
      server.closeAllConnections();
      // Scraped until here: the drain is visible in the metrics.
      metricsServer?.closeAllConnections();
      metricsServer?.close();
      await service.close();
      await flushTelemetry();
      options.logger.info({ signal, ms: Date.now() - started }, `${options.name} stopped`);
      process.exit(0);
    } catch (error) {
      clearInterval(idleSweep);
      options.logger.error({ err: error }, 'shutdown failed');
      await flushTelemetry();
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return server;
}
