// Image previews through the gateway, as Zulip 10.2 makes them: an image upload gets an
// image_attachment row and a thumbnail job; a message linking it shows Zulip's placeholder
// until the worker has made the thumbnails, then a rendering-only update_message event brings
// the thumbnail, served at /user_uploads/thumbnail/<path>/<format> with the upload's access
// rules. Images that are not (a bomb, a lie) get no preview.
import sharp from 'sharp';
import { JOB_QUEUES } from '@teamchat/bus';
import type { TestUser } from '@teamchat/stack';
import { registerEventQueue, sendMessage, waitFor, type EventQueue } from '@teamchat/testing';
import { multipartBody, startUploadsStack, storedFiles, type UploadsStack } from './helpers';

let uploads: UploadsStack;
let alice: TestUser;
let bob: TestUser;
let outsider: TestUser;
let channelId: number;

beforeAll(async () => {
  uploads = await startUploadsStack('local', { services: ['messages', 'events', 'worker'], exportEnv: true });
  alice = await uploads.stack.createUser({ fullName: 'Alice' });
  bob = await uploads.stack.createUser({ fullName: 'Bob' });
  outsider = await uploads.stack.createUser({ fullName: 'Outsider' });
  const channel = await uploads.stack.createStream({
    name: 'photos',
    inviteOnly: true,
    subscribers: [alice.id, bob.id],
  });
  channelId = channel.id;
});
afterAll(async () => {
  await uploads.stack.deps.jobs.queue(JOB_QUEUES.thumbnail).obliterate({ force: true });
  await uploads.close();
});

const thumbnailQueue = () => uploads.stack.deps.jobs.queue(JOB_QUEUES.thumbnail);

async function upload(user: TestUser, fileName: string, content: Buffer, contentType: string) {
  const { body, contentType: type } = multipartBody([{ field: 'file', filename: fileName, content, contentType }]);
  const response = await user.client.post('/api/v1/user_uploads', {}, { body, headers: { 'content-type': type } });
  expect(response.status).toBe(200);
  return { url: response.body.url as string, pathId: (response.body.url as string).slice('/user_uploads/'.length) };
}

const fetchContent = async (user: TestUser, id: number) =>
  (await user.client.get(`/api/v1/messages/${id}`)).body.message.content as string;

/** GET through the gateway as `user` (a browser's cookie or a client's key: the key here). */
function fetchFile(user: TestUser, url: string) {
  return fetch(`${uploads.stack.gatewayUrl}${url}`, {
    headers: {
      host: uploads.stack.realm.host,
      authorization: `Basic ${Buffer.from(`${user.deliveryEmail}:${user.apiKey}`).toString('base64')}`,
    },
  });
}

async function nextUpdate(queue: EventQueue, messageId: number) {
  return waitFor(
    async () => (await queue.poll()).find((event) => event.type === 'update_message' && event.message_id === messageId),
    { what: `update_message of ${messageId}` },
  );
}

const png = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#3070b0' } })
    .png()
    .toBuffer();

test('a message sent before the thumbnail exists shows the placeholder, then the thumbnail arrives by event', async () => {
  // The worker takes no thumbnail job until the message is sent.
  await thumbnailQueue().pause();
  let messageId: number;
  let pathId: string;
  try {
    ({ pathId } = await upload(alice, 'wide picture.png', await png(1000, 600), 'image/png'));
    const row = await uploads.stack.db.imageAttachment.findUniqueOrThrow({ where: { path_id: pathId } });
    expect(row).toMatchObject({
      original_width_px: 1000,
      original_height_px: 600,
      frames: 1,
      content_type: 'image/png',
      thumbnail_metadata: [],
    });
    messageId = await sendMessage(alice, {
      type: 'stream',
      to: channelId,
      topic: 'holiday',
      content: `Look: [wide picture.png](/user_uploads/${pathId})`,
    });
    expect(await fetchContent(bob, messageId)).toBe(
      `<p>Look: <a href="/user_uploads/${pathId}">wide picture.png</a></p>\n` +
        `<div class="message_inline_image"><a href="/user_uploads/${pathId}" title="wide picture.png">` +
        `<img class="image-loading-placeholder" data-original-content-type="image/png" data-original-dimensions="1000x600"` +
        ` src="/static/images/loading/loader-black.svg"></a></div>`,
    );
  } finally {
    await thumbnailQueue().resume();
  }
  const queue = await registerEventQueue(bob.client, { event_types: JSON.stringify(['update_message']) });
  const event = await nextUpdate(queue, messageId);
  const thumbnailUrl = `/user_uploads/thumbnail/${pathId}/840x560.webp`;
  const expected =
    `<p>Look: <a href="/user_uploads/${pathId}">wide picture.png</a></p>\n` +
    `<div class="message_inline_image"><a href="/user_uploads/${pathId}" title="wide picture.png">` +
    `<img data-original-content-type="image/png" data-original-dimensions="1000x600" src="${thumbnailUrl}"></a></div>`;
  // Zulip's do_update_embedded_data: no editor, the content unchanged, rendering only.
  expect(event).toMatchObject({
    type: 'update_message',
    user_id: null,
    message_id: messageId,
    message_ids: [messageId],
    content: `Look: [wide picture.png](/user_uploads/${pathId})`,
    rendered_content: expected,
    rendering_only: true,
    flags: [],
  });
  expect(typeof event.edit_timestamp).toBe('number');
  expect(await fetchContent(bob, messageId)).toBe(expected);

  const row = await uploads.stack.db.imageAttachment.findUniqueOrThrow({ where: { path_id: pathId } });
  expect(row.thumbnail_metadata).toEqual([
    {
      extension: 'webp',
      max_width: 840,
      max_height: 560,
      animated: false,
      content_type: 'image/webp',
      width: 840,
      height: 504,
      byte_size: expect.any(Number),
    },
  ]);
  const served = await fetchFile(bob, thumbnailUrl);
  expect(served.status).toBe(200);
  expect(served.headers.get('content-type')).toBe('image/webp');
  const image = await sharp(Buffer.from(await served.arrayBuffer())).metadata();
  expect([image.format, image.width, image.height]).toEqual(['webp', 840, 504]);
  expect(storedFiles(uploads)).toContain(`thumbnail/${pathId}/840x560.webp`);

  // The original's access rules: someone who cannot read the message cannot see the thumbnail.
  expect((await fetchFile(outsider, thumbnailUrl)).status).toBe(403);
  // A format never made gets the closest made one; a name that is no format, a 404.
  const closest = await fetchFile(bob, `/user_uploads/thumbnail/${pathId}/300x200.webp`);
  expect(closest.status).toBe(200);
  expect((await sharp(Buffer.from(await closest.arrayBuffer())).metadata()).width).toBe(840);
  expect((await fetchFile(bob, `/user_uploads/thumbnail/${pathId}/big.webp`)).status).toBe(404);
  expect(
    (await fetchFile(bob, `/user_uploads/thumbnail/${uploads.stack.realm.id}/nope/x.png/840x560.webp`)).status,
  ).toBe(404);
  await queue.delete();
});

test('a message sent once the thumbnails exist renders them; an animation links its animated thumbnail', async () => {
  const frames = await Promise.all(
    ['#f00', '#0f0', '#00f'].map((color) =>
      sharp({ create: { width: 128, height: 56, channels: 3, background: color } })
        .png()
        .toBuffer(),
    ),
  );
  const gif = await sharp(frames, { join: { animated: true } })
    .gif()
    .toBuffer();
  const { pathId } = await upload(alice, 'spinning.gif', gif, 'image/gif');
  const done = await waitFor(
    async () => {
      const row = await uploads.stack.db.imageAttachment.findUnique({ where: { path_id: pathId } });
      return Array.isArray(row?.thumbnail_metadata) && row.thumbnail_metadata.length === 2 ? row : undefined;
    },
    { what: 'the animation’s two thumbnails' },
  );
  expect(done.frames).toBe(3);
  const messageId = await sendMessage(alice, {
    type: 'stream',
    to: channelId,
    topic: 'holiday',
    content: `[spinning.gif](/user_uploads/${pathId})`,
  });
  expect(await fetchContent(bob, messageId)).toBe(
    `<p><a href="/user_uploads/${pathId}">spinning.gif</a></p>\n` +
      `<div class="message_inline_image"><a href="/user_uploads/${pathId}" title="spinning.gif">` +
      `<img data-animated="true" data-original-content-type="image/gif" data-original-dimensions="128x56"` +
      ` src="/user_uploads/thumbnail/${pathId}/840x560-anim.webp"></a></div>`,
  );
  const animated = await fetchFile(bob, `/user_uploads/thumbnail/${pathId}/840x560-anim.webp`);
  expect(animated.status).toBe(200);
  const meta = await sharp(Buffer.from(await animated.arrayBuffer()), { animated: true }).metadata();
  // Never enlarged: the animation keeps its size and its three frames.
  expect([meta.format, meta.width, meta.pageHeight, meta.pages]).toEqual(['webp', 128, 56, 3]);
  const still = await fetchFile(bob, `/user_uploads/thumbnail/${pathId}/840x560.webp`);
  expect((await sharp(Buffer.from(await still.arrayBuffer())).metadata()).pages ?? 1).toBe(1);
});

test('an image bomb or a file that only claims to be an image gets no preview', async () => {
  const bomb = await png(1, 1);
  bomb.writeUInt32BE(20_000, 16);
  bomb.writeUInt32BE(20_000, 20);
  const bombUpload = await upload(alice, 'bomb.png', bomb, 'image/png');
  const liar = await upload(alice, 'liar.png', Buffer.from('not an image at all'), 'image/png');
  for (const { pathId } of [bombUpload, liar])
    expect(await uploads.stack.db.imageAttachment.findUnique({ where: { path_id: pathId } })).toBeNull();
  const messageId = await sendMessage(alice, {
    type: 'stream',
    to: channelId,
    topic: 'holiday',
    content: `[bomb.png](/user_uploads/${bombUpload.pathId})`,
  });
  expect(await fetchContent(bob, messageId)).toBe(`<p><a href="/user_uploads/${bombUpload.pathId}">bomb.png</a></p>`);
  expect((await fetchFile(bob, `/user_uploads/thumbnail/${bombUpload.pathId}/840x560.webp`)).status).toBe(404);
});

test('deleting an image upload removes its thumbnails too', async () => {
  const { pathId } = await upload(alice, 'short-lived.png', await png(64, 64), 'image/png');
  await waitFor(
    async () => {
      const row = await uploads.stack.db.imageAttachment.findUnique({ where: { path_id: pathId } });
      return Array.isArray(row?.thumbnail_metadata) && row.thumbnail_metadata.length > 0 ? row : undefined;
    },
    { what: 'the thumbnail' },
  );
  expect(storedFiles(uploads)).toContain(`thumbnail/${pathId}/840x560.webp`);
  const attachment = await uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathId } });
  expect((await alice.client.delete(`/api/v1/attachments/${attachment.id}`)).status).toBe(200);
  expect(storedFiles(uploads).filter((file) => file.includes(pathId))).toEqual([]);
  expect(await uploads.stack.db.imageAttachment.findUnique({ where: { path_id: pathId } })).toBeNull();
});
