// The one rule for images people upload to be shown by the server (avatars, the organisation's
// icon and logo, custom emoji): which types are accepted, how big a decoded image may be, and
// how each is resized (Zulip's zerver/lib/thumbnail.py). Decoding is libvips through sharp,
// bounded three ways: the pixel count is checked from the header before any pixel is decoded
// (an image bomb is refused in milliseconds), only the frames needed are read, and every
// resize has a time limit.

import sharp from 'sharp';
import {
  BadImageError,
  checkImage,
  DEFAULT_AVATAR_SIZE,
  DEFAULT_EMOJI_SIZE,
  IMAGE_BOMB_TOTAL_PIXELS,
  IMAGE_PROCESSING_TIMEOUT_SECONDS,
  MAX_EMOJI_GIF_FILE_SIZE_BYTES,
} from './check';

export * from './check';
export * from './thumbnails';
export * from './ensure-thumbnails';

type SharpPipeline = ReturnType<typeof sharp>;

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
