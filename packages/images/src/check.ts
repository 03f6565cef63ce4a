// The checks every decoded image goes through (Zulip's libvips_check_image): accepted types,
// and the pixel count read from the header before any pixel is decoded.

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
