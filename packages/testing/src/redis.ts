import {
  createRedis,
  forEachMaster,
  isCluster,
  sameSlotGroups,
  type Redis,
  type RedisClientOptions,
  type RedisTarget,
} from '@teamchat/bus';

/** The Redis the tests use (each test stack or process takes its own key prefix on it). */
export function testRedisUrl(): string {
  return process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/**
 * TEST_REDIS_CLUSTER_NODES (host:port,...): the tests' Redis is a Redis Cluster with these seed
 * nodes (npm test's cluster pass sets it); unset, the single server of testRedisUrl().
 */
export function testRedisClusterNodes(): string | undefined {
  return process.env.TEST_REDIS_CLUSTER_NODES?.trim() || undefined;
}

/** REDIS_URL and REDIS_CLUSTER_NODES for a process under test (the cluster's credentials come from the URL). */
export function testRedisTarget(): Required<RedisTarget> | Pick<RedisTarget, 'REDIS_URL'> {
  const nodes = testRedisClusterNodes();
  return nodes ? { REDIS_URL: testRedisUrl(), REDIS_CLUSTER_NODES: nodes } : { REDIS_URL: testRedisUrl() };
}

/** A test's own connection to the tests' Redis (a Cluster in the cluster pass); quit() it. */
export function testRedisConnection(options: RedisClientOptions = {}): Redis {
  return createRedis(testRedisTarget(), options);
}

/** Every key matching a SCAN pattern, from every master of a Cluster (KEYS asks one node only). */
export async function testRedisKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  await forEachMaster(redis, async (node) => {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
  });
  return found;
}

/** Deletes every key matching a SCAN pattern (one DEL per slot in a Cluster, which refuses cross-slot DELs). */
export async function deleteTestRedisKeys(redis: Redis, pattern: string): Promise<number> {
  const groups = sameSlotGroups(redis, await testRedisKeys(redis, pattern));
  const deleted = await Promise.all(groups.map((keys) => redis.del(...keys)));
  return deleted.reduce((sum, count) => sum + count, 0);
}

/**
 * The connections to each server behind `redis`, by address: itself for a single server, one per
 * node (masters and replicas) of a Cluster. Server-local commands (CLIENT LIST/KILL, INFO) go to each.
 */
export function testRedisServers(redis: Redis): { address: string; server: Redis }[] {
  const servers = isCluster(redis) ? redis.nodes('all') : [redis];
  return servers.map((server) => ({ address: `${server.options.host}:${server.options.port}`, server }));
}
