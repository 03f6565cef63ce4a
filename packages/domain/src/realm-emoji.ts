// Custom (realm) emoji as clients see them (Zulip's RealmEmoji, get_all_custom_emoji_for_realm):
// the dict GET /realm/emoji, register's realm_emoji and the realm_emoji event carry, where the
// images live in the uploads storage, and the names Zulip accepts. Read by the users service
// (the list), the uploads service (writes, image serving), the messages service (reactions,
// Markdown) and the register state.

import { JsonableError } from '@teamchat/core';
import type { RealmEmoji, TxClient } from '@teamchat/db';

type EmojiReader = Pick<TxClient, 'realmEmoji'>;

/** Zulip's MAX_EMOJI_FILE_SIZE_MIB default. */
export const MAX_EMOJI_FILE_SIZE_MIB = 5;

/** One emoji of the dict, keyed by its id (as a string). */
export interface RealmEmojiInfo {
  id: string;
  name: string;
  source_url: string;
  still_url: string | null;
  deactivated: boolean;
  author_id: number | null;
}

/**
 * The storage key prefix of files served publicly at /user_avatars/... (Zulip's avatar bucket,
 * which holds custom emoji and exports). Upload keys start with a realm id, so they never meet.
 */
export const PUBLIC_FILES_PREFIX = 'user_avatars';

/** The URL path of an emoji image: Zulip's local-storage source_url. */
export function realmEmojiUrl(realmId: number, fileName: string, still = false): string {
  return `/${realmEmojiKey(realmId, fileName, still)}`;
}

/** The emoji image's key in the uploads storage (its URL path without the leading slash). */
export function realmEmojiKey(realmId: number, fileName: string, still = false): string {
  return `${PUBLIC_FILES_PREFIX}/${realmId}/emoji/images/${still ? 'still/' : ''}${fileName}`;
}

export function realmEmojiInfo(
  row: Pick<
    RealmEmoji,
    'id' | 'realm_id' | 'name' | 'file_name' | 'still_file_name' | 'is_animated' | 'deactivated' | 'author_id'
  >,
): RealmEmojiInfo {
  return {
    id: String(row.id),
    name: row.name,
    source_url: realmEmojiUrl(row.realm_id, row.file_name),
    still_url: row.is_animated && row.still_file_name ? realmEmojiUrl(row.realm_id, row.still_file_name, true) : null,
    deactivated: row.deactivated,
    author_id: row.author_id,
  };
}

/** Every custom emoji of the realm, deactivated ones too (Zulip's realm.get_emoji()). */
export async function realmEmojiDict(db: EmojiReader, realmId: number): Promise<Record<string, RealmEmojiInfo>> {
  // A row whose image never got stored (file_name still empty) is not an emoji yet.
  const rows = await db.realmEmoji.findMany({
    where: { realm_id: realmId, file_name: { not: '' } },
    orderBy: { id: 'asc' },
  });
  return Object.fromEntries(rows.map((row) => [String(row.id), realmEmojiInfo(row)]));
}

/** The active custom emoji named `names` (all of them when omitted), by name. */
export async function activeRealmEmojiByName(
  db: EmojiReader,
  realmId: number,
  names?: string[],
): Promise<Map<string, RealmEmojiInfo>> {
  if (names && names.length === 0) return new Map();
  const rows = await db.realmEmoji.findMany({
    where: { realm_id: realmId, deactivated: false, file_name: { not: '' }, ...(names ? { name: { in: names } } : {}) },
    orderBy: { id: 'asc' },
  });
  return new Map(rows.map((row) => [row.name, realmEmojiInfo(row)]));
}

/** Zulip's check_valid_emoji_name, with its texts. */
export function checkValidEmojiName(name: string): void {
  if (!name) throw new JsonableError('Emoji name is missing');
  if (/^[0-9a-z_-]+$/.test(name)) {
    if (/[_-]$/.test(name)) throw new JsonableError('Emoji names must end with either a letter or digit.');
    return;
  }
  throw new JsonableError(
    'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
  );
}
