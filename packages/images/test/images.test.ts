// The image rule on its own: Zulip's pixel budgets (a still image, the first three frames of an
// animation, every frame when the whole animation is kept), read from headers; what is never
// decoded; Zulip's crops and shrinks; the types accepted by declaration or by file name.
import sharp from 'sharp';
import {
  BadImageError,
  checkAcceptedImageType,
  checkImage,
  imageTypeOfFileName,
  resizeAvatar,
  resizeLogo,
} from '@teamchat/images';

/** A GIF of `frames` frames, each declaring `width` x `height` (their pixel data is one pixel's). */
function gifDeclaring(width: number, height: number, frames: number): Buffer {
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(width, 0);
  screen.writeUInt16LE(height, 2);
  screen[4] = 0x80; // a global colour table of two colours
  const head = Buffer.concat([Buffer.from('GIF89a'), screen, Buffer.from('000000ffffff', 'hex')]);
  const frame = Buffer.from('21f90400000000002c00000000010001000002024401' + '00', 'hex');
  frame.writeUInt16LE(width, 13);
  frame.writeUInt16LE(height, 15);
  return Buffer.concat([head, ...Array.from({ length: frames }, () => frame), Buffer.from([0x3b])]);
}

async function pngDeclaring(width: number, height: number): Promise<Buffer> {
  const png = await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
    .png()
    .toBuffer();
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  return png;
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => (error instanceof BadImageError ? error.message : error),
  );

test('a still image over 90 million pixels is refused from its header', async () => {
  const bomb = await pngDeclaring(20_000, 20_000);
  expect(await refusal(checkImage(bomb, { truncatedAnimation: true }))).toBe('Image size exceeds limit.');
  expect(await refusal(resizeAvatar(bomb))).toBe('Image size exceeds limit.');
  expect(await refusal(resizeLogo(bomb))).toBe('Image size exceeds limit.');
  expect(await checkImage(await pngDeclaring(9000, 10_000), { truncatedAnimation: true })).toMatchObject({
    width: 9000,
    height: 10_000,
    frames: 1,
  });
});

test("an animation's budget: its first three frames when only those are read, every frame otherwise", async () => {
  // 20 million pixels a frame: three are over a third of the budget, all three within it.
  const animation = gifDeclaring(5000, 4000, 3);
  expect(await refusal(checkImage(animation, { truncatedAnimation: true }))).toBe('Image size exceeds limit.');
  expect(await checkImage(animation, { truncatedAnimation: false })).toEqual({
    format: 'gif',
    width: 5000,
    height: 4000,
    frames: 3,
  });
  // Five such frames are over the whole budget.
  expect(await refusal(checkImage(gifDeclaring(5000, 4000, 5), { truncatedAnimation: false }))).toBe(
    'Image size exceeds limit.',
  );
});

test('what is not an accepted image format is never decoded', async () => {
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
  for (const data of [svg, Buffer.from('plain text'), Buffer.alloc(0)]) {
    expect(await refusal(resizeAvatar(data))).toBe('Could not decode image; did you upload an image file?');
  }
});

test("Zulip's avatar crop (centre, scaled up) and logo shrink (never enlarged)", async () => {
  // Red, green and blue thirds: the square crop keeps the green middle.
  const thirds = await sharp({ create: { width: 300, height: 100, channels: 3, background: '#00ff00' } })
    .composite([
      { input: { create: { width: 100, height: 100, channels: 3, background: '#ff0000' } }, left: 0, top: 0 },
      { input: { create: { width: 100, height: 100, channels: 3, background: '#0000ff' } }, left: 200, top: 0 },
    ])
    .png()
    .toBuffer();
  const avatar = await resizeAvatar(thirds, 50);
  const { data, info } = await sharp(avatar).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  expect([info.width, info.height]).toEqual([50, 50]);
  // Every pixel green (the edges a little blended by the resampling): no red or blue third kept.
  for (let pixel = 0; pixel < 50 * 50; pixel++) {
    const [red, green, blue] = data.subarray(pixel * 3, pixel * 3 + 3);
    expect(red < 40 && green > 200 && blue < 40).toBe(true);
  }
  const tiny = await sharp({ create: { width: 4, height: 2, channels: 3, background: '#fff' } })
    .png()
    .toBuffer();
  expect((await sharp(await resizeAvatar(tiny)).metadata()).width).toBe(100);

  const size = async (data: Buffer) => {
    const { width, height } = await sharp(data).metadata();
    return [width, height];
  };
  const wide = await sharp({ create: { width: 1000, height: 10, channels: 3, background: '#fff' } })
    .png()
    .toBuffer();
  expect(await size(await resizeLogo(wide))).toEqual([800, 8]);
  const small = await sharp({ create: { width: 10, height: 10, channels: 3, background: '#fff' } })
    .png()
    .toBuffer();
  expect(await size(await resizeLogo(small))).toEqual([10, 10]);
});

test('accepted types, declared or by file name', () => {
  expect(imageTypeOfFileName('me.JPG')).toBe('image/jpeg');
  expect(imageTypeOfFileName('scan.tiff')).toBe('image/tiff');
  expect(imageTypeOfFileName('notes.txt')).toBeNull();
  expect(imageTypeOfFileName('png')).toBeNull();
  expect(() => checkAcceptedImageType('image/webp; charset=binary')).not.toThrow();
  for (const type of ['image/svg+xml', 'text/plain', '', null]) {
    expect(() => checkAcceptedImageType(type)).toThrow('Invalid image format');
  }
});
