// Sections' access to the realm state cache (realm-state-cache.ts): a realm-wide part is read
// from the cache when it holds the register snapshot's version, otherwise built and kept.

import { perRegister, type StateContext } from './registry';

/** The realm's state version in the register's snapshot; null: no cache, or not versioned. */
const realmStateVersion = perRegister(async (ctx): Promise<bigint | null> => {
  if (!ctx.realmStateCache) return null;
  const [row] = await ctx.db.$queryRaw<{ version: bigint }[]>`
    SELECT version FROM realm_state_version WHERE realm_id = ${ctx.realm.id}`;
  return row?.version ?? null;
});

/**
 * The realm-wide part `variant` of `ctx`'s realm. `build` must read only what the version
 * covers (see the migration 20261127010000_realm_state_version) and nothing of the viewer but
 * what `variant` names. `bytes` estimates a built value's size (default: its JSON's length).
 */
export async function realmWidePart<T>(
  ctx: StateContext,
  variant: string,
  build: () => Promise<T>,
  bytes: (value: T) => number = (value) => JSON.stringify(value).length,
): Promise<T> {
  const cache = ctx.realmStateCache;
  const version = await realmStateVersion(ctx);
  if (!cache || version === null) return build();
  const key = `${ctx.realm.id}:${variant}`;
  const cached = cache.get<T>(key, version);
  if (cached !== undefined) return cached;
  const value = await build();
  cache.set(key, version, value, bytes(value));
  return value;
}
