// The stack on a private Redis Cluster, and a master failover as the fault tests inject it.

import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, OwnRedisCluster, type RedisClusterNode } from '@teamchat/testing';
import { ProcessCluster } from './cluster';

/**
 * kill -9 of a master; back once one of its replicas serves `slot`, the killed node started again
 * (it rejoins as a replica) and the cluster healthy, so the next fault starts from full redundancy.
 */
export async function failover(
  redisCluster: OwnRedisCluster,
  victim: RedisClusterNode,
  slot: number,
): Promise<{ promoted: string; ms: number }> {
  const started = Date.now();
  await victim.kill();
  const deadline = Date.now() + 60_000;
  let promoted: RedisClusterNode | undefined;
  while (!promoted) {
    if (Date.now() > deadline) throw new Error(`no replica took over slot ${slot} from ${victim.address}`);
    const master = await redisCluster.masterOf(slot).catch(() => undefined);
    if (master && master !== victim) promoted = master;
    else await sleep(100);
  }
  const ms = Date.now() - started;
  await victim.start();
  await redisCluster.waitUntilHealthy();
  if ((await victim.info('role')) !== 'slave') throw new Error(`${victim.address} did not rejoin as a replica`);
  return { promoted: promoted.address, ms };
}

/**
 * The stack as processes on a private Redis Cluster (3 masters with a replica each, appendfsync
 * always) and a test database, with REDIS_WAIT_REPLICAS=1: the event tier's writes count once
 * the master's replica holds them, else a master killed right after answering may take an index
 * entry or an intake entry with it.
 */
export async function startOnRedisCluster(options: {
  nodeTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
  maxLogLines?: number;
}): Promise<{ redisCluster: OwnRedisCluster; cluster: ProcessCluster; stop(): Promise<void> }> {
  const redisCluster = await OwnRedisCluster.start({ persistent: true, nodeTimeoutMs: options.nodeTimeoutMs });
  const database = await createTestDatabase().catch(async (error: unknown) => {
    await redisCluster.stop();
    throw error;
  });
  const cluster = await ProcessCluster.start({
    databaseUrl: database.url,
    // Only its credentials count (none here): the processes use the cluster's seed list.
    redisUrl: `redis://${redisCluster.nodes[0].address}`,
    redisClusterNodes: redisCluster.seedList,
    eventReplicas: 2,
    maxLogLines: options.maxLogLines,
    env: { REDIS_WAIT_REPLICAS: '1', ...options.env },
  }).catch(async (error: unknown) => {
    await database.drop();
    await redisCluster.stop();
    throw error;
  });
  return {
    redisCluster,
    cluster,
    stop: async () => {
      await cluster.stop();
      await database.drop();
      await redisCluster.stop();
    },
  };
}
