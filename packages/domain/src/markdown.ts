// Zulip-flavoured Markdown to HTML with markdown-it (a maintained CommonMark parser).
// Raw HTML is escaped, links carry only their href (as Zulip's), single newlines are line breaks.
// Message-specific syntax (mentions, channel links, linkifiers) is added by the callers'
// plugins through `MarkdownPlugin`; descriptions and profile fields use the plain renderer.
// Every link and image URL goes through sanitizeUrl (url-sanitizer.ts), Zulip's scheme safe list.

import MarkdownIt from 'markdown-it';
import { escapeHtmlText } from './html';
import { zulipBlocks } from './markdown-blocks';
import { sanitizeUrl } from './url-sanitizer';
import { webLinkMatches } from './web-links';

export type MarkdownPlugin = (md: MarkdownIt) => void;

type Token = MarkdownIt.Token;

/** Zulip's LinkInlineProcessor: a link or image whose URL is refused is no link (its text stays). */
function safeLinks(md: MarkdownIt): void {
  md.validateLink = (url) => sanitizeUrl(url) !== null;
  // Links keep the sanitizer's form of their URL (e.g. "example.com/x" becomes http://example.com/x).
  md.core.ruler.after('linkify', 'zulip_sanitize_urls', (state) => {
    const visit = (tokens: Token[]) => {
      for (const token of tokens) {
        const attribute = token.type === 'link_open' ? 'href' : token.type === 'image' ? 'src' : null;
        const url = attribute && token.attrGet(attribute);
        if (attribute && url !== null) {
          const safe = sanitizeUrl(url);
          if (safe === null) token.attrs = (token.attrs ?? []).filter(([name]) => name !== attribute);
          else token.attrSet(attribute, safe);
        }
        if (token.children) visit(token.children);
      }
    };
    visit(state.tokens);
  });
}

function zulipLinks(md: MarkdownIt): void {
  const defaultRender =
    md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const href = tokens[idx].attrGet('href') ?? '';
    // The last gate, for links that plugins made after the sanitizing pass: an unsafe href is dropped.
    if (sanitizeUrl(href) === null) tokens[idx].attrs = (tokens[idx].attrs ?? []).filter(([name]) => name !== 'href');
    return defaultRender(tokens, idx, options, env, self);
  };
}

/** Zulip's STRONG_EM_RE, STRONG_RE, EMPHASIS_RE and DEL_RE, in its order, as sticky expressions. */
const EMPHASIS_PATTERNS: { pattern: RegExp; tags: string[]; delimiter: number }[] = [
  { pattern: /\*\*\*(?!\s)([^*^\n]+)(?<!\s)\*\*\*/y, tags: ['strong', 'em'], delimiter: 3 },
  { pattern: /\*\*([^\n]+?)\*\*/y, tags: ['strong'], delimiter: 2 },
  { pattern: /\*(?!\s)([^*^\n]+)(?<!\s)\*/y, tags: ['em'], delimiter: 1 },
  { pattern: /(?<!~)~~([^~\n]+?)~~(?!~)/y, tags: ['del'], delimiter: 2 },
];

function zulipEmphasisRule(state: MarkdownIt.StateInline, silent: boolean): boolean {
  const marker = state.src.charCodeAt(state.pos);
  if (marker !== 0x2a /* * */ && marker !== 0x7e /* ~ */) return false;
  for (const { pattern, tags, delimiter } of EMPHASIS_PATTERNS) {
    pattern.lastIndex = state.pos;
    const match = pattern.exec(state.src);
    if (!match || state.pos + match[0].length > state.posMax) continue;
    if (!silent) {
      const end = state.pos + match[0].length;
      const oldMax = state.posMax;
      for (const tag of tags)
        state.push(`${tag}_open`, tag, 1).markup = state.src.slice(state.pos, state.pos + delimiter);
      state.pos += delimiter;
      state.posMax = end - delimiter;
      state.md.inline.tokenize(state);
      for (const tag of [...tags].reverse()) state.push(`${tag}_close`, tag, -1);
      state.pos = end;
      state.posMax = oldMax;
    } else {
      state.pos += match[0].length;
    }
    return true;
  }
  return false;
}

type InlineRules = { __rules__: { name: string; fn: MarkdownIt.ParserInline.RuleInline }[] };

/** What Zulip's Markdown leaves out: _emphasis_ and __strong__ (only * counts), reference links. */
function zulipSyntax(md: MarkdownIt): void {
  md.disable(['reference', 'emphasis', 'strikethrough']);
  // Zulip's own emphasis: one-line patterns, * only (not _), tried at each * or ~.
  md.inline.ruler.before('emphasis', 'zulip_emphasis', zulipEmphasisRule);
  // Spaces at the end of a line stay, as Zulip keeps them (CommonMark drops them, or makes two a break).
  const paragraph = (
    md.block.ruler as unknown as { __rules__: { name: string; fn: MarkdownIt.ParserBlock.RuleBlock }[] }
  ).__rules__.find((rule) => rule.name === 'paragraph')!.fn;
  md.block.ruler.at('paragraph', (state, startLine, endLine, silent) => {
    if (!paragraph(state, startLine, endLine, silent)) return false;
    const inline = state.tokens[state.tokens.length - 2];
    if (inline?.type === 'inline' && inline.map) {
      // The lines after a list item's first keep their indentation (Python-Markdown's lazy lines);
      // a later paragraph of the item loses the item's, as CommonMark's does.
      const [first, end] = inline.map;
      const item = state.tokens[state.tokens.length - 4];
      const indent = item?.type === 'list_item_open' && item.map?.[0] === first ? 0 : state.blkIndent;
      const firstLine = state.src.slice(state.bMarks[first] + state.tShift[first], state.eMarks[first]);
      const rest = end - first > 1 ? `\n${state.getLines(first + 1, end, indent, false)}` : '';
      inline.content = `${firstLine}${rest}`.trimStart();
    }
    return true;
  });
  md.inline.ruler.at('newline', (state, silent) => {
    if (state.src.charCodeAt(state.pos) !== 0x0a /* \n */) return false;
    if (!silent) state.push('softbreak', 'br', 0);
    state.pos++;
    return true;
  });
  // Zulip continues a bulleted list whatever the bullet (* - +); CommonMark starts a new list.
  md.core.ruler.after('block', 'zulip_join_bullet_lists', (state) => {
    const tokens = state.tokens;
    for (let index = tokens.length - 2; index >= 0; index--) {
      const [close, open] = [tokens[index], tokens[index + 1]];
      if (close.type === 'bullet_list_close' && open.type === 'bullet_list_open' && close.level === open.level)
        tokens.splice(index, 2);
    }
  });
  // A quote with nothing in it is the text ">" (Zulip's block quotes need content).
  md.core.ruler.after('block', 'zulip_empty_quotes', (state) => {
    const tokens = state.tokens;
    for (let index = tokens.length - 2; index >= 0; index--) {
      const [open, close] = [tokens[index], tokens[index + 1]];
      if (open.type !== 'blockquote_open' || close.type !== 'blockquote_close') continue;
      const paragraphOpen = new state.Token('paragraph_open', 'p', 1);
      const inline = new state.Token('inline', '', 0);
      inline.content = '>';
      inline.children = [];
      const paragraphClose = new state.Token('paragraph_close', 'p', -1);
      for (const token of [paragraphOpen, inline, paragraphClose]) {
        token.level = open.level;
        token.block = true;
        token.map = open.map;
      }
      inline.level = open.level + 1;
      tokens.splice(index, 2, paragraphOpen, inline, paragraphClose);
    }
  });
  // A tight list item's nested list follows its text directly (<li>text<ul>), as in Zulip.
  for (const rule of ['bullet_list_open', 'ordered_list_open']) {
    md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
      const html = self.renderToken(tokens, idx, options);
      const previous = tokens[idx - 1];
      return previous?.type === 'paragraph_close' && previous.hidden ? html.replace(/^\n/, '') : html;
    };
  }
  // Text and inline code escape only what HTML needs outside attributes: quotes stay as typed.
  md.renderer.rules.text = (tokens, idx) => escapeHtmlText(tokens[idx].content);
  md.renderer.rules.code_inline = (tokens, idx) => `<code>${escapeHtmlText(tokens[idx].content)}</code>`;
  // Inline code keeps its spaces: Zulip does not strip one from each end as CommonMark does.
  const backticks = (md.inline.ruler as unknown as InlineRules).__rules__.find((rule) => rule.name === 'backticks')!.fn;
  md.inline.ruler.at('backticks', (state, silent) => {
    const start = state.pos;
    if (!backticks(state, silent)) return false;
    const token = silent ? null : state.tokens[state.tokens.length - 1];
    if (token?.type === 'code_inline') {
      token.content = state.src.slice(start + token.markup.length, state.pos - token.markup.length).replace(/\n/g, ' ');
    }
    return true;
  });
}

/**
 * Pushes onto `out` the text `token` with some of its stretches made other tokens (a bare link, a
 * linkifier's link, an emoji): `replace` gives a match's tokens, or null to leave it text. Matches
 * come in order; one overlapping a replaced one is skipped. Nothing replaced: the token itself.
 */
export function pushReplacingText<M extends { index: number; length: number }>(
  state: MarkdownIt.StateCore,
  token: Token,
  matches: readonly M[],
  replace: (match: M) => Token[] | null,
  out: Token[],
): void {
  const textToken = (content: string) => {
    const text = new state.Token('text', '', 0);
    text.content = content;
    return text;
  };
  let last = 0;
  for (const match of matches) {
    if (match.index < last) continue;
    const tokens = replace(match);
    if (tokens === null) continue;
    if (match.index > last) out.push(textToken(token.content.slice(last, match.index)));
    out.push(...tokens);
    last = match.index + match.length;
  }
  if (last === 0) out.push(token);
  else if (last < token.content.length) out.push(textToken(token.content.slice(last)));
}

/** A link around `text`: a bare link's (markup "linkify") or a linkifier's. */
export function linkTokens(state: MarkdownIt.StateCore, href: string, text: string, markup: string): Token[] {
  const open = new state.Token('link_open', 'a', 1);
  open.attrs = [['href', href]];
  open.markup = markup;
  const content = new state.Token('text', '', 0);
  content.content = text;
  return [open, content, new state.Token('link_close', 'a', -1)];
}

/** What surrounds a text token for link detection: a space at a boundary, \u0003 beside other markup. */
function neighbour(token: Token | undefined, side: 'before' | 'after'): string {
  if (!token) return side === 'before' ? ' ' : '';
  if (token.type === 'softbreak' || token.type === 'hardbreak') return '\n';
  if (token.type === 'text') return side === 'before' ? token.content.slice(-1) || ' ' : token.content.slice(0, 1);
  return '\u0003';
}

/** Bare links as Zulip finds them (web-links.ts), in place of markdown-it's linkify and <autolinks>. */
function zulipWebLinks(md: MarkdownIt): void {
  md.disable('autolink');
  md.core.ruler.after('linkify', 'zulip_web_links', (state) => {
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      const children = block.children;
      const out: Token[] = [];
      let linkDepth = 0;
      for (const [position, token] of children.entries()) {
        if (token.type === 'link_open') linkDepth++;
        if (token.type === 'link_close') linkDepth--;
        const matches =
          token.type === 'text' && linkDepth === 0
            ? webLinkMatches(
                token.content,
                neighbour(children[position - 1], 'before'),
                neighbour(children[position + 1], 'after'),
              )
            : [];
        pushReplacingText(
          state,
          token,
          matches.map((match) => ({ ...match, length: match.text.length })),
          (match) => {
            const href = sanitizeUrl(match.text);
            if (href === null) return null; // Zulip's url_to_a: a refused URL stays text.
            const tokens = linkTokens(state, href, match.text, 'linkify');
            tokens[0].info = 'auto';
            return tokens;
          },
          out,
        );
      }
      block.children = out;
    }
  });
}

export function createMarkdownRenderer(plugins: MarkdownPlugin[] = []): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: false, breaks: true, typographer: false });
  md.use(safeLinks);
  md.use(zulipLinks);
  md.use(zulipSyntax);
  md.use(zulipWebLinks);
  md.use(zulipBlocks);
  for (const plugin of plugins) md.use(plugin);
  return md;
}

const plain = createMarkdownRenderer();

/** Renders Markdown without message-specific syntax (channel descriptions, profile fields). */
export function renderMarkdown(content: string): string {
  return plain.render(content).trim();
}
