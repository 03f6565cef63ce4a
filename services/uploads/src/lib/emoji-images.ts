// Custom emoji images: which format the bytes are (the bytes decide, not the part's declared
// Content-Type), whether they are animated, and a still first frame of an animated GIF or PNG.
// Zulip decodes and resizes emoji with libvips; without an image library we accept the formats
// Zulip accepts (PNG, GIF, JPEG, WebP) as they are, bounded by the emoji size limit, and cut the
// still frame out of the file's structure (no pixel is decoded).

import { JsonableError } from '@teamchat/core';

export type EmojiImageType = 'image/png' | 'image/gif' | 'image/jpeg' | 'image/webp';

/** Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES that are also inline MIME types, bar AVIF and HEIC. */
export const EMOJI_IMAGE_TYPES: Record<EmojiImageType, string> = {
  'image/png': '.png',
  'image/gif': '.gif',
  'image/jpeg': '.jpg',
  'image/webp': '.webp',
};

/** Content-Types a client sends when it does not know the type (python-zulip-api sends none). */
const UNDECLARED = new Set(['', 'text/plain', 'application/octet-stream']);

export class BadImageError extends JsonableError {
  constructor(msg = 'Could not decode image; did you upload an image file?') {
    super(msg);
  }
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function sniff(data: Buffer): EmojiImageType | null {
  if (data.subarray(0, 8).equals(PNG_SIGNATURE)) return 'image/png';
  const head6 = data.subarray(0, 6).toString('latin1');
  if (head6 === 'GIF87a' || head6 === 'GIF89a') return 'image/gif';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
  if (data.subarray(0, 4).toString('latin1') === 'RIFF' && data.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return null;
}

export interface EmojiImage {
  type: EmojiImageType;
  extension: string;
  isAnimated: boolean;
  /** The first frame alone, for an animated image; its extension. */
  still: { data: Buffer; extension: string } | null;
}

/**
 * Checks an uploaded emoji image (Zulip's check_add_realm_emoji and upload_emoji_image): a
 * declared type outside the accepted ones is "Invalid image format"; bytes that are none of
 * them cannot be decoded.
 */
export function readEmojiImage(data: Buffer, declaredType: string | undefined): EmojiImage {
  const declared = (declaredType ?? '').split(';')[0].trim().toLowerCase();
  if (!UNDECLARED.has(declared) && !(declared in EMOJI_IMAGE_TYPES)) throw new BadImageError('Invalid image format');
  const type = sniff(data);
  if (type === null) {
    if (UNDECLARED.has(declared)) throw new BadImageError('Invalid image format');
    throw new BadImageError();
  }
  const image: EmojiImage = { type, extension: EMOJI_IMAGE_TYPES[type], isAnimated: false, still: null };
  if (type === 'image/gif') {
    const { frames, firstFrameEnd } = gifFrames(data);
    if (frames > 1) {
      const still = Buffer.concat([data.subarray(0, firstFrameEnd), Buffer.from([0x3b])]);
      return { ...image, isAnimated: true, still: { data: still, extension: '.gif' } };
    }
  } else if (type === 'image/png') {
    const chunks = pngChunks(data);
    if (chunks.some((chunk) => chunk.type === 'acTL')) {
      // The default image (IDAT) with the animation chunks left out is a plain PNG.
      const kept = chunks.filter((chunk) => !['acTL', 'fcTL', 'fdAT'].includes(chunk.type));
      const still = Buffer.concat([PNG_SIGNATURE, ...kept.map((chunk) => data.subarray(chunk.start, chunk.end))]);
      return { ...image, isAnimated: true, still: { data: still, extension: '.png' } };
    }
  }
  // An animated WebP is kept as it is, without a still frame (cutting one out needs a decoder):
  // clients show it animated.
  return image;
}

function pngChunks(data: Buffer): { type: string; start: number; end: number }[] {
  const chunks: { type: string; start: number; end: number }[] = [];
  let offset = 8;
  while (offset + 12 <= data.length) {
    const length = data.readUInt32BE(offset);
    const type = data.subarray(offset + 4, offset + 8).toString('latin1');
    const end = offset + 12 + length;
    if (end > data.length) throw new BadImageError();
    chunks.push({ type, start: offset, end });
    offset = end;
    if (type === 'IEND') break;
  }
  if (chunks[0]?.type !== 'IHDR' || !chunks.some((chunk) => chunk.type === 'IDAT')) throw new BadImageError();
  return chunks;
}

/** Skips GIF data sub-blocks from `offset`; returns the offset after the terminator. */
function skipSubBlocks(data: Buffer, offset: number): number {
  for (;;) {
    if (offset >= data.length) throw new BadImageError();
    const size = data[offset];
    offset += 1 + size;
    if (size === 0) return offset;
  }
}

function gifFrames(data: Buffer): { frames: number; firstFrameEnd: number } {
  if (data.length < 13) throw new BadImageError();
  const screenFlags = data[10];
  let offset = 13 + (screenFlags & 0x80 ? 3 * 2 ** ((screenFlags & 0x07) + 1) : 0);
  let frames = 0;
  let firstFrameEnd = 0;
  while (offset < data.length) {
    const introducer = data[offset];
    if (introducer === 0x3b) break;
    if (introducer === 0x21) {
      offset = skipSubBlocks(data, offset + 2);
    } else if (introducer === 0x2c) {
      if (offset + 10 > data.length) throw new BadImageError();
      const flags = data[offset + 9];
      offset += 10 + (flags & 0x80 ? 3 * 2 ** ((flags & 0x07) + 1) : 0);
      offset = skipSubBlocks(data, offset + 1); // after the LZW minimum code size
      frames += 1;
      if (frames === 1) firstFrameEnd = offset;
    } else {
      throw new BadImageError();
    }
  }
  if (frames === 0) throw new BadImageError();
  return { frames, firstFrameEnd };
}
