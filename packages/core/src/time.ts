/**
 * Waits for `work` to settle, but at most `ms`: for shutdown steps that must not hang on a
 * dependency that never answers. The timer is cleared, so it never keeps the process alive.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  await fulfilledWithin(work.then(noop, noop), ms);
}

/**
 * Whether `work` fulfilled within `ms` (false when it is still pending then); rejects when it
 * rejected in time. The timer is cleared, so it never keeps the process alive.
 */
export async function fulfilledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Repeating {
  /** No further round starts; waits for the one in progress, at most `boundMs`. */
  stop(boundMs: number): Promise<void>;
}

/**
 * Runs `round` after `firstDelayMs`, then again `intervalMs` after each round settles (never two
 * at once, so a slow dependency does not pile rounds up). A failed round goes to `onError`.
 */
export function repeat(
  round: () => Promise<unknown>,
  options: { intervalMs: number; firstDelayMs?: number; onError: (error: unknown) => void },
): Repeating {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const loop = () => {
    if (stopped) return;
    running = round()
      .catch(options.onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, options.intervalMs);
      });
  };
  timer = setTimeout(loop, options.firstDelayMs ?? options.intervalMs);
  return {
    async stop(boundMs) {
      stopped = true;
      clearTimeout(timer);
      await settledWithin(running, boundMs);
    },
  };
}

function noop(): void {}
