// Thumbnails of uploaded images shown in messages (Zulip's zerver/lib/thumbnail.py and
// zerver/worker/thumbnail.py): the header read at upload time and the resize itself (which
// formats are made and how they are named: @teamchat/domain's image-previews.ts). Decoding is bounded as for
// every image here: the header check first (checkImage), a pixel limit on the decoder, only the
// frames needed, and a time limit on the resize.

import sharp, { type FormatEnum } from 'sharp';
import type { StoredThumbnail, ThumbnailFormat } from '@teamchat/domain';
import { BadImageError, checkImage, IMAGE_BOMB_TOTAL_PIXELS, IMAGE_MAX_ANIMATED_PIXELS } from './check';

/** What the upload's header says (Zulip's maybe_thumbnail). */
export interface ImageFacts {
  /** As shown: an EXIF orientation that turns the image swaps these. */
  width: number;
  height: number;
  frames: number;
}

/**
 * Zulip's maybe_thumbnail check: an upload declared as an accepted image type whose header parses
 * as one within the pixel limits (an animation's first three frames) is an image to thumbnail;
 * null otherwise. No pixel is decoded.
 */
export async function thumbnailableImage(data: Buffer): Promise<ImageFacts | null> {
  try {
    const header = await checkImage(data, { truncatedAnimation: true });
    const { orientation } = await sharp(data, { limitInputPixels: false }).metadata();
    const turned = orientation !== undefined && orientation >= 5 && orientation <= 8;
    return {
      width: turned ? header.height : header.width,
      height: turned ? header.width : header.height,
      frames: header.frames,
    };
  } catch (error) {
    if (error instanceof BadImageError) return null;
    throw error;
  }
}

/** Longest one thumbnail may take to make; a well-formed image of the accepted size needs far less. */
export const THUMBNAIL_TIMEOUT_SECONDS = 20;

const CONTENT_TYPES: Record<string, string> = {
  webp: 'image/webp',
  png: 'image/png',
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  avif: 'image/avif',
};

/**
 * One thumbnail (Zulip's ensure_thumbnails, per format): shrunk, never enlarged, to fit the
 * format's box, the aspect kept. From an animation, an animated format keeps as many frames as
 * IMAGE_MAX_ANIMATED_PIXELS allows (all of them if they fit), a still one the first frame.
 * A still image is turned as its EXIF orientation says. Throws BadImageError if libvips cannot.
 */
export async function makeThumbnail(
  data: Buffer,
  format: ThumbnailFormat,
  image: { original_width_px: number; original_height_px: number; frames: number },
  timeoutSeconds = THUMBNAIL_TIMEOUT_SECONDS,
): Promise<{ bytes: Buffer; stored: StoredThumbnail }> {
  const contentType = CONTENT_TYPES[format.extension];
  if (!contentType) throw new BadImageError('Invalid image format');
  let pages = 1;
  if (image.frames > 1 && format.animated) {
    const pixelsPerFrame = image.original_width_px * image.original_height_px;
    pages =
      pixelsPerFrame * image.frames < IMAGE_MAX_ANIMATED_PIXELS
        ? -1
        : Math.max(1, Math.floor(IMAGE_MAX_ANIMATED_PIXELS / pixelsPerFrame));
  }
  try {
    let pipeline = sharp(data, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, pages, animated: pages !== 1 });
    // libvips's thumbnail turns an image by its EXIF orientation; frames of an animation have none.
    if (pages === 1) pipeline = pipeline.rotate();
    const { data: bytes, info } = await pipeline
      .resize(format.maxWidth, format.maxHeight, { fit: 'inside', withoutEnlargement: true })
      .toFormat(format.extension as keyof FormatEnum)
      .timeout({ seconds: timeoutSeconds })
      .toBuffer({ resolveWithObject: true });
    const height = format.animated && info.pageHeight ? info.pageHeight : info.height;
    return {
      bytes,
      stored: {
        extension: format.extension,
        content_type: contentType,
        max_width: format.maxWidth,
        max_height: format.maxHeight,
        animated: format.animated,
        width: info.width,
        height,
        byte_size: bytes.length,
      },
    };
  } catch {
    throw new BadImageError('Image is corrupted or truncated');
  }
}
