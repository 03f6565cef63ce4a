// How close the event tier's Redis is to its maxmemory. Redis runs with `noeviction`: at the
// limit every write fails (queue appends, intake, jobs), so the headroom is alerted on
// (infra/prometheus/alerts.yml, TeamchatRedisMemoryHeadroom) well before it runs out.

import { forEachMaster, type Redis } from '@teamchat/bus';
import type { Logger } from '@teamchat/core';
import { eventTierMetrics } from '@teamchat/telemetry';

export interface RedisMemory {
  usedBytes: number;
  /** 0: no limit. */
  maxBytes: number;
}

/** used_memory and maxmemory from the text of `INFO memory`; undefined when either is missing. */
export function parseRedisMemory(info: string): RedisMemory | undefined {
  const field = (name: string) => {
    const match = new RegExp(`^${name}:(\\d+)\\r?$`, 'm').exec(info);
    return match ? Number(match[1]) : undefined;
  };
  const usedBytes = field('used_memory');
  const maxBytes = field('maxmemory');
  return usedBytes === undefined || maxBytes === undefined ? undefined : { usedBytes, maxBytes };
}

export interface RedisMemorySampler {
  /** Samples once now (also what the timer does). */
  sample(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Samples `INFO memory` of every master into teamchat_redis_memory_{used,max}_bytes{node} at once and then every
 * `intervalMs`. While Redis is not connected nothing is sent (a command would wait in the
 * offline queue, and the gauges keep their last value); one failure is logged per outage.
 */
export function startRedisMemorySampler(redis: Redis, logger: Logger, intervalMs = 10_000): RedisMemorySampler {
  const metrics = eventTierMetrics();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  let failing = false;

  const sampleOnce = async () => {
    if (redis.status !== 'ready') return;
    try {
      // Each master of a Redis Cluster fills up on its own: one series per node.
      await forEachMaster(redis, async (node) => {
        const memory = parseRedisMemory(await node.info('memory'));
        if (!memory) throw new Error('INFO memory lacks used_memory or maxmemory');
        const labels = { node: `${node.options.host}:${node.options.port}` };
        metrics.redisMemoryUsedBytes.set(labels, memory.usedBytes);
        metrics.redisMemoryMaxBytes.set(labels, memory.maxBytes);
      });
      failing = false;
    } catch (error) {
      if (!failing) logger.warn({ err: error }, 'redis memory sample failed');
      failing = true;
    }
  };
  // One sample at a time: a slow Redis must not pile them up.
  const sample = () => (inFlight ??= sampleOnce().finally(() => (inFlight = undefined)));

  const tick = () => {
    void sample().finally(() => {
      if (stopped) return;
      timer = setTimeout(tick, intervalMs);
      timer.unref();
    });
  };
  tick();

  return {
    sample,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}
