// Emoji as clients name them, in reactions and user statuses (Zulip's zerver/lib/emoji.py:
// get_emoji_data, check_emoji_request).
//
// Unicode emoji names are Zulip 10.2's own (unicode-emoji.ts, generated from Zulip's curated
// table), the names Zulip's clients show and send. When a client names the code itself, the
// code must be a well-formed codepoint sequence and the name a well-formed emoji name, as Zulip
// checks them. Custom (realm) emoji are read from realm_emoji (the uploads service writes them):
// a name names the realm's active custom emoji first, and a realm_emoji reaction's code is its id.

import { JsonableError } from '@teamchat/core';
import type { TxClient } from '@teamchat/db';
import { activeRealmEmojiByName } from './realm-emoji';
import { unicodeEmojiCode, unicodeEmojiCodeToNames } from './unicode-emoji';

type EmojiReader = Pick<TxClient, 'realmEmoji'>;

export const REACTION_TYPES = ['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji'] as const;
export type ReactionType = (typeof REACTION_TYPES)[number];

/** The code and type a bare emoji name stands for in the realm (Zulip's get_emoji_data). */
export async function emojiDataFor(
  db: EmojiReader,
  realmId: number,
  name: string,
): Promise<{ emoji_code: string; reaction_type: ReactionType }> {
  const custom = (await activeRealmEmojiByName(db, realmId, [name])).get(name);
  if (custom) return { emoji_code: custom.id, reaction_type: 'realm_emoji' };
  if (name === 'zulip') return { emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' };
  const code = unicodeEmojiCode(name);
  if (code !== undefined) return { emoji_code: code, reaction_type: 'unicode_emoji' };
  throw new JsonableError(`Emoji '${name}' does not exist`);
}

let emojiDataJson: string | null = null;

/**
 * The table as Zulip's emoji_api.json (register's `server_emoji_data_url`): each code with its
 * names, the canonical name first, by code, serialized once.
 */
export function emojiDataFile(): string {
  if (!emojiDataJson) {
    const codes = [...unicodeEmojiCodeToNames()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const codeToNames: Record<string, string[]> = {};
    for (const [code, names] of codes) codeToNames[code] = names;
    emojiDataJson = JSON.stringify({ code_to_names: codeToNames });
  }
  return emojiDataJson;
}

/** Lowercase hex codepoints (4 to 6 digits, each a Unicode scalar value) joined by dashes. */
function isCodepointSequence(code: string): boolean {
  if (!/^[0-9a-f]{4,6}(-[0-9a-f]{4,6})*$/.test(code)) return false;
  return code.split('-').every((part) => {
    const value = parseInt(part, 16);
    return value <= 0x10ffff && (value < 0xd800 || value > 0xdfff);
  });
}

const EMOJI_NAME = /^[0-9a-z_+-]+$/;

/** Whether a (name, code, type) a client gives is an emoji of the realm (Zulip's check_emoji_request). */
export async function checkEmojiRequest(
  db: EmojiReader,
  realmId: number,
  name: string,
  code: string,
  type: string,
): Promise<void> {
  if (type === 'realm_emoji') {
    // The code is the emoji's id; it must be the realm's, carry its name and still be active.
    const id = /^[0-9]{1,10}$/.test(code) ? Number(code) : null;
    const emoji =
      id !== null && id <= 2 ** 31 - 1
        ? await db.realmEmoji.findFirst({ where: { id, realm_id: realmId, file_name: { not: '' } } })
        : null;
    if (!emoji) throw new JsonableError('Invalid custom emoji.');
    if (emoji.name !== name) throw new JsonableError('Invalid custom emoji name.');
    if (emoji.deactivated) throw new JsonableError('This custom emoji has been deactivated.');
    return;
  }
  if (type === 'zulip_extra_emoji') {
    if (code !== 'zulip') throw new JsonableError('Invalid emoji code.');
    if (name !== code) throw new JsonableError('Invalid emoji name.');
    return;
  }
  if (type === 'unicode_emoji') {
    if (!isCodepointSequence(code)) throw new JsonableError('Invalid emoji code.');
    if (!EMOJI_NAME.test(name)) throw new JsonableError('Invalid emoji name.');
    return;
  }
  throw new JsonableError('Invalid emoji type.');
}
