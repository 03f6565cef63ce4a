// GET /user_uploads/...: who may open an upload, and how it is served.
import { Role } from '@teamchat/domain';
import { type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';
import { signInternalToken } from '@teamchat/core';
import { temporaryFileUrl, uploadOfTemporaryToken } from '../src/lib/temporary-urls';
import {
  linkFromMessage,
  multipartBody,
  sha256,
  startUploadsStack,
  STORE_KINDS,
  uploadLikePythonZulipApi,
  type UploadsStack,
} from './helpers';

async function upload(user: TestUser, name: string, content: Buffer | string, contentType?: string) {
  const { body, contentType: header } = multipartBody([{ field: name, filename: name, content, contentType }]);
  const response = await user.client.post('/api/v1/user_uploads', {}, { body, headers: { 'content-type': header } });
  expect(response.status).toBe(200);
  const row = await user.client.get('/api/v1/attachments');
  const attachment = row.body.attachments.find(
    (a: { path_id: string }) => `/user_uploads/${a.path_id}` === response.body.url,
  );
  return { url: response.body.url as string, id: attachment.id as number };
}

describe('who may open an upload', () => {
  let uploads: UploadsStack;
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;

  beforeAll(async () => {
    uploads = await startUploadsStack('local');
    owner = await uploads.stack.createUser({ fullName: 'Owner' });
    member = await uploads.stack.createUser({ fullName: 'Member' });
    guest = await uploads.stack.createUser({ fullName: 'Guest', role: Role.GUEST });
  });
  afterAll(async () => {
    await uploads.close();
  });

  function expectDenied(response: { status: number; raw: Buffer; body: unknown }, secret: string) {
    expectError(response as never, 403, 'BAD_REQUEST', 'You are not authorized to view this file.');
    expect(response.raw.toString()).not.toContain(secret);
  }

  test('only the uploader, until a message shares it', async () => {
    const { url } = await upload(owner, 'secret.txt', 'top secret');
    const own = await owner.client.get(url, {}, { validate: false });
    expect(own.status).toBe(200);
    expect(own.raw.toString()).toBe('top secret');
    expectDenied(await member.client.get(url, {}, { validate: false }), 'top secret');
    expectDenied(await guest.client.get(url, {}, { validate: false }), 'top secret');
    expectError(await uploads.stack.anonymous().get(url, {}, { validate: false }), 401, 'UNAUTHORIZED');
  });

  test('a direct message shares it with its recipients only', async () => {
    const third = await uploads.stack.createUser({ fullName: 'Third' });
    const { url, id } = await upload(owner, 'dm.txt', 'for member');
    await linkFromMessage(uploads.stack, { senderId: owner.id, attachmentIds: [id], recipients: [member.id] });
    const opened = await member.client.get(url, {}, { validate: false });
    expect(opened.status).toBe(200);
    expect(opened.raw.toString()).toBe('for member');
    expectDenied(await third.client.get(url, {}, { validate: false }), 'for member');
  });

  test('a public channel shares it with every member who can read the channel, not with guests outside it', async () => {
    const stream = await uploads.stack.createStream({ name: 'general files', subscribers: [owner.id] });
    const { url, id } = await upload(owner, 'public.txt', 'for everyone');
    await linkFromMessage(uploads.stack, { senderId: owner.id, attachmentIds: [id], streamId: stream.id });
    const late = await uploads.stack.createUser({ fullName: 'Joined later' });
    expect((await late.client.get(url, {}, { validate: false })).status).toBe(200);
    expect((await member.client.get(url, {}, { validate: false })).status).toBe(200);
    expectDenied(await guest.client.get(url, {}, { validate: false }), 'for everyone');
    await uploads.stack.subscribe(stream.id, [guest.id]);
    expect((await guest.client.get(url, {}, { validate: false })).status).toBe(200);
  });

  test('a private channel with protected history: only those who received the message', async () => {
    const stream = await uploads.stack.createStream({
      name: 'protected',
      inviteOnly: true,
      historyPublicToSubscribers: false,
      subscribers: [owner.id, member.id],
    });
    const { url, id } = await upload(owner, 'protected.txt', 'received only');
    await linkFromMessage(uploads.stack, {
      senderId: owner.id,
      attachmentIds: [id],
      streamId: stream.id,
      recipients: [member.id],
    });
    expect((await member.client.get(url, {}, { validate: false })).status).toBe(200);
    const newcomer = await uploads.stack.createUser({ fullName: 'Newcomer' });
    await uploads.stack.subscribe(stream.id, [newcomer.id]);
    expectDenied(await newcomer.client.get(url, {}, { validate: false }), 'received only');
  });

  test('a private channel with shared history: its subscribers, not other members', async () => {
    const stream = await uploads.stack.createStream({
      name: 'shared',
      inviteOnly: true,
      historyPublicToSubscribers: true,
      subscribers: [owner.id],
    });
    const { url, id } = await upload(owner, 'shared.txt', 'subscribers');
    await linkFromMessage(uploads.stack, { senderId: owner.id, attachmentIds: [id], streamId: stream.id });
    expectDenied(await member.client.get(url, {}, { validate: false }), 'subscribers');
    await uploads.stack.subscribe(stream.id, [member.id]);
    expect((await member.client.get(url, {}, { validate: false })).status).toBe(200);
  });

  test("Zulip's legacy api_key query parameter opens files too", async () => {
    const { url } = await upload(owner, 'key.txt', 'by key');
    const viaKey = await uploads.stack.anonymous().get(url, { api_key: owner.apiKey }, { validate: false });
    expect(viaKey.status).toBe(200);
    expect(viaKey.raw.toString()).toBe('by key');
    expectDenied(await uploads.stack.anonymous().get(url, { api_key: member.apiKey }, { validate: false }), 'by key');
  });

  test('a temporary URL (Zulip get-file-temporary-url): the file for anyone, for a minute', async () => {
    const { url } = await upload(owner, 'report.pdf', 'pdf bytes');
    const api = `/api/v1${url}`;
    const answer = await owner.client.get(api);
    expect(answer.status).toBe(200);
    const temporary = answer.body.url as string;
    expect(temporary).toMatch(/^\/user_uploads\/temporary\/[\w.-]+\/report\.pdf$/);
    const opened = await uploads.stack.anonymous().get(temporary, {}, { validate: false });
    expect(opened.status).toBe(200);
    expect(opened.raw.toString()).toBe('pdf bytes');
    expect(opened.headers['content-type']).toBe('application/pdf');

    // Only for those who may open the file; the same errors as the file itself.
    expectDenied(await member.client.get(api), 'pdf bytes');
    expectError(
      await owner.client.get('/api/v1/user_uploads/1/ab/missing.txt'),
      404,
      'BAD_REQUEST',
      'This file does not exist or has been deleted.',
    );
    expectError(await uploads.stack.anonymous().get(api), 401, 'UNAUTHORIZED');

    // A token is for one file, unaltered, and for a minute.
    const [, token] = temporary.match(/^\/user_uploads\/temporary\/([^/]+)\//)!;
    const other = await upload(owner, 'other.txt', 'other bytes');
    const invalid = (path: string) => uploads.stack.anonymous().get(path, {}, { validate: false });
    expectError(await invalid(`/user_uploads/temporary/${token}/other.txt`), 400, 'BAD_REQUEST', 'Invalid filename');
    expectError(
      await invalid(`/user_uploads/temporary/${token.slice(0, -2)}xx/report.pdf`),
      400,
      'BAD_REQUEST',
      'Invalid filename',
    );
    const pathId = url.slice('/user_uploads/'.length);
    expect(uploadOfTemporaryToken(uploads.stack.deps.env.INTERNAL_JWT_SECRET, token)).toEqual({
      pathId,
      realmId: owner.realm.id,
    });
    expect(
      uploadOfTemporaryToken(uploads.stack.deps.env.INTERNAL_JWT_SECRET, token, Math.floor(Date.now() / 1000) + 61),
    ).toBeNull();
    expect(uploadOfTemporaryToken('another secret', token)).toBeNull();
    // Internal tokens are not temporary-URL tokens (another key and audience).
    const internal = signInternalToken(uploads.stack.deps.env.INTERNAL_JWT_SECRET, {
      user: null,
      realmId: owner.realm.id,
      method: 'GET',
      path: other.url,
    });
    expectError(await invalid(`/user_uploads/temporary/${internal}/other.txt`), 400, 'BAD_REQUEST', 'Invalid filename');
    expect(temporaryFileUrl('s', 1, '1/ab/a file.txt')).toMatch(/\/a%20file\.txt$/);
  });

  test('unknown paths and other realms: not found', async () => {
    const { url } = await upload(owner, 'mine.txt', 'realm one');
    const missing = url.replace(/\/[^/]+$/, '/other.txt');
    expectError(
      await owner.client.get(missing, {}, { validate: false }),
      404,
      'BAD_REQUEST',
      'This file does not exist or has been deleted.',
    );
    expectError(
      await owner.client.get('/user_uploads/not-a-realm/x/y.txt', {}, { validate: false }),
      404,
      'BAD_REQUEST',
    );
    const otherRealm = await uploads.stack.createRealm('other', 'other.test');
    const stranger = await uploads.stack.createUser({ realm: otherRealm });
    const fromThere = await stranger.client.get(url, {}, { validate: false });
    expectError(fromThere, 404, 'BAD_REQUEST', 'This file does not exist or has been deleted.');
    expect(fromThere.raw.toString()).not.toContain('realm one');
  });
});

describe.each(STORE_KINDS)('how an upload is served (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind);
    owner = await uploads.stack.createUser();
  });
  afterAll(async () => {
    await uploads.close();
  });

  test('images inline, other types as downloads, /user_uploads/download/ always as a download', async () => {
    const png = await upload(owner, 'pixel.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a]), 'image/png');
    const image = await owner.client.get(png.url, {}, { validate: false });
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.headers['content-disposition']).toBe('inline; filename="pixel.png"');
    expect(image.headers['cache-control']).toBe('private, immutable');
    expect(image.headers['x-content-type-options']).toBe('nosniff');

    const html = await upload(owner, 'page.html', '<script>alert(1)</script>', 'text/html');
    const page = await owner.client.get(html.url, {}, { validate: false });
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-disposition']).toBe('attachment; filename="page.html"');

    const download = await owner.client.get(
      png.url.replace('/user_uploads/', '/user_uploads/download/'),
      {},
      { validate: false },
    );
    expect(download.status).toBe(200);
    expect(download.headers['content-disposition']).toBe('attachment; filename="pixel.png"');
    expect(download.raw).toEqual(image.raw);
  });

  test('non-ASCII names use filename*', async () => {
    const { url } = await upload(owner, 'résumé final.pdf', '%PDF-1.4', 'application/pdf');
    const served = await owner.client.get(url, {}, { validate: false });
    expect(served.headers['content-disposition']).toBe("inline; filename*=utf-8''r%C3%A9sum%C3%A9%20final.pdf");
  });

  test('byte ranges', async () => {
    const data = Buffer.from('0123456789abcdefghij');
    const { url } = await upload(owner, 'digits.txt', data);
    const whole = await owner.client.get(url, {}, { validate: false });
    expect(whole.headers['accept-ranges']).toBe('bytes');
    expect(whole.headers['content-length']).toBe('20');

    const middle = await owner.client.get(url, {}, { validate: false, headers: { range: 'bytes=5-9' } });
    expect(middle.status).toBe(206);
    expect(middle.headers['content-range']).toBe('bytes 5-9/20');
    expect(middle.headers['content-length']).toBe('5');
    expect(middle.raw.toString()).toBe('56789');

    const tail = await owner.client.get(url, {}, { validate: false, headers: { range: 'bytes=-3' } });
    expect(tail.status).toBe(206);
    expect(tail.raw.toString()).toBe('hij');

    const from = await owner.client.get(url, {}, { validate: false, headers: { range: 'bytes=15-' } });
    expect(from.raw.toString()).toBe('fghij');

    const beyond = await owner.client.get(url, {}, { validate: false, headers: { range: 'bytes=50-60' } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers['content-range']).toBe('bytes */20');
    expect(beyond.raw.length).toBe(0);

    const malformed = await owner.client.get(url, {}, { validate: false, headers: { range: 'lines=1-2' } });
    expect(malformed.status).toBe(200);
    expect(malformed.raw).toEqual(data);
  });

  test('HEAD answers the headers without the bytes', async () => {
    const { url } = await upload(owner, 'head.txt', 'twelve bytes');
    const head = await owner.client.request('HEAD', url, {}, { validate: false, encoding: 'query' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('12');
    expect(head.raw.length).toBe(0);
  });

  test('empty files', async () => {
    const { url } = await upload(owner, 'empty.txt', '');
    const served = await owner.client.get(url, {}, { validate: false, headers: { range: 'bytes=0-' } });
    expect(served.status).toBe(200);
    expect(served.headers['content-length']).toBe('0');
  });

  test('a large file comes back byte for byte', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024 + 5);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff;
    const response = await uploadLikePythonZulipApi(owner, '/data/blob.bin', data);
    const served = await owner.client.get(response.body.url, {}, { validate: false });
    expect(served.headers['content-type']).toBe('application/octet-stream');
    expect(sha256(served.raw)).toBe(sha256(data));
    const range = await owner.client.get(
      response.body.url,
      {},
      { validate: false, headers: { range: 'bytes=1048576-2097151' } },
    );
    expect(range.status).toBe(206);
    expect(sha256(range.raw)).toBe(sha256(data.subarray(1048576, 2097152)));
  });
});
