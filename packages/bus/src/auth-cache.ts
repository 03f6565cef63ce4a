// The gateway's short cache of API-key lookups, and its invalidation. Actions that change
// what authentication depends on (key, email, role, activity of a user or realm) call
// invalidateAuthCache after their transaction commits: it deletes the Redis entries and
// announces them to every gateway, which drops its in-process copies.

import type { Redis } from './redis';
import { RedisKeys } from './redis';

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
  await redis
    .multi()
    .del(...apiKeyHashes.map((hash) => keys.auth(hash)))
    .publish(keys.authInvalidations(), JSON.stringify(apiKeyHashes))
    .exec();
}
