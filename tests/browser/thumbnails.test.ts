// An uploaded image's preview in Zulip 10.2's web app, unmodified, in headless Chromium: one
// person uploads an image and sends a message linking it, as the compose box writes it; another,
// reading the channel, sees the message arrive and its preview become the thumbnail the worker
// made (the placeholder replaced live by the rendering-only update_message event, or the
// thumbnail at once if the job was first). The <img> points at /user_uploads/thumbnail/… and
// loads. Any page error, console error or refused request fails the step. Screenshot:
// var/browser/thumbnails/NN-<step>.png.
import zlib from 'node:zlib';
import { appLoaded, go, logIn, message } from './support/app';
import { BrowserSession, type Person } from './support/browser';
import { startWebStack, type WebStack } from './support/stack';

jest.setTimeout(180_000);

let web: WebStack;
let session: BrowserSession;
let max: Person;

// What the function run in the page sees (this project's TypeScript has no DOM library).
interface PageImage {
  complete: boolean;
  naturalWidth: number;
  naturalHeight: number;
  getAttribute(name: string): string | null;
}

/** A PNG (8-bit RGB): blue, with a yellow rectangle in the middle. */
function png(width: number, height: number): Buffer {
  const crc32 = (data: Buffer) => zlib.crc32(data);
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inside = x > width / 3 && x < (2 * width) / 3 && y > height / 3 && y < (2 * height) / 3;
      rows.set(inside ? [240, 192, 32] : [40, 120, 200], y * (width * 3 + 1) + 1 + x * 3);
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

beforeAll(async () => {
  web = await startWebStack();
  session = await BrowserSession.start('thumbnails', web.stack.gatewayUrl);
  max = await session.person('max');
}, 150_000);

afterAll(async () => {
  await session?.close();
  await web?.stack.close();
});

test("a message linking an uploaded image shows the image's thumbnail", async () => {
  await session.step('max opens #general', async () => {
    await logIn(max.page, web.member);
    await appLoaded(max.page);
    await go(max.page, `#narrow/channel/${web.channels.general}-general`);
    await message(max.page, 'What are we building this week?').waitFor();
  });

  // An image bigger than the thumbnail box: the preview must be the thumbnail.
  const picture = png(1600, 1000);
  // The multipart body a browser's FormData makes, as the compose box's upload sends it.
  const form = new FormData();
  form.append('file', new Blob([picture], { type: 'image/png' }), 'whiteboard.png');
  const encoded = new Request('http://multipart.invalid', { method: 'POST', body: form });
  const uploaded = await web.admin.client.post(
    '/api/v1/user_uploads',
    {},
    {
      body: Buffer.from(await encoded.arrayBuffer()),
      headers: { 'content-type': encoded.headers.get('content-type')! },
    },
  );
  expect(uploaded.status).toBe(200);
  const url = uploaded.body.url as string;
  const sent = await web.admin.client.post('/api/v1/messages', {
    type: 'stream',
    to: web.channels.general,
    topic: 'plans',
    content: `The whiteboard: [whiteboard.png](${url})`,
  });
  expect(sent.status).toBe(200);

  const pathId = url.slice('/user_uploads/'.length);
  await session.step('the thumbnail shows in max’s message list', async () => {
    const row = message(max.page, 'The whiteboard:');
    await row.waitFor();
    const image = row.locator('.message_inline_image img');
    await image.waitFor();
    // The placeholder (if the message came first) becomes the thumbnail, loaded.
    await max.page.waitForFunction(
      (img) => {
        const element = img as unknown as PageImage;
        return (
          (element.getAttribute('src') ?? '').startsWith('/user_uploads/thumbnail/') &&
          element.complete &&
          element.naturalWidth > 0
        );
      },
      await image.elementHandle(),
      { timeout: 60_000 },
    );
    const shown = await image.evaluate((img) => {
      const element = img as unknown as PageImage;
      return { src: element.getAttribute('src'), width: element.naturalWidth, height: element.naturalHeight };
    });
    expect(shown.src).toMatch(
      new RegExp(`^/user_uploads/thumbnail/${pathId.replace(/[.]/g, '\\.')}/\\d+x\\d+(-anim)?\\.webp$`),
    );
    // 1600x1000 shrunk into 840x560: the thumbnail, not the original.
    expect(shown).toMatchObject({ width: 840, height: 525 });
    // The preview links the original upload, as Zulip's markup does.
    expect(await row.locator('.message_inline_image a').first().getAttribute('href')).toBe(url);
  });
  await session.screenshot(max, 'thumbnail-in-message-list');
});
