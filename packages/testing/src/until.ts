import { sleep } from './wait';

/**
 * Polls `check` every 50 ms until it holds or `timeoutMs` passed; answers whether it held. The
 * caller asserts on the answer, so a timeout fails where the expectation is written.
 */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}
