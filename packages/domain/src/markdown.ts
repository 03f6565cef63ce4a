// Zulip-flavoured Markdown to HTML with markdown-it (a maintained CommonMark parser).
// Raw HTML is escaped, links get rel/target like Zulip's, single newlines are line breaks.
// Message-specific syntax (mentions, channel links, linkifiers) is added by the callers'
// plugins through `MarkdownPlugin`; descriptions and profile fields use the plain renderer.

import MarkdownIt from 'markdown-it';

export type MarkdownPlugin = (md: MarkdownIt) => void;

function zulipLinks(md: MarkdownIt): void {
  const defaultRender = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const href = tokens[idx].attrGet('href') ?? '';
    if (/^https?:\/\//i.test(href)) {
      tokens[idx].attrSet('target', '_blank');
      tokens[idx].attrSet('rel', 'noopener noreferrer');
    }
    return defaultRender(tokens, idx, options, env, self);
  };
}

export function createMarkdownRenderer(plugins: MarkdownPlugin[] = []): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
  md.use(zulipLinks);
  for (const plugin of plugins) md.use(plugin);
  return md;
}

const plain = createMarkdownRenderer();

/** Renders Markdown without message-specific syntax (channel descriptions, profile fields). */
export function renderMarkdown(content: string): string {
  return plain.render(content).trim();
}
