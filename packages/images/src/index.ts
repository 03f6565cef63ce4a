// The one rule for images people upload to be shown by the server (avatars, the organisation's
// icon and logo, custom emoji): which types are accepted, how big a decoded image may be, and
// how each is resized (Zulip's zerver/lib/thumbnail.py). Decoding is libvips through sharp,
// bounded three ways: the pixel count is checked from the header before any pixel is decoded
// (an image bomb is refused in milliseconds), only the frames needed are read, and every
// resize has a time limit.

import { JsonableError } from '@teamchat/core';
import sharp from 'sharp';

/** Zulip's IMAGE_BOMB_TOTAL_PIXELS: about a quarter of a gigabyte at 3 bytes a pixel. */
export const IMAGE_BOMB_TOTAL_PIXELS = 90_000_000;
/** Zulip's IMAGE_MAX_ANIMATED_PIXELS: the budget for the first three frames of an animation. */
export const IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS / 3;
/** Zulip's DEFAULT_AVATAR_SIZE and MEDIUM_AVATAR_SIZE (square, in pixels). */
export const DEFAULT_AVATAR_SIZE = 100;
export const MEDIUM_AVATAR_SIZE = 500;
/** Zulip's DEFAULT_EMOJI_SIZE (square, in pixels). */
export const DEFAULT_EMOJI_SIZE = 64;
/** Zulip's MAX_EMOJI_GIF_FILE_SIZE_BYTES: the most a resized emoji (or its still) may weigh. */
export const MAX_EMOJI_GIF_FILE_SIZE_BYTES = 128 * 1024;
/** Longest a resize may take; a well-formed image of the accepted size needs a fraction of it. */
export const IMAGE_PROCESSING_TIMEOUT_SECONDS = 5;

/** Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES: the declared types an image upload may have. */
export const ACCEPTED_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/avif',
  'image/gif',
  'image/heic',
  'image/jpeg',
  'image/png',
  'image/tiff',
  'image/webp',
]);

/** What libvips may decode: the accepted types' formats, never SVG or PDF, whatever the bytes claim. */
const DECODABLE_FORMATS: ReadonlySet<string> = new Set(['gif', 'heif', 'jpeg', 'png', 'tiff', 'webp']);

const TYPES_BY_EXTENSION: Record<string, string> = {
  avif: 'image/avif',
  gif: 'image/gif',
  heic: 'image/heic',
  jpe: 'image/jpeg',
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  png: 'image/png',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  webp: 'image/webp',
};

// The pixel cache keeps decoded images in memory between operations: each upload is resized
// once, so it only holds memory.
sharp.cache(false);

type SharpPipeline = ReturnType<typeof sharp>;

export class BadImageError extends JsonableError {
  constructor(msg = 'Could not decode image; did you upload an image file?') {
    super(msg);
  }
}

/** The image type a file name suggests (Python's mimetypes.guess_type for images); null when none. */
export function imageTypeOfFileName(fileName: string | undefined): string | null {
  const extension = (fileName ?? '').split('.').at(-1)?.toLowerCase() ?? '';
  return (fileName ?? '').includes('.') ? (TYPES_BY_EXTENSION[extension] ?? null) : null;
}

/** Zulip's check that an upload's (declared or guessed) type is one it thumbnails. */
export function checkAcceptedImageType(contentType: string | null | undefined): void {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (!ACCEPTED_IMAGE_TYPES.has(type)) throw new BadImageError('Invalid image format');
}

export interface ImageHeader {
  /** libvips's name of the format: png, jpeg, gif, webp, tiff, heif. */
  format: string;
  width: number;
  /** Height of one frame. */
  height: number;
  frames: number;
}

/**
 * Zulip's libvips_check_image, from the header alone: the bytes must be an image of an accepted
 * format, and not too many pixels. `truncatedAnimation`: only the first frames will be read
 * (thumbnails), so an animation's budget is its first three frames; otherwise all of them.
 */
export async function checkImage(data: Buffer, options: { truncatedAnimation: boolean }): Promise<ImageHeader> {
  let header: ImageHeader;
  try {
    const metadata = await sharp(data, { limitInputPixels: false }).metadata();
    const frames = metadata.pages ?? 1;
    header = {
      format: metadata.format ?? '',
      width: metadata.width ?? 0,
      height: metadata.pageHeight ?? metadata.height ?? 0,
      frames,
    };
  } catch {
    throw new BadImageError();
  }
  if (!DECODABLE_FORMATS.has(header.format) || header.width < 1 || header.height < 1) throw new BadImageError();
  const framePixels = header.width * header.height;
  const tooBig =
    !options.truncatedAnimation || header.frames === 1
      ? framePixels * (options.truncatedAnimation ? 1 : header.frames) > IMAGE_BOMB_TOTAL_PIXELS
      : framePixels * Math.min(3, header.frames) > IMAGE_MAX_ANIMATED_PIXELS;
  if (tooBig) throw new BadImageError('Image size exceeds limit.');
  return header;
}

/** Runs a resize of a checked image; a libvips failure past the header is a corrupt image. */
async function render(pipeline: SharpPipeline, format: 'png' | 'gif' | 'jpeg' | 'webp' = 'png'): Promise<Buffer> {
  try {
    return await pipeline.timeout({ seconds: IMAGE_PROCESSING_TIMEOUT_SECONDS }).toFormat(format).toBuffer();
  } catch {
    throw new BadImageError('Image is corrupted or truncated');
  }
}

/** The first frame only, decoded with the pixel limit as a second guard. */
function firstFrame(data: Buffer): SharpPipeline {
  return sharp(data, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, pages: 1 }).rotate();
}

/**
 * Zulip's resize_avatar (also its realm icon): a `size` px square PNG, scaled up if needed, the
 * shorter side filling it and the longer one cropped around the centre; an animation's first frame.
 */
export async function resizeAvatar(data: Buffer, size = DEFAULT_AVATAR_SIZE): Promise<Buffer> {
  await checkImage(data, { truncatedAnimation: true });
  return render(firstFrame(data).resize(size, size, { fit: 'cover', position: 'centre' }));
}

/**
 * Zulip's resize_logo: shrunk (never enlarged) to fit 8 × 100 by 100 px, aspect kept, no padding
 * (1000 × 10 becomes 800 × 8; 10 × 10 stays).
 */
export async function resizeLogo(data: Buffer): Promise<Buffer> {
  await checkImage(data, { truncatedAnimation: true });
  return render(
    firstFrame(data).resize(8 * DEFAULT_AVATAR_SIZE, DEFAULT_AVATAR_SIZE, { fit: 'inside', withoutEnlargement: true }),
  );
}
export * from './receive';

/** The formats an emoji is served in: the uploaded one, so it must be one every browser shows. */
export type EmojiFormat = 'png' | 'gif' | 'jpeg' | 'webp';
const EMOJI_FORMATS: ReadonlySet<string> = new Set<EmojiFormat>(['png', 'gif', 'jpeg', 'webp']);

export interface ResizedEmoji {
  /** The format of the bytes (and so of the resized image). */
  format: EmojiFormat;
  /** A `size` px square in that format, every frame of an animation kept. */
  image: Buffer;
  /** An animation's first frame, a PNG square; null for a still image. */
  still: Buffer | null;
}

/**
 * Zulip's resize_emoji: the whole image is checked first (every frame counts against the pixel
 * budget, as every frame is kept); a still image is cropped around the centre to a `size` px
 * square, an animation fits inside one (transparent padding) with all its frames, plus its first
 * frame cropped as a still PNG. The bytes decide the format; one browsers cannot show is refused.
 */
export async function resizeEmoji(data: Buffer, size = DEFAULT_EMOJI_SIZE): Promise<ResizedEmoji> {
  const header = await checkImage(data, { truncatedAnimation: false });
  if (!EMOJI_FORMATS.has(header.format)) throw new BadImageError('Invalid image format');
  const format = header.format as EmojiFormat;
  const cropped = firstFrame(data).resize(size, size, { fit: 'cover', position: 'centre' });
  let resized: ResizedEmoji;
  if (header.frames === 1) {
    resized = { format, image: await render(cropped, format), still: null };
  } else {
    const allFrames = sharp(data, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, pages: -1 }).resize(size, size, {
      fit: 'contain',
      background: { r: 0, g: 0, b: 0, alpha: 0 },
    });
    const [image, still] = await Promise.all([render(allFrames, format), render(cropped)]);
    resized = { format, image, still };
  }
  if ((resized.still ?? resized.image).length > MAX_EMOJI_GIF_FILE_SIZE_BYTES)
    throw new BadImageError('Image size exceeds limit');
  return resized;
}
