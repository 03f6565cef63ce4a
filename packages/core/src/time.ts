/**
 * Waits for `work` to settle, but at most `ms`: for shutdown steps that must not hang on a
 * dependency that never answers. The timer is cleared, so it never keeps the process alive.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([work.then(noop, noop), late]);
  } finally {
    clearTimeout(timer);
  }
}

function noop(): void {}
