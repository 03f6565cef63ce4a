// The gateway's short cache of API-key lookups, and its invalidation. Actions that change
// what authentication depends on (key, email, role, activity of a user or realm) call
// invalidateAuthCache after their transaction commits: it deletes the Redis entries and
// announces them to every gateway, which drops its in-process copies.

import { crossSlotPipeline, RedisKeys, type Redis } from './redis';

export const AUTH_CACHE_TTL_SECONDS = 60;

export interface CachedAuth {
  userId: number;
  realmId: number;
  role: number;
  email: string;
  deliveryEmail: string;
  isBot: boolean;
  isActive: boolean;
  realmDeactivated: boolean;
}

export async function readAuthCache(redis: Redis, prefix: string, apiKeyHash: string): Promise<CachedAuth | null> {
  const cached = await redis.get(new RedisKeys(prefix).auth(apiKeyHash));
  return cached ? (JSON.parse(cached) as CachedAuth) : null;
}

export async function writeAuthCache(
  redis: Redis,
  prefix: string,
  apiKeyHash: string,
  auth: CachedAuth,
): Promise<void> {
  await redis.set(new RedisKeys(prefix).auth(apiKeyHash), JSON.stringify(auth), 'EX', AUTH_CACHE_TTL_SECONDS);
}

export async function invalidateAuthCache(redis: Redis, prefix: string, apiKeyHashes: string[]): Promise<void> {
  if (apiKeyHashes.length === 0) return;
  const keys = new RedisKeys(prefix);
  // The entries first, then the announcement: a gateway that re-reads on the announcement finds them gone.
  // One DEL per key, as their slots differ in a Redis Cluster.
  const deletes = crossSlotPipeline(redis);
  for (const hash of apiKeyHashes) deletes.del(keys.auth(hash));
  for (const [error] of (await deletes.exec()) ?? []) if (error) throw error;
  // A shard channel: SPUBLISH answers after the slot's master queued it for every subscriber
  // there, where a Cluster's PUBLISH reaches subscribers on other nodes later, over the cluster bus.
  const channel = keys.authInvalidations();
  await redis.spublish(channel, JSON.stringify(apiKeyHashes));
  // Queued is not sent: Redis may write our answer before the subscribers' copies, and a Redis
  // preempted between those writes (a loaded host) let a gateway serve a regenerated key from
  // memory once. Redis writes all it queued before it reads its next command, so the answer to
  // one more command on that node (a key named as the channel is in the channel's slot) means
  // every copy has left Redis before the action answers.
  await redis.exists(channel);
}
