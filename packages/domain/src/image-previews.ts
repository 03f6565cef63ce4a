// Previews of uploaded images in messages, as Zulip 10.2 makes them (zerver/lib/thumbnail.py):
// the thumbnail formats made of every image upload and their names, what rendering needs to
// know of each linked upload (its image_attachment row), the placeholder shown until the
// thumbnails exist, and the rewrite of rendered messages once they do. The Markdown side
// (where a preview goes) is inline-previews.ts; the resizing is packages/images.

import { createHmac } from 'node:crypto';
import type { TxClient } from '@teamchat/db';
import { escapeHtmlAttribute } from './html';

/** Zulip's ThumbnailFormat: the largest box a thumbnail fits in, its format, and whether it moves. */
export interface ThumbnailFormat {
  extension: string;
  maxWidth: number;
  maxHeight: number;
  animated: boolean;
}

/** A thumbnail made (Zulip's StoredThumbnailFormat, as image_attachment.thumbnail_metadata holds it). */
export interface StoredThumbnail {
  extension: string;
  max_width: number;
  max_height: number;
  animated: boolean;
  content_type: string;
  width: number;
  height: number;
  byte_size: number;
}

/**
 * Zulip's THUMBNAIL_OUTPUT_FORMATS: what is made of every image; the first animated and the
 * first still one are what rendered messages link (large, so clients that do not pick a size
 * still get something sharp). Register's server_thumbnail_formats lists these.
 */
export const THUMBNAIL_OUTPUT_FORMATS: readonly ThumbnailFormat[] = [
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: true },
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: false },
];

/** Zulip's TRANSCODED_IMAGE_FORMAT: also made of images browsers do not show (HEIC, TIFF). */
export const TRANSCODED_IMAGE_FORMAT: ThumbnailFormat = {
  extension: 'webp',
  maxWidth: 4032,
  maxHeight: 3024,
  animated: false,
};

/** Zulip's INLINE_MIME_TYPES that are images: types browsers show as they are. */
export const INLINE_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/apng',
  'image/avif',
  'image/gif',
  'image/jpeg',
  'image/png',
  'image/webp',
]);

/** Where the web app shows a spinner until the thumbnail exists (a static file of the web app). */
export const IMAGE_LOADING_PLACEHOLDER_SRC = '/static/images/loading/loader-black.svg';

/** The format's name as Zulip prints it, "840x560-anim.webp": the thumbnail's file name. */
export function thumbnailFormatName(format: ThumbnailFormat | StoredThumbnail): string {
  const [width, height] =
    'maxWidth' in format ? [format.maxWidth, format.maxHeight] : [format.max_width, format.max_height];
  return `${width}x${height}${format.animated ? '-anim' : ''}.${format.extension}`;
}

/** Zulip's BaseThumbnailFormat.from_string; null when the name is not a format's. */
export function parseThumbnailFormat(name: string): ThumbnailFormat | null {
  const parts = /^(\d+)x(\d+)(-anim)?\.(\w+)$/.exec(name);
  if (!parts) return null;
  return {
    maxWidth: Number(parts[1]),
    maxHeight: Number(parts[2]),
    animated: parts[3] !== undefined,
    extension: parts[4],
  };
}

export function sameThumbnailFormat(a: ThumbnailFormat | StoredThumbnail, b: ThumbnailFormat | StoredThumbnail) {
  return thumbnailFormatName(a) === thumbnailFormatName(b);
}

/** The storage key (and URL path after /user_uploads/) of an upload's thumbnail in a format. */
export function thumbnailPath(pathId: string, format: ThumbnailFormat | StoredThumbnail): string {
  return `thumbnail/${pathId}/${thumbnailFormatName(format)}`;
}

/** What thumbnailing reads of an image_attachment row. */
export interface ImageAttachmentFacts {
  path_id: string;
  content_type: string | null;
  original_width_px: number;
  original_height_px: number;
  frames: number;
  thumbnail_metadata: unknown;
}

export function storedThumbnails(row: Pick<ImageAttachmentFacts, 'thumbnail_metadata'>): StoredThumbnail[] {
  return Array.isArray(row.thumbnail_metadata) ? (row.thumbnail_metadata as StoredThumbnail[]) : [];
}

/**
 * Zulip's missing_thumbnails: the formats an image needs and does not have yet. Images browsers
 * cannot show also get the large transcoded one (portrait when taller than wide); a still image
 * gets no animated one.
 */
export function missingThumbnails(image: ImageAttachmentFacts): ThumbnailFormat[] {
  const made = storedThumbnails(image);
  const wanted = [...THUMBNAIL_OUTPUT_FORMATS];
  if (!INLINE_IMAGE_TYPES.has(image.content_type ?? '')) {
    const landscape = image.original_width_px >= image.original_height_px;
    wanted.push({
      ...TRANSCODED_IMAGE_FORMAT,
      maxWidth: landscape ? TRANSCODED_IMAGE_FORMAT.maxWidth : TRANSCODED_IMAGE_FORMAT.maxHeight,
      maxHeight: landscape ? TRANSCODED_IMAGE_FORMAT.maxHeight : TRANSCODED_IMAGE_FORMAT.maxWidth,
    });
  }
  return wanted.filter(
    (format) => !made.some((stored) => sameThumbnailFormat(stored, format)) && (image.frames > 1 || !format.animated),
  );
}

/** What a message's rendering knows of a linked image upload (Zulip's MarkdownImageMetadata). */
export interface ImagePreview {
  /** The thumbnail rendered messages link; null until it is made (a placeholder is shown). */
  url: string | null;
  isAnimated: boolean;
  width: number;
  height: number;
  contentType: string | null;
  /** The large thumbnail of an image browsers do not show (Zulip's get_transcoded_format). */
  transcoded: StoredThumbnail | null;
}

/** Zulip's get_default_thumbnail_url: the first output format that moves as the image does. */
export function defaultThumbnail(image: Pick<ImageAttachmentFacts, 'path_id' | 'frames'>) {
  const format =
    THUMBNAIL_OUTPUT_FORMATS.find((candidate) => candidate.animated === image.frames > 1) ??
    THUMBNAIL_OUTPUT_FORMATS[0];
  return { url: `/user_uploads/${thumbnailPath(image.path_id, format)}`, isAnimated: format.animated };
}

/** The preview of an image upload, from its row (placeholder until thumbnails exist). */
export function imagePreviewOf(row: ImageAttachmentFacts): ImagePreview {
  const made = storedThumbnails(row);
  const base = {
    width: row.original_width_px,
    height: row.original_height_px,
    contentType: row.content_type,
  };
  if (made.length === 0) return { ...base, url: null, isAnimated: false, transcoded: null };
  const { url, isAnimated } = defaultThumbnail(row);
  const transcoded =
    row.content_type === null || INLINE_IMAGE_TYPES.has(row.content_type)
      ? null
      : [...made].sort((a, b) => a.width * a.height - b.width * b.height).at(-1)!;
  return { ...base, url, isAnimated, transcoded };
}

/** Zulip's path pattern in get_user_upload_previews (Python's \w is Unicode). */
const UPLOAD_PATH = /\/user_uploads\/(\d+\/[/\p{L}\p{N}\p{M}_.-]+)/gu;

/**
 * Zulip's get_user_upload_previews: the image uploads of this organisation `content` links, by
 * path id. An upload absent from the answer is no image (its header did not parse as one).
 * `lock` takes the rows FOR SHARE (in a transaction): the thumbnail job cannot finish them
 * until it commits.
 */
export async function loadUploadPreviews(
  db: Pick<TxClient, '$queryRawUnsafe'>,
  realmId: number,
  content: string,
  options: { lock?: boolean; pathIds?: string[] } = {},
): Promise<Map<string, ImagePreview>> {
  const pathIds = options.pathIds ?? [...new Set([...content.matchAll(UPLOAD_PATH)].map((match) => match[1]))];
  const previews = new Map<string, ImagePreview>();
  if (pathIds.length === 0) return previews;
  const rows = await db.$queryRawUnsafe<ImageAttachmentFacts[]>(
    `SELECT path_id, content_type, original_width_px, original_height_px, frames, thumbnail_metadata
       FROM image_attachment WHERE realm_id = $1 AND path_id = ANY($2::text[]) ORDER BY id${options.lock ? ' FOR SHARE' : ''}`,
    realmId,
    pathIds,
  );
  for (const row of rows) previews.set(row.path_id, imagePreviewOf(row));
  return previews;
}

/** Zulip's placeholder <img> (attributes in its serializer's order, alphabetical). */
export function placeholderImageHtml(preview: ImagePreview): string {
  const type =
    preview.contentType !== null ? ` data-original-content-type="${escapeHtmlAttribute(preview.contentType)}"` : '';
  return (
    `<img class="image-loading-placeholder"${type} data-original-dimensions="${preview.width}x${preview.height}"` +
    ` src="${IMAGE_LOADING_PLACEHOLDER_SRC}">`
  );
}

/** The <img> of a made thumbnail, as Zulip's rewrite_thumbnailed_images writes it. */
export function thumbnailImageHtml(preview: ImagePreview & { url: string }): string {
  return (
    '<img' +
    (preview.isAnimated ? ' data-animated="true"' : '') +
    (preview.contentType !== null ? ` data-original-content-type="${escapeHtmlAttribute(preview.contentType)}"` : '') +
    ` data-original-dimensions="${preview.width}x${preview.height}"` +
    (preview.transcoded ? ` data-transcoded-image="${thumbnailFormatName(preview.transcoded)}"` : '') +
    ` src="${escapeHtmlAttribute(preview.url)}">`
  );
}

const PLACEHOLDER_PREVIEW =
  /<div class="message_inline_image"><a href="\/user_uploads\/([^"]+)"[^>]*><img class="image-loading-placeholder"[^>]*><\/a><\/div>/g;

function unescapeAttribute(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/**
 * Zulip's rewrite_thumbnailed_images: each placeholder of an upload in `previews` whose thumbnail
 * exists becomes the thumbnail's <img>; each of an upload in `removed` (it turned out not to be
 * an image) loses its whole preview. Answers the new HTML (null when nothing changed) and the
 * path ids whose placeholders remain.
 */
export function rewriteThumbnailedImages(
  html: string,
  previews: ReadonlyMap<string, ImagePreview>,
  removed: ReadonlySet<string> = new Set(),
): { html: string | null; remaining: Set<string> } {
  const remaining = new Set<string>();
  let changed = false;
  const rewritten = html.replace(PLACEHOLDER_PREVIEW, (whole, href: string) => {
    const pathId = unescapeAttribute(href);
    if (removed.has(pathId)) {
      changed = true;
      return '';
    }
    const preview = previews.get(pathId);
    if (!preview || preview.url === null) {
      remaining.add(pathId);
      return whole;
    }
    changed = true;
    return whole.replace(
      /<img class="image-loading-placeholder"[^>]*>/,
      thumbnailImageHtml({ ...preview, url: preview.url }),
    );
  });
  return { html: changed ? rewritten : null, remaining };
}

/** Zulip's get_camo_url: an external image's URL through the Camo proxy, when one is configured. */
export function camoUrl(url: string, camo: { uri: string; key: string } | undefined): string {
  if (!camo || camo.uri === '') return url;
  const digest = createHmac('sha1', camo.key).update(url).digest('hex');
  return `${camo.uri}${digest}/${Buffer.from(url).toString('hex')}`;
}

/**
 * For a send whose rendering shows placeholders of these uploads: locks their rows FOR SHARE
 * until its commit (so the thumbnail job, which takes them FOR UPDATE, sees the message once it
 * runs), and answers the ids of those whose thumbnails were made while it rendered: their job
 * ran before the message existed, so it is asked again to show them in it.
 */
export async function imagesThumbnailedMeanwhile(
  db: Pick<TxClient, '$queryRawUnsafe'>,
  realmId: number,
  pathIds: readonly string[],
): Promise<number[]> {
  if (pathIds.length === 0) return [];
  const rows = await db.$queryRawUnsafe<{ id: number; done: boolean }[]>(
    `SELECT id, thumbnail_metadata <> '[]'::jsonb AS done FROM image_attachment
      WHERE realm_id = $1 AND path_id = ANY($2::text[]) ORDER BY id FOR SHARE`,
    realmId,
    [...pathIds],
  );
  return rows.filter((row) => row.done).map((row) => row.id);
}
