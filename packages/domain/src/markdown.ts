// Zulip-flavoured Markdown to HTML with markdown-it (a maintained CommonMark parser).
// Raw HTML is escaped, links carry only their href (as Zulip's), single newlines are line breaks.
// Message-specific syntax (mentions, channel links, linkifiers) is added by the callers'
// plugins through `MarkdownPlugin`; descriptions and profile fields use the plain renderer.
// Every link and image URL goes through sanitizeUrl (url-sanitizer.ts), Zulip's scheme safe list.

import MarkdownIt from 'markdown-it';
import { sanitizeUrl } from './url-sanitizer';

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

type InlineRules = { __rules__: { name: string; fn: MarkdownIt.ParserInline.RuleInline }[] };

/** What Zulip's Markdown leaves out: _emphasis_ and __strong__ (only * counts), reference links. */
function zulipSyntax(md: MarkdownIt): void {
  md.disable('reference');
  const emphasis = (md.inline.ruler as unknown as InlineRules).__rules__.find((rule) => rule.name === 'emphasis')!.fn;
  md.inline.ruler.at('emphasis', (state, silent) =>
    state.src.charCodeAt(state.pos) === 0x5f /* _ */ ? false : emphasis(state, silent),
  );
  // ~~text~~ is <del> in Zulip.
  md.renderer.rules.s_open = () => '<del>';
  md.renderer.rules.s_close = () => '</del>';
  // Text and inline code escape only what HTML needs outside attributes: quotes stay as typed.
  md.renderer.rules.text = (tokens, idx) => escapeText(tokens[idx].content);
  md.renderer.rules.code_inline = (tokens, idx) => `<code>${escapeText(tokens[idx].content)}</code>`;
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

const escapeText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function createMarkdownRenderer(plugins: MarkdownPlugin[] = []): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
  md.use(safeLinks);
  md.use(zulipLinks);
  md.use(zulipSyntax);
  for (const plugin of plugins) md.use(plugin);
  return md;
}

const plain = createMarkdownRenderer();

/** Renders Markdown without message-specific syntax (channel descriptions, profile fields). */
export function renderMarkdown(content: string): string {
  return plain.render(content).trim();
}
