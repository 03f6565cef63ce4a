// The short cache of API-key lookups (gateways, event replicas), and its invalidation. Actions
// that change what authentication depends on (key, email, role, activity of a user or realm)
// call invalidateAuthCache after their transaction commits: it replaces the Redis entries by
// tombstones and announces them to every process that authenticates, which drops its copies.

import { crossSlotPipeline, RedisKeys, type Redis } from './redis';

/** How long a lookup stays in Redis, and an invalidation's tombstone with it (AUTH_CACHE_TTL_SECONDS). */
export const DEFAULT_AUTH_CACHE_TTL_SECONDS = 60;

/** Where a deployment's auth cache lives and how long its entries last: any service's env. */
export interface AuthCacheEnv {
  REDIS_PREFIX: string;
  AUTH_CACHE_TTL_SECONDS: number;
}

export interface CachedAuth {
  userId: number;
  realmId: number;
  role: number;
  email: string;
  deliveryEmail: string;
  isBot: boolean;
  /** An incoming-webhook bot (bot_type 2): its key works only on /api/v1/external/. Absent in older entries. */
  isIncomingWebhook?: boolean;
  isActive: boolean;
  realmDeactivated: boolean;
}

/**
 * The cache entry of a user's own authentication, by user id (sessions resolve to a user, not a
 * key): invalidated with the user's key hashes by the same actions.
 */
export function userAuthCacheKey(userId: number): string {
  return `user:${userId}`;
}

export async function readAuthCache(redis: Redis, env: AuthCacheEnv, apiKeyHash: string): Promise<CachedAuth | null> {
  const cached = await redis.get(new RedisKeys(env.REDIS_PREFIX).auth(apiKeyHash));
  // '' is an invalidation's tombstone: read PostgreSQL.
  return cached ? (JSON.parse(cached) as CachedAuth) : null;
}

export async function writeAuthCache(
  redis: Redis,
  env: AuthCacheEnv,
  apiKeyHash: string,
  auth: CachedAuth,
): Promise<void> {
  const key = new RedisKeys(env.REDIS_PREFIX).auth(apiKeyHash);
  // NX: never over an invalidation's tombstone (see invalidateAuthCache).
  await redis.set(key, JSON.stringify(auth), 'EX', env.AUTH_CACHE_TTL_SECONDS, 'NX');
}

export async function invalidateAuthCache(redis: Redis, env: AuthCacheEnv, apiKeyHashes: string[]): Promise<void> {
  if (apiKeyHashes.length === 0) return;
  const keys = new RedisKeys(env.REDIS_PREFIX);
  // The entries first, then the announcement: a process that re-reads on the announcement finds
  // them gone. Replaced by a tombstone for the entries' lifetime, not deleted: a lookup that read
  // PostgreSQL before the change committed may write its answer after this, and would otherwise
  // serve the old key from Redis for the entries' lifetime (writeAuthCache does not write over a
  // tombstone).
  // One SET per key, as their slots differ in a Redis Cluster.
  const tombstones = crossSlotPipeline(redis);
  for (const hash of apiKeyHashes) tombstones.set(keys.auth(hash), '', 'EX', env.AUTH_CACHE_TTL_SECONDS);
  for (const [error] of (await tombstones.exec()) ?? []) if (error) throw error;
  await announceAuthInvalidation(redis, env.REDIS_PREFIX, apiKeyHashes);
}

/**
 * Tells every process that authenticates to drop its in-memory copies of these entries (API-key
 * hashes, userAuthCacheKey, sessionCacheKey), and returns once the message has left Redis.
 */
export async function announceAuthInvalidation(redis: Redis, prefix: string, names: string[]): Promise<void> {
  // A shard channel: SPUBLISH answers after the slot's master queued it for every subscriber
  // there, where a Cluster's PUBLISH reaches subscribers on other nodes later, over the cluster bus.
  const channel = new RedisKeys(prefix).authInvalidations();
  await redis.spublish(channel, JSON.stringify(names));
  // Queued is not sent: Redis may write our answer before the subscribers' copies, and a Redis
  // preempted between those writes (a loaded host) let a gateway serve a regenerated key from
  // memory once. Redis writes all it queued before it reads its next command, so the answer to
  // one more command on that node (a key named as the channel is in the channel's slot) means
  // every copy has left Redis before the action answers.
  await redis.exists(channel);
}
