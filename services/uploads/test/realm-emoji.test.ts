// Custom emoji through the gateway: POST/DELETE /realm/emoji/{name} with Zulip's checks and
// errors, the image in the uploads storage and served at /user_avatars/..., GET /realm/emoji,
// register's realm_emoji, realm_emoji events, reactions and Markdown with a custom emoji.
import { Role } from '@teamchat/domain';
import type { TestUser } from '@teamchat/stack';
import sharp from 'sharp';
import { captureEvents, expectError, GIF_BOMB, ofType, ONE_PIXEL_PNG, pngDeclaring } from '@teamchat/testing';
import { multipartBody, startUploadsStack, type FilePart, type UploadsStack } from './helpers';

/** A 30 x 10 GIF of two frames, red then blue. */
async function animatedGif(): Promise<Buffer> {
  const frame = (background: string) =>
    sharp({ create: { width: 30, height: 10, channels: 3, background } })
      .png()
      .toBuffer();
  return sharp([await frame('#f00'), await frame('#00f')], { join: { animated: true } })
    .gif()
    .toBuffer();
}

let uploads: UploadsStack;
let admin: TestUser;
let alice: TestUser;
let bob: TestUser;
let guest: TestUser;

beforeAll(async () => {
  uploads = await startUploadsStack('local', {
    services: ['messages', 'events'],
    env: { UPLOADS_MAX_EMOJI_FILE_SIZE_MIB: '1' },
  });
  admin = await uploads.stack.createUser({ fullName: 'Admin', role: Role.ADMINISTRATOR });
  alice = await uploads.stack.createUser({ fullName: 'Alice' });
  bob = await uploads.stack.createUser({ fullName: 'Bob' });
  guest = await uploads.stack.createUser({ fullName: 'Guest', role: Role.GUEST });
});
afterAll(() => uploads.close());

function addEmoji(user: TestUser, name: string, parts: Partial<FilePart>[] = [{}]) {
  const { body, contentType } = multipartBody(
    parts.map((part, i) => ({
      field: `f${i + 1}`,
      filename: 'img.png',
      content: ONE_PIXEL_PNG,
      contentType: 'image/png',
      ...part,
    })),
  );
  return user.client.post(`/api/v1/realm/emoji/${name}`, {}, { body, headers: { 'content-type': contentType } });
}

const listEmoji = async (user: TestUser) => (await user.client.get('/api/v1/realm/emoji')).body.emoji;
const rowNamed = (name: string) =>
  uploads.stack.db.realmEmoji.findFirstOrThrow({ where: { name, deactivated: false }, orderBy: { id: 'desc' } });

describe('adding', () => {
  test('stores the image, lists it, announces the whole dict to the realm and serves the image', async () => {
    let response!: Awaited<ReturnType<typeof addEmoji>>;
    const captured = await captureEvents(uploads.stack, async () => {
      response = await addEmoji(alice, 'my%20party');
    });
    expect(response.body).toEqual({ result: 'success', msg: '' });
    const row = await rowNamed('my_party');
    expect(row).toMatchObject({ author_id: alice.id, is_animated: false, still_file_name: null });
    expect(row.file_name).toMatch(/^[0-9a-f]{8}\.png$/);
    const realmId = uploads.stack.realm.id;
    const dict = {
      id: String(row.id),
      name: 'my_party',
      source_url: `/user_avatars/${realmId}/emoji/images/${row.file_name}`,
      still_url: null,
      deactivated: false,
      author_id: alice.id,
    };
    expect(await listEmoji(guest)).toEqual({ [row.id]: dict });

    const [event] = ofType(captured, 'realm_emoji', 'update');
    expect(event.event).toEqual({ type: 'realm_emoji', op: 'update', realm_emoji: { [row.id]: dict } });
    const active = await uploads.stack.db.userProfile.findMany({ where: { realm_id: realmId, is_active: true } });
    expect(event.recipientIds.sort((a, b) => a - b)).toEqual(active.map((user) => user.id).sort((a, b) => a - b));

    const state = await bob.client.post('/api/v1/register', { fetch_event_types: ['realm_emoji'] });
    expect(state.body.realm_emoji).toEqual({ [row.id]: dict });

    // No credentials needed, as Zulip's /user_avatars/.
    const served = await fetch(`${uploads.stack.gatewayUrl}${dict.source_url}`, {
      headers: { host: uploads.stack.realm.host },
    });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    // Zulip's resize_emoji: a 64 px square in the uploaded format; the upload kept as .original.
    const image = await sharp(Buffer.from(await served.arrayBuffer())).metadata();
    expect([image.format, image.width, image.height]).toEqual(['png', 64, 64]);
    const original = await uploads.storage.get(`user_avatars/${realmId}/emoji/images/${row.file_name}.original`);
    expect(original && Buffer.concat(await original.toArray())).toEqual(ONE_PIXEL_PNG);
    const missing = await fetch(`${uploads.stack.gatewayUrl}/user_avatars/${realmId}/emoji/images/nothing.png`, {
      headers: { host: uploads.stack.realm.host },
    });
    expect(missing.status).toBe(404);
  });

  test('an animated GIF keeps its frames at 64 px, and a still first frame as PNG, served at still_url', async () => {
    const added = await addEmoji(admin, 'dancing', [
      { filename: 'd.gif', content: await animatedGif(), contentType: 'image/gif' },
    ]);
    expect(added.body).toEqual({ result: 'success', msg: '' });
    const row = await rowNamed('dancing');
    expect(row.is_animated).toBe(true);
    const info = (await listEmoji(admin))[row.id];
    expect(info.source_url).toMatch(/\.gif$/);
    expect(info.still_url).toBe(`/user_avatars/${uploads.stack.realm.id}/emoji/images/still/${row.still_file_name}`);
    const still = await fetch(`${uploads.stack.gatewayUrl}${info.still_url}`, {
      headers: { host: uploads.stack.realm.host },
    });
    expect(still.headers.get('content-type')).toBe('image/png');
    const stillImage = await sharp(Buffer.from(await still.arrayBuffer())).metadata();
    expect([stillImage.format, stillImage.width, stillImage.height, stillImage.pages ?? 1]).toEqual(['png', 64, 64, 1]);
    const animated = await sharp(
      Buffer.from(
        await (
          await fetch(`${uploads.stack.gatewayUrl}${info.source_url}`, {
            headers: { host: uploads.stack.realm.host },
          })
        ).arrayBuffer(),
      ),
    ).metadata();
    expect([animated.format, animated.width, animated.height, animated.pages]).toEqual(['gif', 64, 64, 2]);
  });

  // Refused from the header before any pixel is decoded (packages/images); how fast is a measure,
  // not an assertion: a loaded machine must not fail it.
  test('image bombs are refused from their header, and nothing is stored', async () => {
    const bombs = [
      { filename: 'bomb.png', content: pngDeclaring(20_000, 20_000), contentType: 'image/png' },
      { filename: 'bomb.gif', content: GIF_BOMB, contentType: 'image/gif' },
    ];
    for (const [i, part] of bombs.entries()) {
      expectError(await addEmoji(alice, `bomb_${i}`, [part]), 400, 'BAD_REQUEST', 'Image size exceeds limit.');
    }
    expect(await uploads.stack.db.realmEmoji.count({ where: { name: { startsWith: 'bomb_' } } })).toBe(0);
  });

  test("Zulip's name checks, in its order", async () => {
    const cases: [string, string][] = [
      [
        'my_em*oji',
        'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
      ],
      [
        'my/emoji/with/slash',
        'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
      ],
      ['my_EMoji', 'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.'],
      ['my_emoji_', 'Emoji names must end with either a letter or digit.'],
      ['%20', 'Emoji name is missing'],
      ['my_party', 'A custom emoji with this name already exists.'],
    ];
    for (const [name, msg] of cases) expectError(await addEmoji(alice, name), 400, 'BAD_REQUEST', msg);
  });

  test('files: exactly one, within the size limit, in an accepted image format', async () => {
    expectError(await addEmoji(alice, 'two', [{}, {}]), 400, 'BAD_REQUEST', 'You must upload exactly one file.');
    expectError(await addEmoji(alice, 'none', []), 400, 'BAD_REQUEST', 'You must upload exactly one file.');
    const big = Buffer.concat([ONE_PIXEL_PNG, Buffer.alloc(1024 * 1024)]);
    expectError(
      // Not 'big': that is one of Zulip's own emoji names.
      await addEmoji(alice, 'oversized', [{ content: big }]),
      400,
      'BAD_REQUEST',
      'Uploaded file is larger than the allowed limit of 1 MiB',
    );
    expectError(
      await addEmoji(alice, 'tiff', [{ filename: 'x.tif', content: Buffer.from('II*\0'), contentType: 'image/tiff' }]),
      400,
      'BAD_REQUEST',
      'Invalid image format',
    );
    expectError(
      await addEmoji(alice, 'fake', [{ content: Buffer.from('not an image') }]),
      400,
      'BAD_REQUEST',
      'Could not decode image; did you upload an image file?',
    );
    // No Content-Type (python-zulip-api): the bytes decide.
    expect((await addEmoji(alice, 'untyped', [{ contentType: undefined }])).status).toBe(200);
    expect(
      await uploads.stack.db.realmEmoji.count({
        where: { name: { in: ['two', 'none', 'oversized', 'tiff', 'fake'] } },
      }),
    ).toBe(0);
  });

  test('permissions: guests, can_add_custom_emoji_group, built-in names for administrators only', async () => {
    expectError(await addEmoji(guest, 'guesty'), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    expectError(await addEmoji(alice, 'smile'), 400, 'BAD_REQUEST', 'Only administrators can override default emoji.');
    expect((await addEmoji(admin, 'smile')).status).toBe(200);
    await uploads.stack.setRealmGroupSetting('can_add_custom_emoji_group', 'role:administrators');
    try {
      expectError(await addEmoji(bob, 'bobs'), 400, 'BAD_REQUEST', 'Insufficient permission');
      expect((await addEmoji(admin, 'admins')).status).toBe(200);
    } finally {
      await uploads.stack.setRealmGroupSetting('can_add_custom_emoji_group', 'role:members');
    }
  });
});

describe('deactivating', () => {
  test('its author or an administrator; others are refused; unknown names are a 404', async () => {
    expect((await addEmoji(bob, 'bob_one')).status).toBe(200);
    expect((await addEmoji(bob, 'bob_two')).status).toBe(200);
    expectError(
      await alice.client.delete('/api/v1/realm/emoji/bob_one'),
      400,
      'BAD_REQUEST',
      'Must be an organization administrator or emoji author',
    );
    const one = await rowNamed('bob_one');
    const captured = await captureEvents(uploads.stack, async () => {
      expect((await bob.client.delete('/api/v1/realm/emoji/bob_one')).body).toEqual({ result: 'success', msg: '' });
    });
    const [event] = ofType(captured, 'realm_emoji', 'update');
    expect((event.event.realm_emoji as Record<string, { deactivated: boolean }>)[one.id].deactivated).toBe(true);
    expect((await listEmoji(alice))[one.id].deactivated).toBe(true);
    expect((await admin.client.delete('/api/v1/realm/emoji/bob_two')).status).toBe(200);
    expectError(
      await admin.client.delete('/api/v1/realm/emoji/bob_one'),
      404,
      'BAD_REQUEST',
      "Emoji 'bob_one' does not exist",
    );
    // The name is free again.
    expect((await addEmoji(bob, 'bob_one')).status).toBe(200);
    expect((await rowNamed('bob_one')).id).not.toBe(one.id);
  });
});

describe('in messages', () => {
  test('reactions accept an active custom emoji by name or by id, and refuse others', async () => {
    expect((await addEmoji(alice, 'react_me')).status).toBe(200);
    const emoji = await rowNamed('react_me');
    const sent = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content: 'hi',
    });
    const id = sent.body.id as number;
    const captured = await captureEvents(uploads.stack, async () => {
      expect((await bob.client.post(`/api/v1/messages/${id}/reactions`, { emoji_name: 'react_me' })).status).toBe(200);
    });
    expect(ofType(captured, 'reaction')[0].event).toMatchObject({
      emoji_name: 'react_me',
      emoji_code: String(emoji.id),
      reaction_type: 'realm_emoji',
    });
    const params = { emoji_name: 'react_me', emoji_code: String(emoji.id), reaction_type: 'realm_emoji' };
    expect((await alice.client.post(`/api/v1/messages/${id}/reactions`, params)).status).toBe(200);
    expectError(
      await alice.client.post(`/api/v1/messages/${id}/reactions`, params),
      400,
      'REACTION_ALREADY_EXISTS',
      'Reaction already exists.',
    );
    const other = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content: 'again',
    });
    expectError(
      await bob.client.post(`/api/v1/messages/${other.body.id}/reactions`, { ...params, emoji_name: 'wrong' }),
      400,
      'BAD_REQUEST',
      'Invalid custom emoji name.',
    );
    expectError(
      await bob.client.post(`/api/v1/messages/${other.body.id}/reactions`, { ...params, emoji_code: '999999' }),
      400,
      'BAD_REQUEST',
      'Invalid custom emoji.',
    );
    expect((await alice.client.delete('/api/v1/realm/emoji/react_me')).status).toBe(200);
    expectError(
      await bob.client.post(`/api/v1/messages/${other.body.id}/reactions`, params),
      400,
      'BAD_REQUEST',
      'This custom emoji has been deactivated.',
    );
  });

  test("Markdown renders :name: of an active custom emoji as Zulip's image", async () => {
    expect((await addEmoji(alice, 'green_tick')).status).toBe(200);
    const emoji = await rowNamed('green_tick');
    const rendered = await alice.client.post('/api/v1/messages/render', { content: 'done :green_tick: :not_one:' });
    expect(rendered.body.rendered).toBe(
      `<p>done <img alt=":green_tick:" class="emoji" src="/user_avatars/${uploads.stack.realm.id}/emoji/images/${emoji.file_name}" title="green tick"> :not_one:</p>`,
    );
  });
});
