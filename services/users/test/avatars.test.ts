// Avatars and the organisation's icon and logos through the gateway: uploads (PNG, JPEG, an
// animated GIF) resized as Zulip resizes them, written by the users service into the uploads
// storage and served by the uploads service at /user_avatars/; the events; register after;
// deletion; who may; Zulip's refusals (not an image, too many pixels, too large); and
// /avatar/{user} redirects.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { startS3TestServer } from '@teamchat/storage/test/s3-test-server';
import { captureEvents, expectError, ofType, registerEventQueue } from '@teamchat/testing';

let stack: Stack;
let localDir: string;
let owner: TestUser;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  localDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-avatars-'));
  stack = await startStack({
    services: ['uploads', 'events', 'messages'],
    env: { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: localDir },
  });
  owner = await stack.createUser({ fullName: 'Owner', role: Role.OWNER });
  alice = await stack.createUser({ fullName: 'Alice' });
  bob = await stack.createUser({ fullName: 'Bob' });
});
afterAll(async () => {
  await stack?.close();
  await fs.promises.rm(localDir, { recursive: true, force: true });
});

interface FilePart {
  filename: string;
  content: Buffer;
  contentType?: string;
}

/** A multipart body as browsers send FormData: the file parts and text fields. */
function multipart(files: FilePart[], fields: Record<string, string> = {}) {
  const boundary = crypto.randomBytes(12).toString('hex');
  const chunks: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  files.forEach((file, i) => {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="file-${i}"; filename="${file.filename}"\r\n`;
    if (file.contentType) head += `Content-Type: ${file.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), file.content, Buffer.from('\r\n'));
  });
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

function post(user: TestUser, url: string, files: FilePart[], fields: Record<string, string> = {}) {
  return user.client.post(url, {}, multipart(files, fields));
}

const image = (width: number, height: number, colour = '#3366cc') =>
  sharp({ create: { width, height, channels: 3, background: colour } });

/** An animated GIF: three frames of `width` x `height`, each a colour of its own. */
async function animatedGif(width: number, height: number): Promise<Buffer> {
  const frames = await Promise.all(
    ['#ff0000', '#00ff00', '#0000ff'].map((colour) => image(width, height, colour).raw().toBuffer()),
  );
  return sharp(Buffer.concat(frames), { raw: { width, height: height * 3, channels: 3, pageHeight: height } })
    .gif({ loop: 0, delay: [100, 100, 100] })
    .toBuffer();
}

/** A PNG whose header declares `width` x `height` (an image bomb when they are large): 1 pixel of data. */
async function pngDeclaring(width: number, height: number): Promise<Buffer> {
  const png = await image(1, 1).png().toBuffer();
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  return png;
}

/** What the gateway serves at `url` (no credentials: /user_avatars/ is public). */
async function served(url: string) {
  const response = await fetch(`${stack.gatewayUrl}${url}`, { headers: { host: stack.realm.host } });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function decodedSize(bytes: Buffer) {
  const metadata = await sharp(bytes).metadata();
  return { format: metadata.format, width: metadata.width, height: metadata.height, pages: metadata.pages ?? 1 };
}

function basicAuth(user: TestUser) {
  return { authorization: `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString('base64')}` };
}

/** GET /avatar/... through the gateway without following the redirect. */
function avatarRedirect(pathAndQuery: string, headers: Record<string, string> = basicAuth(bob)) {
  return fetch(`${stack.gatewayUrl}${pathAndQuery}`, {
    headers: { host: stack.realm.host, ...headers },
    redirect: 'manual',
  });
}

const activeUserIds = async () =>
  (await stack.db.userProfile.findMany({ where: { realm_id: stack.realm.id, is_active: true } }))
    .map((user) => user.id)
    .sort((a, b) => a - b);

describe('a user avatar', () => {
  test('a PNG upload: resized to 100 px and 500 px squares, announced, served, in register and behind /avatar/{id}', async () => {
    const before = await stack.db.userProfile.findUniqueOrThrow({ where: { id: alice.id } });
    let response!: Awaited<ReturnType<typeof post>>;
    const captured = await captureEvents(stack, async () => {
      response = await post(alice, '/api/v1/users/me/avatar', [
        { filename: 'me.png', content: await image(300, 200).png().toBuffer(), contentType: 'image/png' },
      ]);
    });
    expect(response.status).toBe(200);
    const version = before.avatar_version + 1;
    const avatarUrl: string = response.body.avatar_url;
    expect(avatarUrl).toMatch(new RegExp(`^/user_avatars/${stack.realm.id}/[0-9a-f]{40}\\.png\\?version=${version}$`));
    const mediumUrl = avatarUrl.replace('.png?', '-medium.png?');

    const [event] = ofType(captured, 'realm_user', 'update');
    expect(event.event).toEqual({
      type: 'realm_user',
      op: 'update',
      person: {
        avatar_source: 'U',
        avatar_url: avatarUrl,
        avatar_url_medium: mediumUrl,
        avatar_version: version,
        user_id: alice.id,
      },
    });
    expect([...event.recipientIds].sort((a, b) => a - b)).toEqual(await activeUserIds());

    const small = await served(avatarUrl);
    expect(small.response.status).toBe(200);
    expect(small.response.headers.get('content-type')).toBe('image/png');
    expect(small.response.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(await decodedSize(small.bytes)).toEqual({ format: 'png', width: 100, height: 100, pages: 1 });
    const medium = await served(mediumUrl);
    expect(await decodedSize(medium.bytes)).toEqual({ format: 'png', width: 500, height: 500, pages: 1 });

    expect((await alice.client.get('/api/v1/users/me')).body.avatar_url).toBe(avatarUrl);
    const state = await alice.client.post('/api/v1/register', {
      fetch_event_types: ['realm_user'],
      client_gravatar: true,
    });
    expect(state.body).toMatchObject({ avatar_source: 'U', avatar_url: avatarUrl, avatar_url_medium: mediumUrl });
    const inList = state.body.realm_users.find((user: { user_id: number }) => user.user_id === alice.id);
    expect(inList).toMatchObject({ avatar_url: avatarUrl, avatar_version: version });

    // Messages show the sender's new avatar.
    const sent = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content: 'hi',
    });
    expect(sent.status).toBe(200);
    const fetched = await bob.client.get('/api/v1/messages', {
      anchor: sent.body.id,
      num_before: 0,
      num_after: 0,
      client_gravatar: true,
    });
    expect(fetched.body.messages[0]).toMatchObject({ sender_id: alice.id, avatar_url: avatarUrl });

    const redirect = await avatarRedirect(`/avatar/${alice.id}`);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe(avatarUrl);
    expect((await avatarRedirect(`/avatar/${alice.id}/medium`)).headers.get('location')).toBe(mediumUrl);
    expect((await avatarRedirect(`/avatar/${encodeURIComponent(alice.email)}`)).headers.get('location')).toBe(
      avatarUrl,
    );
  });

  test('a JPEG and an animated GIF: the same squares, the GIF by its first frame', async () => {
    const jpeg = await post(bob, '/api/v1/users/me/avatar', [
      { filename: 'photo.jpg', content: await image(640, 480, '#884422').jpeg().toBuffer() },
    ]);
    expect(jpeg.status).toBe(200);
    expect(await decodedSize((await served(jpeg.body.avatar_url)).bytes)).toEqual({
      format: 'png',
      width: 100,
      height: 100,
      pages: 1,
    });

    const gif = await animatedGif(120, 80);
    expect((await sharp(gif).metadata()).pages).toBe(3);
    const animated = await post(bob, '/api/v1/users/me/avatar', [
      { filename: 'dance.gif', content: gif, contentType: 'image/gif' },
    ]);
    expect(animated.status).toBe(200);
    const { bytes } = await served(animated.body.avatar_url);
    expect(await decodedSize(bytes)).toEqual({ format: 'png', width: 100, height: 100, pages: 1 });
    // The first frame is red.
    const { data } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    expect([data[0], data[1], data[2]]).toEqual([255, 0, 0]);
    // The JPEG's files went with it.
    expect((await served(jpeg.body.avatar_url)).response.status).toBe(404);
  });

  test('deleting it: back to the generated avatar, announced, its files gone', async () => {
    const uploaded = await post(alice, '/api/v1/users/me/avatar', [
      { filename: 'me.webp', content: await image(50, 50).webp().toBuffer() },
    ]);
    expect(uploaded.status).toBe(200);
    let response!: Awaited<ReturnType<typeof post>>;
    const captured = await captureEvents(stack, async () => {
      response = await alice.client.delete('/api/v1/users/me/avatar');
    });
    expect(response.status).toBe(200);
    const row = await stack.db.userProfile.findUniqueOrThrow({ where: { id: alice.id } });
    expect(row).toMatchObject({ avatar_source: 'G', avatar_key: null });
    expect(response.body.avatar_url).not.toMatch(/^\/user_avatars\//);
    expect(response.body.avatar_url).toMatch(new RegExp(`version=${row.avatar_version}$`));
    const [event] = ofType(captured, 'realm_user', 'update');
    expect(event.event.person).toEqual({
      avatar_source: 'G',
      avatar_url: response.body.avatar_url,
      avatar_url_medium: expect.stringMatching(/version=/),
      avatar_version: row.avatar_version,
      user_id: alice.id,
    });
    expect((await served(uploaded.body.avatar_url)).response.status).toBe(404);
    expect((await avatarRedirect(`/avatar/${alice.id}`)).headers.get('location')).toBe(response.body.avatar_url);
    const state = await alice.client.post('/api/v1/register', { fetch_event_types: ['realm_user'] });
    expect(state.body.avatar_source).toBe('G');
  });

  test("refusals, with Zulip's errors, and nothing changed", async () => {
    const before = await stack.db.userProfile.findUniqueOrThrow({ where: { id: bob.id } });
    const png = await image(20, 20).png().toBuffer();
    expectError(
      await post(bob, '/api/v1/users/me/avatar', []),
      400,
      'BAD_REQUEST',
      'You must upload exactly one avatar.',
    );
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [
        { filename: 'a.png', content: png },
        { filename: 'b.png', content: png },
      ]),
      400,
      'BAD_REQUEST',
      'You must upload exactly one avatar.',
    );
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [{ filename: 'notes.txt', content: png }]),
      400,
      'BAD_REQUEST',
      'Invalid image format',
    );
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [{ filename: 'fake.png', content: Buffer.from('not an image') }]),
      400,
      'BAD_REQUEST',
      'Could not decode image; did you upload an image file?',
    );
    // An SVG is not decoded, whatever its name says.
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [
        {
          filename: 'vector.png',
          content: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>'),
        },
      ]),
      400,
      'BAD_REQUEST',
      'Could not decode image; did you upload an image file?',
    );
    // 20,000 x 20,000 pixels declared: refused from the header, nothing decoded.
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [
        { filename: 'bomb.png', content: await pngDeclaring(20_000, 20_000) },
      ]),
      400,
      'BAD_REQUEST',
      'Image size exceeds limit.',
    );
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [
        { filename: 'big.png', content: Buffer.concat([png, Buffer.alloc(5 * 1024 * 1024)]) },
      ]),
      400,
      'BAD_REQUEST',
      'Uploaded file is larger than the allowed limit of 5 MiB',
    );
    const after = await stack.db.userProfile.findUniqueOrThrow({ where: { id: bob.id } });
    expect(after).toMatchObject({ avatar_version: before.avatar_version, avatar_key: before.avatar_key });
  });

  test('/avatar/{user}: the medium generated avatar, an unknown user, an unknown email, credentials', async () => {
    const carol = await stack.createUser({ fullName: 'Carol' });
    const medium = await avatarRedirect(`/avatar/${carol.id}/medium?foo=bar`);
    expect(medium.status).toBe(302);
    expect(medium.headers.get('location')).toMatch(/[?&]s=500&version=1&foo=bar$/);
    for (const unknownId of ['99999999', '99999999999999999999']) {
      expect((await avatarRedirect(`/avatar/${unknownId}`)).headers.get('location')).toBe(
        '/static/images/unknown-user-avatar.png',
      );
    }
    const unknown = await avatarRedirect('/avatar/nobody@example.com');
    expect(unknown.status).toBe(302);
    expect(unknown.headers.get('location')).toMatch(/version=1$/);
    expect((await avatarRedirect(`/avatar/${carol.id}`, {})).status).toBe(401);
    // Zulip's legacy api_key query parameter authenticates, and is not passed on.
    const byKey = await avatarRedirect(`/avatar/${carol.id}?api_key=${carol.apiKey}`, {});
    expect(byKey.status).toBe(302);
    expect(byKey.headers.get('location')).not.toMatch(/api_key/);
  });
});

test('with avatar changes disabled, only administrators change their avatar', async () => {
  const png = await image(40, 40).png().toBuffer();
  expect((await owner.client.patch('/api/v1/realm', { avatar_changes_disabled: true })).status).toBe(200);
  try {
    expectError(
      await post(bob, '/api/v1/users/me/avatar', [{ filename: 'a.png', content: png }]),
      400,
      'BAD_REQUEST',
      'Avatar changes are disabled in this organization.',
    );
    expectError(
      await bob.client.delete('/api/v1/users/me/avatar'),
      400,
      'BAD_REQUEST',
      'Avatar changes are disabled in this organization.',
    );
    expect((await post(owner, '/api/v1/users/me/avatar', [{ filename: 'a.png', content: png }])).status).toBe(200);
  } finally {
    await owner.client.patch('/api/v1/realm', { avatar_changes_disabled: false });
  }
});

describe("the organisation's icon and logos", () => {
  test('the icon: administrators only, 100 px, announced, in register, deleted', async () => {
    const png = await image(400, 300, '#22aa22').png().toBuffer();
    expectError(
      await post(alice, '/api/v1/realm/icon', [{ filename: 'i.png', content: png, contentType: 'image/png' }]),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
    expectError(await alice.client.delete('/api/v1/realm/icon'), 400, 'UNAUTHORIZED_PRINCIPAL');
    expectError(await post(owner, '/api/v1/realm/icon', []), 400, 'BAD_REQUEST', 'You must upload exactly one icon.');
    expectError(
      await post(owner, '/api/v1/realm/icon', [{ filename: 'i.txt', content: png, contentType: 'text/plain' }]),
      400,
      'BAD_REQUEST',
      'Invalid image format',
    );

    let response!: Awaited<ReturnType<typeof post>>;
    const captured = await captureEvents(stack, async () => {
      response = await post(owner, '/api/v1/realm/icon', [
        { filename: 'i.png', content: png, contentType: 'image/png' },
      ]);
    });
    expect(response.status).toBe(200);
    const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
    const iconUrl = `/user_avatars/${realm.id}/realm/icon.png?version=${realm.icon_version}`;
    expect(response.body.icon_url).toBe(iconUrl);
    const [event] = ofType(captured, 'realm', 'update_dict');
    expect(event.event).toEqual({
      type: 'realm',
      op: 'update_dict',
      property: 'icon',
      data: { icon_source: 'U', icon_url: iconUrl },
    });
    expect([...event.recipientIds].sort((a, b) => a - b)).toEqual(await activeUserIds());
    expect(await decodedSize((await served(iconUrl)).bytes)).toEqual({
      format: 'png',
      width: 100,
      height: 100,
      pages: 1,
    });
    const state = await alice.client.post('/api/v1/register', { fetch_event_types: ['realm'] });
    expect(state.body).toMatchObject({ realm_icon_url: iconUrl, realm_icon_source: 'U' });

    const deleted = await owner.client.delete('/api/v1/realm/icon');
    expect(deleted.status).toBe(200);
    expect(deleted.body.icon_url).not.toMatch(/^\/user_avatars\//);
    const after = await alice.client.post('/api/v1/register', { fetch_event_types: ['realm'] });
    expect(after.body).toMatchObject({ realm_icon_url: deleted.body.icon_url, realm_icon_source: 'G' });
  });

  test('the logos, day and night: shrunk to fit 800 x 100 px, announced, in register, deleted', async () => {
    const wide = await image(1000, 50, '#aa2222').png().toBuffer();
    expectError(
      await post(alice, '/api/v1/realm/logo', [{ filename: 'l.png', content: wide }], { night: 'false' }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectError(
      await post(owner, '/api/v1/realm/logo', [{ filename: 'l.png', content: wide, contentType: 'image/png' }]),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'night' argument",
    );

    let day!: Awaited<ReturnType<typeof post>>;
    const captured = await captureEvents(stack, async () => {
      day = await post(owner, '/api/v1/realm/logo', [{ filename: 'l.png', content: wide, contentType: 'image/png' }], {
        night: 'false',
      });
    });
    expect(day.status).toBe(200);
    let realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
    const logoUrl = `/user_avatars/${realm.id}/realm/logo.png?version=${realm.logo_version}`;
    const [event] = ofType(captured, 'realm', 'update_dict');
    expect(event.event).toEqual({
      type: 'realm',
      op: 'update_dict',
      property: 'logo',
      data: { logo_url: logoUrl, logo_source: 'U' },
    });
    expect(await decodedSize((await served(logoUrl)).bytes)).toEqual({
      format: 'png',
      width: 800,
      height: 40,
      pages: 1,
    });

    // A small image is not enlarged.
    const night = await post(
      owner,
      '/api/v1/realm/logo',
      [{ filename: 'n.jpg', content: await image(30, 20).jpeg().toBuffer(), contentType: 'image/jpeg' }],
      { night: 'true' },
    );
    expect(night.status).toBe(200);
    realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
    const nightUrl = `/user_avatars/${realm.id}/realm/night_logo.png?version=${realm.night_logo_version}`;
    expect(await decodedSize((await served(nightUrl)).bytes)).toEqual({
      format: 'png',
      width: 30,
      height: 20,
      pages: 1,
    });
    const state = await bob.client.post('/api/v1/register', { fetch_event_types: ['realm'] });
    expect(state.body).toMatchObject({
      realm_logo_url: logoUrl,
      realm_logo_source: 'U',
      realm_night_logo_url: nightUrl,
      realm_night_logo_source: 'U',
    });

    expectError(
      await post(owner, '/api/v1/realm/logo', [{ filename: 'bomb.png', content: await pngDeclaring(20_000, 20_000) }], {
        night: 'false',
      }),
      400,
      'BAD_REQUEST',
      'Image size exceeds limit.',
    );
    const removed = await captureEvents(stack, async () => {
      expect((await owner.client.delete('/api/v1/realm/logo', { night: true })).status).toBe(200);
    });
    expect(ofType(removed, 'realm', 'update_dict')[0].event).toEqual({
      type: 'realm',
      op: 'update_dict',
      property: 'night_logo',
      data: { night_logo_url: '/static/images/logo/zulip-org-logo.svg?version=0', night_logo_source: 'D' },
    });
    const after = await bob.client.post('/api/v1/register', { fetch_event_types: ['realm'] });
    expect(after.body).toMatchObject({ realm_logo_source: 'U', realm_night_logo_source: 'D' });
  });
});

test("a client's event queue gets the events as Zulip's schema has them (GET /events is validated)", async () => {
  const queue = await registerEventQueue(bob.client, { event_types: JSON.stringify(['realm', 'realm_user']) });
  const png = await image(64, 64).png().toBuffer();
  expect((await post(alice, '/api/v1/users/me/avatar', [{ filename: 'a.png', content: png }])).status).toBe(200);
  expect((await post(owner, '/api/v1/realm/icon', [{ filename: 'i.png', content: png }])).status).toBe(200);
  const logo = await post(owner, '/api/v1/realm/logo', [{ filename: 'l.png', content: png }], { night: 'true' });
  expect(logo.status).toBe(200);
  const events = await queue.next(3);
  expect(
    events.map((event) => [event.type, event.op, event.property ?? Object.keys(event.person ?? {}).sort()]),
  ).toEqual([
    ['realm_user', 'update', ['avatar_source', 'avatar_url', 'avatar_url_medium', 'avatar_version', 'user_id']],
    ['realm', 'update_dict', 'icon'],
    ['realm', 'update_dict', 'night_logo'],
  ]);
  await queue.delete();
});

test('on an S3-compatible store: written by the users service, served by the uploads service', async () => {
  const s3 = await startS3TestServer();
  const s3Stack = await startStack({ services: ['uploads'], env: s3.env });
  try {
    const carol = await s3Stack.createUser({ fullName: 'Carol' });
    const uploaded = await carol.client.post(
      '/api/v1/users/me/avatar',
      {},
      multipart([{ filename: 'c.jpg', content: await image(300, 300, '#123456').jpeg().toBuffer() }]),
    );
    expect(uploaded.status).toBe(200);
    const fetchFrom = (url: string) => fetch(`${s3Stack.gatewayUrl}${url}`, { headers: { host: s3Stack.realm.host } });
    const small = await fetchFrom(uploaded.body.avatar_url);
    expect(small.status).toBe(200);
    expect(await decodedSize(Buffer.from(await small.arrayBuffer()))).toEqual({
      format: 'png',
      width: 100,
      height: 100,
      pages: 1,
    });
    expect((await carol.client.delete('/api/v1/users/me/avatar')).status).toBe(200);
    expect((await fetchFrom(uploaded.body.avatar_url)).status).toBe(404);
  } finally {
    await s3Stack.close();
    await s3.close();
  }
});
