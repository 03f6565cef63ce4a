// Emoji named by clients outside reactions (user statuses): Zulip's get_emoji_data and
// check_emoji_request (zerver/lib/emoji.py), with the realm's custom emoji read from realm_emoji.
//
// Unicode names come from iamcal's table (emoji-names.ts, the same generated data the messages
// service's reactions use), which differs from Zulip's for some emoji: a name and code the
// client names together are each checked for form, not cross-checked, as reactions do.

import { JsonableError } from '@teamchat/core';
import type { TxClient } from '@teamchat/db';
import { EMOJI_NAME_CODES } from './emoji-names';

export const REACTION_TYPES = ['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji'] as const;
export type ReactionType = (typeof REACTION_TYPES)[number];

type EmojiReader = Pick<TxClient, 'realmEmoji'>;

let nameToCode: Map<string, string> | null = null;

function unicodeNames(): Map<string, string> {
  if (!nameToCode) {
    nameToCode = new Map();
    for (const pair of EMOJI_NAME_CODES.split(' ')) {
      const colon = pair.lastIndexOf(':');
      nameToCode.set(pair.slice(0, colon), pair.slice(colon + 1));
    }
  }
  return nameToCode;
}

async function activeRealmEmoji(db: EmojiReader, realmId: number, name: string) {
  return db.realmEmoji.findFirst({ where: { realm_id: realmId, name, deactivated: false }, select: { id: true } });
}

/** The code and type a bare emoji name stands for in a realm (custom emoji first, as Zulip). */
export async function emojiDataFor(
  db: EmojiReader,
  realmId: number,
  name: string,
): Promise<{ emoji_code: string; reaction_type: ReactionType }> {
  const custom = await activeRealmEmoji(db, realmId, name);
  if (custom) return { emoji_code: String(custom.id), reaction_type: 'realm_emoji' };
  if (name === 'zulip') return { emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' };
  const code = unicodeNames().get(name);
  if (code !== undefined) return { emoji_code: code, reaction_type: 'unicode_emoji' };
  throw new JsonableError(`Emoji '${name}' does not exist`);
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

/** Whether (name, code, type) names an emoji of the realm (Zulip's check_emoji_request). */
export async function checkEmojiRequest(
  db: EmojiReader,
  realmId: number,
  name: string,
  code: string,
  type: string,
): Promise<void> {
  if (type === 'realm_emoji') {
    const custom = await activeRealmEmoji(db, realmId, name);
    if (!custom) throw new JsonableError('Invalid custom emoji.');
    if (String(custom.id) !== code) throw new JsonableError('Invalid custom emoji name.');
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
