// Image fixtures for the tests of uploads, avatars and emoji: a real one-pixel PNG, and images
// whose headers declare far more pixels than they hold (refused before anything is decoded).

/** A 1x1 PNG. */
export const ONE_PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A PNG whose header declares `width` x `height` (its pixel data is one pixel's). */
export function pngDeclaring(width: number, height: number): Buffer {
  const png = Buffer.from(ONE_PIXEL_PNG);
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  return png;
}

/** A 29-byte GIF whose logical screen and one image both declare 65,535 x 65,535 (a decompression bomb). */
export const GIF_BOMB = Buffer.from(
  '474946383961' + 'ffffffff000000' + '2c00000000ffffffff00' + '02024401' + '00' + '3b',
  'hex',
);
