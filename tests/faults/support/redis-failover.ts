// A Redis Cluster master failover as the fault tests inject it: kill -9 of a master, wait until
// one of its replicas serves the slot, start the killed node again (it rejoins as a replica) and
// wait for a healthy cluster, so the next fault starts from full redundancy.

import { setTimeout as sleep } from 'node:timers/promises';
import type { OwnRedisCluster, RedisClusterNode } from '@teamchat/testing';

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
