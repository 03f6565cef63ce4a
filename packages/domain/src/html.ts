/** Text made safe inside HTML text and attribute values (Python's html.escape, which Zulip uses). */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#x27;');
}

/** Text made safe between HTML tags, quotes left as typed (what Zulip's Markdown writes for text). */
export function escapeHtmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Text made safe between tags and in double-quoted attributes, ' left as typed (Zulip's Markdown output; markdown-it's escapeHtml). */
export function escapeHtmlAttribute(text: string): string {
  return escapeHtmlText(text).replace(/"/g, '&quot;');
}
