// Bare links in text, found as Zulip finds them (get_web_link_regex in zerver/lib/markdown):
// a link starts after whitespace or one of ' " ( , : <, is http(s):// plus anything, or a domain
// with a known top-level domain (IANA's list, less the file extensions java, md, mov, py and zip),
// with an optional path that may hold up to six levels of balanced parentheses; or an e-mail
// address; or a bitcoin address. It must be followed by optional punctuation, then whitespace or
// the end. markdown-it's own linkify finds other things (views.py, "a@b.com/foo", a trailing ":").

// tlds ships its list as JSON, without type declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const IANA_TLDS = require('tlds') as string[];

const FILE_EXTENSIONS = new Set(['java', 'md', 'mov', 'py', 'zip']);

function pathPattern(): string {
  // Characters that do not end a link, then balanced (…) groups, nested up to six deep.
  const group = String.raw`[^\s()"]*?(?:\(%s\)[^\s()"]*?)*`;
  let pattern = group;
  for (let level = 0; level < 6; level++) pattern = pattern.replace('%s', group);
  return pattern.replace('%s', String.raw`[^\s()"]*`);
}

/** IANA's top-level domains less the file extensions; a bare domain must end in one (as typed: lowercase). */
const TOP_LEVEL_DOMAINS = new Set(IANA_TLDS.filter((tld) => !FILE_EXTENSIONS.has(tld)));

/** A domain label's characters (Python's \w and "-"), and an e-mail address's (\w, "." and "-"). */
const LABEL = String.raw`[\p{L}\p{N}\p{M}_-]`;
const ADDRESS = String.raw`[\p{L}\p{N}\p{M}_.-]`;
// The domain's last label is captured and checked against TOP_LEVEL_DOMAINS, which is what
// Zulip's alternation of every top-level domain amounts to (a label is followed by "/",
// punctuation or a space, so the whole label must be the top-level domain), at a fraction of the cost.
const DOMAIN = String.raw`(?:https?://[\p{L}\p{N}\p{M}_.:@-]+?|(?:${LABEL}+\.)+(${LABEL}+))`;
const WEB_LINK = new RegExp(
  String.raw`(?<![^\s'"(,:<])(` +
    String.raw`${DOMAIN}(?:/${pathPattern()})?` +
    String.raw`|${ADDRESS}+@${ADDRESS}+\.[\p{L}\p{N}\p{M}_]+` +
    String.raw`|bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34}` +
    String.raw`)(?=[!:;?),.'">]*(?:$|\s))`,
  'gu',
);

/** Quick test before the full expression: every link has a scheme, or a dot before its domain ends. */
const MAY_HOLD_LINK = /[.:]/;

export interface WebLinkMatch {
  index: number;
  text: string;
}

/**
 * Bare links in `text`. `before` and `after` are what surrounds it in the paragraph: a space for
 * a boundary (the start, a line break), another character for anything else (an emoji, a mention).
 */
export function webLinkMatches(text: string, before = ' ', after = ''): WebLinkMatch[] {
  if (!MAY_HOLD_LINK.test(text)) return [];
  const subject = `${before}${text}${after}`;
  const matches: WebLinkMatch[] = [];
  for (const match of subject.matchAll(WEB_LINK)) {
    if (match[2] !== undefined && !TOP_LEVEL_DOMAINS.has(match[2])) continue;
    const index = match.index! - before.length;
    if (index < 0 || index + match[1].length > text.length) continue;
    matches.push({ index, text: match[1] });
  }
  return matches;
}
