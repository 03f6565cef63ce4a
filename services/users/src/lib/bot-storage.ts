// Reading what a user keeps through /bot_storage (Zulip's zerver/lib/bot_storage.py). Sizes
// are counted in characters of keys and values, as Python's len() and PostgreSQL's length()
// both count them.

import { JsonableError } from '@teamchat/core';
import type { TxClient } from '@teamchat/db';

type Db = Pick<TxClient, '$queryRaw'>;

/** Zulip's StateError for a key the user has not stored, in its words. */
export const keyDoesNotExist = () => new JsonableError('Key does not exist.');

/** All the user's keys and values, oldest first. */
export async function allBotStorage(db: Db, userId: number): Promise<Record<string, string>> {
  const rows = await db.$queryRaw<{ key: string; value: string }[]>`
    SELECT key, value FROM bot_storage_data WHERE bot_profile_id = ${userId} ORDER BY id`;
  return Object.fromEntries(rows.map((row) => [row.key, row.value]));
}

/** The values of the given keys, in the order asked; any key not stored is refused. */
export async function botStorageValues(db: Db, userId: number, keys: string[]): Promise<Record<string, string>> {
  const rows = await db.$queryRaw<{ key: string; value: string }[]>`
    SELECT key, value FROM bot_storage_data WHERE bot_profile_id = ${userId} AND key = ANY(${keys}::text[])`;
  const stored = new Map(rows.map((row) => [row.key, row.value]));
  return Object.fromEntries(
    keys.map((key) => {
      const value = stored.get(key);
      if (value === undefined) throw keyDoesNotExist();
      return [key, value];
    }),
  );
}

/** Characters the user keeps (keys and values), and those of the given keys among them. */
export async function botStorageSize(
  db: Db,
  userId: number,
  keys: string[],
): Promise<{ total: number; ofKeys: number }> {
  const [row] = await db.$queryRaw<{ total: number; of_keys: number }[]>`
    SELECT COALESCE(SUM(length(key) + length(value)), 0)::float8 AS total,
           COALESCE(SUM(length(key) + length(value)) FILTER (WHERE key = ANY(${keys}::text[])), 0)::float8 AS of_keys
    FROM bot_storage_data WHERE bot_profile_id = ${userId}`;
  return { total: row!.total, ofKeys: row!.of_keys };
}
