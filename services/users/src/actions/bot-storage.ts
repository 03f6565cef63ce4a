// Storing and removing what a user keeps through /bot_storage (Zulip's set_bot_storage and
// remove_bot_storage, zerver/lib/bot_storage.py). Zulip sends no event for these.

import { JsonableError } from '@teamchat/core';
import { transaction } from '@teamchat/db';
import type { BaseDeps } from '@teamchat/runtime';
import { botStorageSize, keyDoesNotExist } from '../lib/bot-storage';
import { lockUser } from '../lib/locks';

type Deps = Pick<BaseDeps, 'db'>;

/** Zulip's USER_STATE_SIZE_LIMIT (zproject/default_settings.py): characters of keys and values per user. */
export const USER_STATE_SIZE_LIMIT = 10_000_000;

/** Characters as Python's len() counts them (code points, not UTF-16 units). */
function characterCount(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) count--;
  }
  return count;
}

/**
 * Stores the entries (replacing the values of keys already stored), unless the user's storage
 * would then hold more than USER_STATE_SIZE_LIMIT characters: then nothing is stored.
 */
export async function doSetBotStorage(deps: Deps, userId: number, storage: Record<string, string>): Promise<void> {
  const keys = Object.keys(storage);
  if (keys.length === 0) return;
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, userId);
    const current = await botStorageSize(tx.db, userId, keys);
    const added = keys.reduce((sum, key) => sum + characterCount(key) + characterCount(storage[key]!), 0);
    const newSize = current.total - current.ofKeys + added;
    if (newSize > USER_STATE_SIZE_LIMIT) {
      throw new JsonableError(
        `Request exceeds storage limit by ${newSize - USER_STATE_SIZE_LIMIT} characters. The limit is ${USER_STATE_SIZE_LIMIT} characters.`,
      );
    }
    const values = keys.map((key) => storage[key]!);
    await tx.db.$executeRaw`
      INSERT INTO bot_storage_data (bot_profile_id, key, value)
      SELECT ${userId}, key, value FROM unnest(${keys}::text[], ${values}::text[]) WITH ORDINALITY AS t(key, value, n) ORDER BY n
      ON CONFLICT (bot_profile_id, key) DO UPDATE SET value = EXCLUDED.value`;
  });
}

/**
 * Removes the given keys (all of them when none are named). As in Zulip, nothing is removed
 * unless every key named is stored, a key named twice counting twice.
 */
export async function doRemoveBotStorage(deps: Deps, userId: number, keys: string[] | null): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, userId);
    if (keys === null) {
      await tx.db.$executeRaw`DELETE FROM bot_storage_data WHERE bot_profile_id = ${userId}`;
      return;
    }
    const removed = await tx.db.$executeRaw`
      DELETE FROM bot_storage_data WHERE bot_profile_id = ${userId} AND key = ANY(${keys}::text[])`;
    // Throwing rolls the deletion back.
    if (removed < keys.length) throw keyDoesNotExist();
  });
}
