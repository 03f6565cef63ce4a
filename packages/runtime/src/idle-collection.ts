// A full garbage collection once the process goes quiet after a burst. V8 collects its old
// generation when allocating makes it, not when the process is idle: an event replica that
// parked 10,000 polls at once (every client re-polling after a failover or a restart) keeps the
// burst's promoted garbage (its Redis commands, promises and parsed requests, ~11 KB per poll,
// more than the parked polls themselves hold) resident for as long as it stays quiet.
// Needs node's --expose-gc (the event tier's deployment sets it); without it this does nothing.

import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import type { Logger } from '@teamchat/core';

export interface IdleCollectionOptions {
  /** How often the event loop's utilization and the heap are read. */
  intervalMs: number;
  /** At or below this share of the last interval spent running, the process counts as idle. */
  idleUtilization: number;
  /**
   * Collect only when the used heap grew this much since the last collection, and at least
   * doubled: the collection is a full, non-incremental one and pauses the process (~240 ms at
   * 75 MB live on a quiet machine, 569 ms seen at 118 MB on a busy one), so it must stay rare.
   */
  growthBytes: number;
}

export const IDLE_COLLECTION_DEFAULTS: IdleCollectionOptions = {
  intervalMs: 5000,
  idleUtilization: 0.1,
  growthBytes: 32 * 1024 * 1024,
};

export interface Heap {
  usedBytes(): number;
  collect(): void;
}

/** The process's own heap, or undefined when node runs without --expose-gc. */
export function exposedHeap(): Heap | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return undefined;
  return {
    usedBytes: () => v8.getHeapStatistics().used_heap_size,
    collect: () => {
      // Compacting every page, not only those V8 finds fragmented, moves the survivors together
      // and gives the emptied pages back: at 10,000 parked polls 170 -> 85 MB of old space and
      // RSS 347 -> 226 MB against a plain gc() (bench/README.md, events, figure 3). The flag is
      // read when a collection starts, and only this collection runs with it.
      v8.setFlagsFromString('--compact-on-every-full-gc');
      try {
        gc();
      } finally {
        v8.setFlagsFromString('--no-compact-on-every-full-gc');
      }
    },
  };
}

/** The share of the time since the last call the event loop spent running (0..1). */
export function loopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    return utilization;
  };
}

/**
 * Reads the event loop's utilization and the heap every intervalMs and collects when the loop
 * was idle and the used heap grew by growthBytes, and at least doubled, since the last collection
 * (by us or by V8: a smaller reading lowers the mark). Returns the function that stops it.
 */
export function collectWhenIdle(
  heap: Heap,
  logger: Logger,
  options: IdleCollectionOptions = IDLE_COLLECTION_DEFAULTS,
  utilization: () => number = loopUtilization(),
): () => void {
  let lowMark = heap.usedBytes();
  const timer = setInterval(() => {
    const busy = utilization();
    const used = heap.usedBytes();
    lowMark = Math.min(lowMark, used);
    const growth = used - lowMark;
    if (busy > options.idleUtilization || growth < options.growthBytes || growth < lowMark) return;
    const started = performance.now();
    heap.collect();
    lowMark = heap.usedBytes();
    logger.info(
      {
        heap_before_mb: Math.round(used / 1e6),
        heap_after_mb: Math.round(lowMark / 1e6),
        ms: Math.round(performance.now() - started),
      },
      'idle: collected the heap',
    );
  }, options.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
