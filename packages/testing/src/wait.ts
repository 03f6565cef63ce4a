// Waiting in tests: a pause, and polling until something holds. No timing is asserted: a timeout
// only ends a wait that would never succeed, with a message that says what was awaited.

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface WaitOptions {
  /** Give up after this long (default 30 s, half of jest's test timeout). */
  timeoutMs?: number;
  /** Pause between checks (default 50 ms). */
  intervalMs?: number;
  /** What is awaited, for the timeout's message; a function is called at the timeout, to describe the state reached. */
  what?: string | (() => string);
}

type Falsy = false | 0 | '' | null | undefined;

/**
 * Calls `condition` until it answers a truthy value, and answers that value (a row, a request, or
 * `true`). After `timeoutMs` it throws "gave up waiting for <what> after <n> ms"; without `what`
 * the message quotes the condition's source.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 30_000, intervalMs = 50, what }: WaitOptions = {},
): Promise<Exclude<T, Falsy>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Exclude<T, Falsy>;
    if (Date.now() > deadline) {
      const awaited = typeof what === 'function' ? what() : (what ?? String(condition).replace(/\s+/g, ' '));
      throw new Error(`gave up waiting for ${awaited} after ${timeoutMs} ms`);
    }
    await sleep(intervalMs);
  }
}
