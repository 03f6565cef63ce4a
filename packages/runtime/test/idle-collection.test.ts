import v8 from 'node:v8';
import vm from 'node:vm';
import { createLogger } from '@teamchat/core';
import { collectWhenIdle, exposedHeap, type Heap } from '../src/idle-collection';

const MB = 1024 * 1024;
const options = { intervalMs: 1000, idleUtilization: 0.1, growthBytes: 32 * MB };

/** A heap whose used size the test sets; a collection brings it down to `live`. */
function fakeHeap(used: number) {
  const heap = {
    used,
    live: used,
    collections: 0,
    usedBytes: () => heap.used,
    collect: () => {
      heap.collections++;
      heap.used = heap.live;
    },
  };
  return heap satisfies Heap;
}

describe('collectWhenIdle', () => {
  const logger = createLogger('test', 'silent');
  let stop: () => void = () => undefined;
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    stop();
    jest.useRealTimers();
  });

  it('collects once the loop goes idle after the heap grew, and not again until it grows again', () => {
    const heap = fakeHeap(50 * MB);
    let busy = 0.9;
    stop = collectWhenIdle(heap, logger, options, () => busy);
    heap.used = 200 * MB; // a burst: 150 MB more, most of it garbage
    heap.live = 60 * MB;
    jest.advanceTimersByTime(3000);
    expect(heap.collections).toBe(0); // busy: V8's own collector decides

    busy = 0.02;
    jest.advanceTimersByTime(1000);
    expect(heap.collections).toBe(1);
    expect(heap.used).toBe(60 * MB);

    heap.used = 80 * MB; // idle, grown by less than growthBytes
    jest.advanceTimersByTime(5000);
    expect(heap.collections).toBe(1);

    heap.used = 60 * MB + 50 * MB; // grown by more than growthBytes, but not doubled
    jest.advanceTimersByTime(1000);
    expect(heap.collections).toBe(1);

    heap.used = 2 * 60 * MB;
    jest.advanceTimersByTime(1000);
    expect(heap.collections).toBe(2);
  });

  it('measures growth from the smallest reading, so a collection V8 made itself counts', () => {
    const heap = fakeHeap(150 * MB);
    stop = collectWhenIdle(heap, logger, options, () => 0);
    heap.used = 20 * MB; // V8 collected on its own
    jest.advanceTimersByTime(1000);
    heap.used = 50 * MB; // 30 MB over the low mark, 100 MB under the first reading
    jest.advanceTimersByTime(1000);
    expect(heap.collections).toBe(0);
    heap.used = 53 * MB;
    jest.advanceTimersByTime(1000);
    expect(heap.collections).toBe(1);
  });
});

describe('exposedHeap', () => {
  it('is absent without --expose-gc', () => {
    expect(exposedHeap()).toBeUndefined();
  });

  it('gives back the pages a burst left in the old space in one collection, not only their objects', () => {
    // This jest worker runs without --expose-gc: turn it on and take the function as node would.
    v8.setFlagsFromString('--expose-gc');
    const global = globalThis as { gc?: () => void };
    const gc = vm.runInNewContext('gc') as () => void;
    global.gc = gc;
    const free = () => {
      const space = v8.getHeapSpaceStatistics().find((each) => each.space_name === 'old_space')!;
      return space.space_size - space.space_used_size;
    };
    /** Objects that live long enough to be promoted; one in 20 stays (a parked poll), on every page. */
    const burst = () => {
      const objects: { id: number; name: string }[] = [];
      for (let i = 0; i < 400_000; i++) objects.push({ id: i, name: `poll ${i}` });
      return objects.filter((_, i) => i % 20 === 0);
    };
    try {
      const heap = exposedHeap()!;
      // What V8's own full collection does after a burst: frees the objects, keeps their pages.
      // (Compared, not absolute: a jest worker's heap holds other suites' pages too.)
      const first = burst();
      gc();
      const keptByPlain = free();
      const second = burst();
      heap.collect();
      expect(free()).toBeLessThan(keptByPlain - 10 * MB);
      expect(first.length + second.length).toBe(40_000);
    } finally {
      delete global.gc;
    }
  });
});
