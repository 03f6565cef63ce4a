// Zulip 10.2's unicode emoji table (emoji-table.ts, generated from Zulip's curated names) and its
// Markdown forms: `:name:` and emoji typed as characters become
// <span class="emoji emoji-CODE" …>:canonical_name:</span>, emoticons such as :) become their emoji
// for senders who turned translate_emoticons on (Zulip's zerver/lib/emoji.py and the Emoji,
// UnicodeEmoji and EmoticonTranslation patterns of zerver/lib/markdown).
import { ZULIP_EMOJI_NAMES } from './emoji-table';
import { escapeHtmlAttribute } from './html';

interface EmojiTable {
  nameToCode: Map<string, string>;
  /** Every code with its names, the canonical name first (Zulip's code_to_names). */
  codeToNames: Map<string, string[]>;
}

let table: EmojiTable | null = null;

function emojiTable(): EmojiTable {
  if (!table) {
    const nameToCode = new Map<string, string>();
    const codeToNames = new Map<string, string[]>();
    for (const entry of ZULIP_EMOJI_NAMES.split(' ')) {
      const colon = entry.indexOf(':');
      const code = entry.slice(0, colon);
      const names = entry.slice(colon + 1).split(',');
      codeToNames.set(code, names);
      for (const name of names) nameToCode.set(name, code);
    }
    table = { nameToCode, codeToNames };
  }
  return table;
}

/** The code of a unicode emoji name (canonical or alias), if Zulip has it. */
export function unicodeEmojiCode(name: string): string | undefined {
  return emojiTable().nameToCode.get(name);
}

/** Zulip's code_to_names: each code with its canonical name first, then its aliases. */
export function unicodeEmojiCodeToNames(): ReadonlyMap<string, string[]> {
  return emojiTable().codeToNames;
}

/** Zulip's make_emoji: the span every unicode emoji renders as. */
export function unicodeEmojiHtml(code: string, name: string): string {
  const title = escapeHtmlAttribute(name.replace(/_/g, ' '));
  return `<span aria-label="${title}" class="emoji emoji-${code}" role="img" title="${title}">:${escapeHtmlAttribute(name)}:</span>`;
}

/** Zulip's make_realm_emoji: an image emoji (custom emoji, and :zulip:). */
export function imageEmojiHtml(src: string, name: string): string {
  const escaped = escapeHtmlAttribute(name);
  return `<img alt=":${escaped}:" class="emoji" src="${escapeHtmlAttribute(src)}" title="${escapeHtmlAttribute(name.replace(/_/g, ' '))}">`;
}

/** Where Zulip serves its own :zulip: emoji (a path, not a static URL, so exports keep it). */
export const ZULIP_EMOJI_SRC = '/static/generated/emoji/images/emoji/unicode/zulip.png';

// Unicode TR51's possible-emoji expression, as Zulip's POSSIBLE_EMOJI_RE.
const EMOJI_ELEMENT = String.raw`(?:\p{RI}\p{RI}|\p{Emoji}(?:\p{Emoji_Modifier}|\uFE0F\u20E3?|[\u{E0020}-\u{E007E}]+\u{E007F})?)`;
const POSSIBLE_EMOJI = new RegExp(`${EMOJI_ELEMENT}(?:\\u200D${EMOJI_ELEMENT})*`, 'gu');
/** One character of text presentation (digits, ©, arrows…): left as typed. */
const TEXT_PRESENTATION = /^\P{Emoji_Presentation}\u20E3?$/u;
/** Cheap pre-check: ASCII alone is never an emoji of Zulip's (keycaps need U+20E3). */
const MAY_HOLD_EMOJI = /[^\0-\x7f]/;

export interface EmojiMatch {
  index: number;
  length: number;
  html: string;
}

function hexCodepoints(text: string): string {
  return [...text.replace(/\uFE0F/g, '')].map((c) => c.codePointAt(0)!.toString(16).padStart(4, '0')).join('-');
}

/** Emoji typed as characters that Zulip names, as their spans (Zulip's UnicodeEmoji). */
export function unicodeEmojiMatches(text: string): EmojiMatch[] {
  if (!MAY_HOLD_EMOJI.test(text)) return [];
  const matches: EmojiMatch[] = [];
  const { codeToNames } = emojiTable();
  for (const match of text.matchAll(POSSIBLE_EMOJI)) {
    if (TEXT_PRESENTATION.test(match[0])) continue;
    const code = hexCodepoints(match[0]);
    const names = codeToNames.get(code);
    if (names) matches.push({ index: match.index!, length: match[0].length, html: unicodeEmojiHtml(code, names[0]) });
  }
  return matches;
}

/** Zulip's EMOTICON_CONVERSIONS. */
const EMOTICONS: Record<string, string> = {
  ':)': 'smile',
  '(:': 'smile',
  ':(': 'frown',
  '<3': 'heart',
  ':|': 'neutral',
  ':/': 'confused',
  ';)': 'wink',
  ':D': 'grinning',
  ':o': 'open_mouth',
  ':O': 'open_mouth',
  ':p': 'stuck_out_tongue',
  ':P': 'stuck_out_tongue',
};
// An emoticon counts only between the symbols that end words in the compose box (Zulip's EMOTICON_RE).
const TERMINAL = String.raw`,.;?!()\[\] "'\n\t`;
const EMOTICON = new RegExp(
  `(?<![^${TERMINAL}])(${Object.keys(EMOTICONS)
    .map((emoticon) => emoticon.replace(/[()|/]/g, '\\$&'))
    .join('|')})(?![^${TERMINAL}])`,
  'g',
);
/** Whether text holds something that may be an emoticon (then the sender's setting matters). */
export const MAY_HOLD_EMOTICON = /[:;(<]/;

/** Emoticons as their emoji (Zulip's EmoticonTranslation), for senders with translate_emoticons. */
export function emoticonMatches(text: string): EmojiMatch[] {
  if (!MAY_HOLD_EMOTICON.test(text)) return [];
  const matches: EmojiMatch[] = [];
  for (const match of text.matchAll(EMOTICON)) {
    const name = EMOTICONS[match[1]];
    matches.push({
      index: match.index!,
      length: match[1].length,
      html: unicodeEmojiHtml(unicodeEmojiCode(name)!, name),
    });
  }
  return matches;
}
