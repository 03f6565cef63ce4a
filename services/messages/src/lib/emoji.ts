// Emoji for reactions (Zulip's zerver/lib/emoji.py: get_emoji_data, check_emoji_request).
//
// Zulip validates unicode emoji against its own name table (generated from iamcal's data with
// Zulip's renames). Teamchat has no npm package with Zulip's names, so it carries iamcal's
// (emoji-names.ts, from emoji-datasource) and uses it where a table is unavoidable: turning a
// bare `emoji_name` into a code. When a client names the code itself (as Zulip's own clients
// always do, from Zulip's table), the code must be a well-formed codepoint sequence and the name
// a well-formed emoji name; the pair is not cross-checked, because Zulip's names differ from
// iamcal's for some emoji (e.g. "thumbs_up", or "smile" for 1f642) and real clients send those.
// Custom (realm) emoji do not exist in Teamchat's schema: every realm_emoji reaction is an
// "Invalid custom emoji." unless it votes for an existing reaction.

import { JsonableError } from '@teamchat/core';
import { EMOJI_NAME_CODES } from './emoji-names';

export const REACTION_TYPES = ['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji'] as const;
export type ReactionType = (typeof REACTION_TYPES)[number];

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

/** The code and type a bare emoji name stands for (Zulip's get_emoji_data). */
export function emojiDataFor(name: string): { emoji_code: string; reaction_type: ReactionType } {
  if (name === 'zulip') return { emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' };
  const code = unicodeNames().get(name);
  if (code !== undefined) return { emoji_code: code, reaction_type: 'unicode_emoji' };
  throw new JsonableError(`Emoji '${name}' does not exist`);
}

let emojiDataJson: string | null = null;

/**
 * The table as Zulip's emoji data file (register's `server_emoji_data_url`): each code with its
 * names, serialized once. iamcal's table does not say which name is canonical; a code's names
 * come in alphabetical order.
 */
export function emojiDataFile(): string {
  if (!emojiDataJson) {
    const codeToNames: Record<string, string[]> = {};
    for (const [name, code] of unicodeNames()) (codeToNames[code] ??= []).push(name);
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

/** Whether a new reaction's (name, code, type) is valid in the realm (Zulip's check_emoji_request). */
export function checkEmojiRequest(name: string, code: string, type: string): void {
  if (type === 'realm_emoji') throw new JsonableError('Invalid custom emoji.');
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
