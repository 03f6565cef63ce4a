// Image and video previews of linked files in messages, as Zulip 10.2's
// InlineInterestingLinkProcessor places them (zerver/lib/markdown/__init__.py): every link (<a>)
// of the message, taken breadth first as Zulip walks its tree, whose URL is an image (an image
// upload of the organisation, or a URL whose path ends in an image extension) or a video (.mp4,
// .webm) gets a `message_inline_image` block after its paragraph (inside its list item, or at the
// end of the message when the link sits in other markup); a paragraph or list item that is only
// the bare link loses it. Links in block quotes get none; past 24 distinct URLs, none at all.
// External images and videos load through Camo when it is configured (Zulip's
// InlineImageProcessor); uploads show Zulip's placeholder until their thumbnail exists.
// Tweets, YouTube, Dropbox and link embeds need the network and are not made.

import type MarkdownIt from 'markdown-it';
import type { TxClient } from '@teamchat/db';
import {
  camoUrl,
  loadUploadPreviews,
  placeholderImageHtml,
  rewriteThumbnailedImages,
  type ImagePreview,
} from './image-previews';
import { escapeHtmlAttribute } from './html';

type StateCore = MarkdownIt.StateCore;
type Token = MarkdownIt.Token;

/** What rendering knows for previews (part of MarkdownData). */
export interface PreviewData {
  /** The organisation's inline_image_preview setting (Zulip's image_preview_enabled); default on. */
  imagePreviews?: boolean;
  /** The image uploads the message links, by path id (loadUploadPreviews); absent: none known. */
  uploadPreviews?: ReadonlyMap<string, ImagePreview>;
  /** Zulip's CAMO_URI and camo key: external images load through that proxy. */
  camo?: { uri: string; key: string };
  /** The organisation's host: its own URLs are not proxied. */
  realmHost?: string;
}

/** Content that may get a preview: it links an upload, or names a file of an image or video type. */
const MAY_PREVIEW =
  /user_uploads\/|\.(?:bmp|gif|jpe|jpe?g|png|webp|mp4|webm)\b|wikipedia\.org\/wiki\/File:|linx\.li\//i;

/**
 * What rendering `content` needs for previews: the organisation's setting and the image uploads
 * it links (Zulip's get_user_upload_previews); nothing is read for content that cannot have one.
 */
export async function loadPreviewData(
  db: Pick<TxClient, '$queryRawUnsafe'>,
  realmId: number,
  content: string,
): Promise<Pick<PreviewData, 'imagePreviews' | 'uploadPreviews'>> {
  if (!MAY_PREVIEW.test(content)) return {};
  const [setting, uploadPreviews] = await Promise.all([
    db.$queryRawUnsafe<{ enabled: unknown }[]>(
      `SELECT settings->'realm_inline_image_preview' AS enabled FROM realm WHERE id = $1`,
      realmId,
    ),
    loadUploadPreviews(db, realmId, content),
  ]);
  return { imagePreviews: setting[0]?.enabled !== false, uploadPreviews };
}

/** Zulip's INLINE_PREVIEW_LIMIT_PER_MESSAGE. */
export const INLINE_PREVIEW_LIMIT_PER_MESSAGE = 24;
/** Zulip's IMAGE_EXTENSIONS. */
const IMAGE_EXTENSIONS = ['.bmp', '.gif', '.jpe', '.jpeg', '.jpg', '.png', '.webp'];

interface PreviewEnv {
  data: PreviewData;
  result: { hasImage: boolean };
  /** Set around the rendering of a quote fence's content: links inside get no preview. */
  previewsInQuote?: number;
  /** URLs already previewed in this message (nested renders of fences share the env). */
  previewedUrls?: Set<string>;
}

interface FoundLink {
  inlineIndex: number;
  open: Token;
  childIndex: number;
  closeIndex: number;
  depth: number;
  href: string;
  /** Zulip's a.text: the text before the link's first element; null if it starts with one. */
  text: string | null;
  parent: 'p' | 'li' | 'other';
  inQuote: boolean;
}

function urlParts(url: string): { host: string; path: string; scheme: string } {
  const match = /^(?:([a-zA-Z][a-zA-Z0-9+.-]*):)?(?:\/\/([^/?#]*))?([^?#]*)/.exec(url)!;
  return { scheme: (match[1] ?? '').toLowerCase(), host: match[2] ?? '', path: match[3] ?? '' };
}

/** Zulip's is_video: Python's mimetypes guess of the whole URL is video/mp4 or video/webm. */
function isVideo(url: string): boolean {
  const extension = /\.[^./]*$/.exec(url)?.[0].toLowerCase();
  return extension === '.mp4' || extension === '.webm';
}

function uploadPathId(url: string): string | null {
  return url.startsWith('/user_uploads/') ? url.slice('/user_uploads/'.length) : null;
}

/** Zulip's is_image. */
function isImage(url: string, data: PreviewData): boolean {
  const { host, path } = urlParts(url);
  if (host === 'pasteboard.co') return false;
  const pathId = uploadPathId(url);
  if (pathId !== null && data.uploadPreviews) return data.uploadPreviews.has(pathId);
  return IMAGE_EXTENSIONS.some((extension) => path.toLowerCase().endsWith(extension));
}

/** Zulip's corrected_image_source (Wikipedia file pages, linx.li). */
function correctedImageSource(url: string): string | null {
  const { host, path } = urlParts(url);
  if (host.toLowerCase().endsWith('.wikipedia.org') && path.startsWith('/wiki/File:'))
    return url.replace('/wiki/File:', '/wiki/Special:FilePath/File:');
  if (host === 'linx.li') return `https://linx.li/s${path}`;
  return null;
}

/** Zulip's get_actual_image_url: a GitHub "blob" page's raw file. */
function actualImageUrl(url: string): string {
  const { host, path } = urlParts(url);
  if (host === 'github.com' || host.endsWith('.github.com')) {
    const parts = path.split('/');
    if (parts.length > 3 && parts[3] === 'blob')
      return `https://raw.githubusercontent.com${[...parts.slice(0, 3), ...parts.slice(4)].join('/')}`;
  }
  return url;
}

/** Zulip's is_static_or_current_realm_url: what is not proxied through Camo. */
function isOwnUrl(url: string, data: PreviewData): boolean {
  const { scheme, host } = urlParts(url);
  if (host === '' && scheme === '') return true;
  return data.realmHost !== undefined && host === data.realmHost;
}

function mediaSrc(url: string, data: PreviewData): string {
  return isOwnUrl(url, data) ? url : camoUrl(url, data.camo);
}

function previewHtml(url: string, title: string | null, data: PreviewData, env: PreviewEnv): string | null {
  const titleAttribute = title !== null ? ` title="${escapeHtmlAttribute(title)}"` : '';
  if (isVideo(url)) {
    return (
      `<div class="message_inline_image message_inline_video"><a href="${escapeHtmlAttribute(url)}"${titleAttribute}>` +
      `<video preload="metadata" src="${escapeHtmlAttribute(mediaSrc(url, data))}"></video></a></div>`
    );
  }
  if (!isImage(url, data)) return null;
  const corrected = correctedImageSource(url);
  const link = corrected ?? url;
  const shownTitle = corrected !== null ? null : title;
  const imageUrl = actualImageUrl(link);
  const pathId = uploadPathId(imageUrl);
  const preview = pathId !== null ? data.uploadPreviews?.get(pathId) : undefined;
  const image = preview
    ? placeholderImageHtml(preview)
    : `<img src="${escapeHtmlAttribute(mediaSrc(imageUrl, data))}">`;
  env.result.hasImage = true;
  return (
    `<div class="message_inline_image"><a href="${escapeHtmlAttribute(link)}"` +
    `${shownTitle !== null ? ` title="${escapeHtmlAttribute(shownTitle)}"` : ''}>${image}</a></div>`
  );
}

/** The links of the token stream, with what Zulip's get_inlining_information looks at. */
function findLinks(tokens: Token[], quoted: boolean): FoundLink[] {
  const found: FoundLink[] = [];
  let quoteDepth = 0;
  for (const [inlineIndex, block] of tokens.entries()) {
    if (block.type === 'blockquote_open') quoteDepth++;
    if (block.type === 'blockquote_close') quoteDepth--;
    if (block.type !== 'inline' || !block.children) continue;
    const opener = tokens[inlineIndex - 1];
    const parent = opener?.type === 'paragraph_open' ? (opener.hidden ? 'li' : 'p') : 'other';
    const baseDepth = block.level + 1 - (parent === 'li' ? 1 : 0);
    let nesting = 0;
    const children = block.children;
    for (const [childIndex, child] of children.entries()) {
      if (child.type === 'link_open') {
        let closeIndex = childIndex + 1;
        for (let depth = 1; closeIndex < children.length; closeIndex++) {
          if (children[closeIndex].type === 'link_open') depth++;
          if (children[closeIndex].type === 'link_close' && --depth === 0) break;
        }
        let text: string | null = null;
        for (let index = childIndex + 1; index < closeIndex && children[index].type === 'text'; index++)
          text = (text ?? '') + children[index].content;
        found.push({
          inlineIndex,
          open: child,
          childIndex,
          closeIndex,
          depth: baseDepth + nesting,
          href: child.attrGet('href') ?? '',
          text,
          parent: nesting === 0 ? parent : 'other',
          inQuote: quoted || quoteDepth > 0,
        });
      }
      if (child.nesting === 1) nesting++;
      if (child.nesting === -1) nesting--;
    }
  }
  // Zulip walks its tree breadth first: shallower links first, each depth in document order.
  return found
    .map((link, order) => ({ link, order }))
    .sort((a, b) => a.link.depth - b.link.depth || a.order - b.order)
    .map(({ link }) => link);
}

const isBlank = (token: Token | undefined) => token === undefined || (token.type === 'text' && token.content === '');

function inlinePreviews(state: StateCore): void {
  const env = state.env as PreviewEnv;
  const data = env.data;
  if (data.imagePreviews === false) return;
  const tokens = state.tokens;
  const links = findLinks(tokens, (env.previewsInQuote ?? 0) > 0);
  const previewable = new Set(links.filter((link) => !link.inQuote).map((link) => link.href));
  if (previewable.size === 0 || previewable.size > INLINE_PREVIEW_LIMIT_PER_MESSAGE) return;
  const previewed = (env.previewedUrls ??= new Set());

  // Where each preview goes: after a block token, before one, or at the end; and what goes.
  const after = new Map<number, string[]>();
  const before = new Map<number, string[]>();
  const atEnd: string[] = [];
  const removedBlocks = new Set<number>();
  const removedLinks: FoundLink[] = [];
  for (const link of links) {
    if (link.inQuote || previewed.has(link.href)) continue;
    previewed.add(link.href);
    const urlIsText = link.text === null || link.text === link.href;
    const html = previewHtml(link.href, urlIsText ? null : link.text, data, env);
    if (html === null) continue;
    const children = tokens[link.inlineIndex].children!;
    if (link.parent === 'p') {
      const close = link.inlineIndex + 1;
      (after.get(close) ?? after.set(close, []).get(close)!).push(html);
      const onlyTheLink = children.every(
        (child, index) => (index >= link.childIndex && index <= link.closeIndex) || isBlank(child),
      );
      if (onlyTheLink && urlIsText) for (const index of [close - 2, close - 1, close]) removedBlocks.add(index);
    } else if (link.parent === 'li') {
      // Appended to the list item, after whatever else it holds.
      const itemLevel = tokens[link.inlineIndex - 1].level - 1;
      let itemClose = link.inlineIndex + 1;
      while (
        itemClose < tokens.length &&
        !(tokens[itemClose].type === 'list_item_close' && tokens[itemClose].level === itemLevel)
      )
        itemClose++;
      (before.get(itemClose) ?? before.set(itemClose, []).get(itemClose)!).push(html);
      const nothingBefore = children.slice(0, link.childIndex).every(isBlank);
      const next = children[link.closeIndex + 1];
      const noTail = next === undefined || next.type !== 'text' || next.content === '';
      if (nothingBefore && noTail && urlIsText) removedLinks.push(link);
    } else {
      atEnd.push(html);
    }
  }
  for (const link of removedLinks.sort((a, b) => b.childIndex - a.childIndex)) {
    tokens[link.inlineIndex].children!.splice(link.childIndex, link.closeIndex - link.childIndex + 1);
  }
  const htmlToken = (html: string[]) => {
    const token = new state.Token('zulip_html', '', 0);
    token.content = html.join('');
    token.block = true;
    return token;
  };
  const out: Token[] = [];
  for (const [index, token] of tokens.entries()) {
    const preceding = before.get(index);
    if (preceding) out.push(htmlToken(preceding));
    if (!removedBlocks.has(index)) out.push(token);
    const following = after.get(index);
    if (following) out.push(htmlToken(following));
  }
  const trailing = before.get(tokens.length);
  if (trailing) atEnd.unshift(...trailing);
  if (atEnd.length > 0) out.push(htmlToken(atEnd));
  state.tokens = out;
}

function insideBlockquote(tokens: Token[], idx: number): boolean {
  let depth = 0;
  for (let index = 0; index < idx; index++) {
    if (tokens[index].type === 'blockquote_open') depth++;
    if (tokens[index].type === 'blockquote_close') depth--;
  }
  return depth > 0;
}

/** The Markdown plugin: previews after the message's other syntax has made its links. */
export function zulipInlinePreviews(md: MarkdownIt): void {
  md.core.ruler.push('zulip_inline_previews', inlinePreviews);
  // A quote fence's content is rendered apart (its fence rule renders it again): links in it,
  // or in any fence inside a block quote, get no preview, as in Zulip.
  const fence = md.renderer.rules.fence!;
  md.renderer.rules.fence = (tokens, idx, options, env: PreviewEnv, self) => {
    const quoted = tokens[idx].info.trim().split(/\s+/)[0] === 'quote' || insideBlockquote(tokens, idx);
    if (!quoted) return fence(tokens, idx, options, env, self);
    env.previewsInQuote = (env.previewsInQuote ?? 0) + 1;
    try {
      return fence(tokens, idx, options, env, self);
    } finally {
      env.previewsInQuote--;
    }
  };
}

/**
 * Zulip's post-processing of a rendered message (do_convert): placeholders of uploads whose
 * thumbnails exist become the thumbnails. Answers the HTML and the uploads still shown as
 * placeholders (Zulip's thumbnail_spinners).
 */
export function withThumbnails(
  html: string,
  previews: ReadonlyMap<string, ImagePreview> | undefined,
): { html: string; spinners: string[] } {
  if (!previews || previews.size === 0) return { html, spinners: [] };
  const rewritten = rewriteThumbnailedImages(html, previews);
  return { html: rewritten.html ?? html, spinners: [...rewritten.remaining] };
}
