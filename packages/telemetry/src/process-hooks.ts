// What the telemetry preload and the service bundle hand each other inside one process. They
// are separate bundles (each with its own copy of this code), so they meet on globalThis.

/** The smallest logger interface the preload needs (pino's). */
export interface HookLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

interface ProcessHooks {
  /** Set by the preload: flushes and stops tracing. */
  shutdownTracing?: () => Promise<void>;
  /** Set by the service at boot: the preload's job log lines go through it. */
  logger?: HookLogger;
}

const HOOKS_KEY = Symbol.for('teamchat.telemetry.process');

function hooks(): ProcessHooks {
  const holder = globalThis as unknown as Record<symbol, ProcessHooks | undefined>;
  return (holder[HOOKS_KEY] ??= {});
}

export function setTracingShutdown(shutdown: (() => Promise<void>) | undefined): void {
  hooks().shutdownTracing = shutdown;
}

/**
 * Sends the spans still buffered and stops tracing (no-op when the preload did not start it).
 * Called by serve() right before the process exits; waits at most `timeoutMs`.
 */
export async function flushTelemetry(timeoutMs = 3_000): Promise<void> {
  const shutdown = hooks().shutdownTracing;
  if (!shutdown) return;
  hooks().shutdownTracing = undefined;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    shutdown().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    }),
  ]);
  clearTimeout(timer);
}

/** The service's logger, registered at boot so the preload can write through it. */
export function setProcessLogger(logger: HookLogger): void {
  hooks().logger = logger;
}

export function processLogger(): HookLogger | undefined {
  return hooks().logger;
}
