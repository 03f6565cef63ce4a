// Uploads from a hostile client: declared types that smuggle another type past the inline
// list, served files without a Content-Security-Policy, and names, paths and types with NUL or
// CR/LF that answered 500 or left bytes in storage with no attachment.
import { type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';
import { uploadKeys } from '@teamchat/storage';
import * as tus from 'tus-js-client';
import { basicAuth, multipartBody, startUploadsStack, STORE_KINDS, storedFiles, type UploadsStack } from './helpers';

/** What Zulip's nginx sends with every served upload. */
const UPLOADS_CSP =
  "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self'; " +
  "object-src 'self'; plugin-types application/pdf;";

function runUpload(file: Buffer, options: tus.UploadOptions): Promise<{ url: string; filename: string }> {
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(file, {
      retryDelays: null,
      ...options,
      onSuccess: (payload) => resolve(JSON.parse(payload.lastResponse.getBody())),
      onError: reject,
    });
    upload.start();
  });
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const pathIdOf = (url: string) => url.slice('/user_uploads/'.length);

describe.each(STORE_KINDS)('upload hardening (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;
  let endpoint: string;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind);
    owner = await uploads.stack.createUser({ fullName: 'Owner' });
    endpoint = `${uploads.stack.gatewayUrl}/api/v1/tus`;
  });
  afterAll(async () => {
    await uploads.close();
  });

  const tusUpload = (data: string, metadata: Record<string, string>) =>
    runUpload(Buffer.from(data), { endpoint, headers: { Authorization: basicAuth(owner) }, metadata });

  function tusRequest(method: string, url: string, headers: Record<string, string> = {}, body?: Buffer) {
    return fetch(new URL(url, uploads.stack.gatewayUrl), {
      method,
      headers: { 'Tus-Resumable': '1.0.0', Authorization: basicAuth(owner), ...headers },
      body,
    });
  }

  const createTus = (filename: string, length: number) =>
    tusRequest('POST', '/api/v1/tus', {
      'Upload-Length': String(length),
      'Upload-Metadata': `filename ${base64(filename)}`,
    });

  const patchTus = (uploadUrl: string, data: string) =>
    tusRequest(
      'PATCH',
      uploadUrl,
      { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      Buffer.from(data),
    );

  function multipartUpload(filename: string, content: string, contentType?: string) {
    const { body, contentType: header } = multipartBody([{ field: 'file', filename, content, contentType }]);
    return owner.client.post('/api/v1/user_uploads', {}, { body, headers: { 'content-type': header } });
  }

  async function storedType(url: string): Promise<string | null> {
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathIdOf(url) } });
    return row.content_type;
  }

  /** The file as its owner's browser opens it, and as the unauthenticated temporary URL serves it. */
  async function servedBothWays(url: string) {
    const authenticated = await owner.client.get(url, {}, { validate: false });
    const temporary = (await owner.client.get(`/api/v1${url}`)).body.url as string;
    const anonymous = await uploads.stack.anonymous().get(temporary, {}, { validate: false });
    return [authenticated, anonymous];
  }

  test('a tus filetype smuggling text/html after a parameter is stored and served as a download', async () => {
    const script = '<script>alert(document.domain)</script>';
    const finished = await tusUpload(script, { filename: 'x.txt', filetype: 'text/plain;x=y,text/html' });
    expect(await storedType(finished.url)).toBe('application/octet-stream');
    for (const served of await servedBothWays(finished.url)) {
      expect(served.status).toBe(200);
      expect(served.headers['content-type']).toBe('application/octet-stream');
      expect(served.headers['content-disposition']).toBe('attachment; filename="x.txt"');
    }
  });

  test('declared types are stored as their parsed, lower-cased essence', async () => {
    const png = await tusUpload('png', { filename: 'a.png', filetype: 'Image/PNG; name="a b"' });
    expect(await storedType(png.url)).toBe('image/png');
    const plain = await tusUpload('text', { filename: 'a.bin', filetype: ' text/plain ; charset=utf-8' });
    expect(await storedType(plain.url)).toBe('text/plain');
    const invalidTypes = ['text', 'text/', '/html', 'text/html/x', 'text/plain, text/html', 'text/plain; x', 'a b/c'];
    for (const invalid of invalidTypes) {
      const finished = await tusUpload('x', { filename: 'a.txt', filetype: invalid });
      expect([invalid, await storedType(finished.url)]).toEqual([invalid, 'application/octet-stream']);
    }
    const multipart = await multipartUpload('b.png', 'png', 'IMAGE/Png; x="y"');
    expect(multipart.status).toBe(200);
    expect(await storedType(multipart.body.url)).toBe('image/png');
  });

  test('only exact types of the safe list are inline; older rows are served by their parsed type', async () => {
    const finished = await tusUpload('hello', { filename: 'legacy.txt', filetype: 'text/plain' });
    const pathId = pathIdOf(finished.url);
    const served = async (storedType: string | null) => {
      await uploads.stack.db.attachment.update({ where: { path_id: pathId }, data: { content_type: storedType } });
      const response = await owner.client.get(finished.url, {}, { validate: false });
      const disposition = response.headers['content-disposition']?.split(';')[0];
      return [response.status, response.headers['content-type'], disposition];
    };
    expect(await served('text/plain')).toEqual([200, 'text/plain', 'inline']);
    expect(await served('TEXT/plain; charset=utf-8')).toEqual([200, 'text/plain', 'inline']);
    expect(await served('text/plain;x=y,text/html')).toEqual([200, 'application/octet-stream', 'attachment']);
    expect(await served('text/html')).toEqual([200, 'text/html', 'attachment']);
    expect(await served('image/svg+xml')).toEqual([200, 'image/svg+xml', 'attachment']);
    expect(await served('text/plain\r\nX-Injected: 1')).toEqual([200, 'application/octet-stream', 'attachment']);
    expect(await served(null)).toEqual([200, 'text/plain', 'inline']);
  });

  test('served files carry a restrictive Content-Security-Policy and nosniff, also at the temporary URL', async () => {
    const finished = await tusUpload('%PDF-1.4', { filename: 'doc.pdf', filetype: 'application/pdf' });
    for (const served of await servedBothWays(finished.url)) {
      expect(served.status).toBe(200);
      expect(served.headers['content-disposition']).toBe('inline; filename="doc.pdf"');
      expect(served.headers['content-security-policy']).toBe(UPLOADS_CSP);
      expect(served.headers['x-content-type-options']).toBe('nosniff');
    }
    const downloadUrl = finished.url.replace('/user_uploads/', '/user_uploads/download/');
    const download = await owner.client.get(downloadUrl, {}, { validate: false });
    expect(download.headers['content-security-policy']).toBe(UPLOADS_CSP);
  });

  test('a tus filetype with CR/LF: the file is still served, without the injected header', async () => {
    const finished = await tusUpload('data', { filename: 'crlf.txt', filetype: 'text/plain\r\nX-Injected: 1' });
    for (const served of await servedBothWays(finished.url)) {
      expect(served.status).toBe(200);
      expect(served.raw.toString()).toBe('data');
      expect(served.headers['x-injected']).toBeUndefined();
    }
    expect(await storedType(finished.url)).toBe('application/octet-stream');
  });

  test('a NUL in a multipart filename is refused with a 400 and nothing is stored', async () => {
    const before = storedFiles(uploads);
    const attachmentsBefore = await uploads.stack.db.attachment.count();
    const nulRefused = 'Filename contains NULL (0x00) characters.';
    expectError(await multipartUpload('a%00b.txt', 'x'), 400, 'BAD_REQUEST', nulRefused);
    // RFC 5987's filename*, which the parser decodes itself.
    const boundary = 'b0undary';
    const extended = [
      `--${boundary}`,
      `Content-Disposition: form-data; name="f"; filename*=UTF-8''evil%00.txt`,
      '',
      'x',
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const headers = { 'content-type': `multipart/form-data; boundary=${boundary}` };
    const response = await owner.client.post('/api/v1/user_uploads', {}, { body: Buffer.from(extended), headers });
    expectError(response, 400, 'BAD_REQUEST', nulRefused);
    // A raw NUL in a part's header is no multipart at all.
    expectError(await multipartUpload('evil\u0000.txt', 'x'), 400, 'BAD_REQUEST', 'Malformed multipart body');
    expect(storedFiles(uploads)).toEqual(before);
    expect(await uploads.stack.db.attachment.count()).toBe(attachmentsBefore);
  });

  test('a NUL or invalid UTF-8 in a /user_uploads path is a 4xx, not a 500', async () => {
    const realmId = uploads.stack.realm.id;
    for (const prefix of ['/user_uploads/', '/user_uploads/download/', '/api/v1/user_uploads/']) {
      for (const path of [`${realmId}/abc%00/x.txt`, `${realmId}/abc/x%00.txt`]) {
        const response = await owner.client.get(`${prefix}${path}`, {}, { validate: false });
        expectError(response, 404, 'BAD_REQUEST', 'This file does not exist or has been deleted.');
      }
      const undecodable = await owner.client.get(`${prefix}${realmId}/abc/x%FF.txt`, {}, { validate: false });
      expectError(undecodable, 400, 'BAD_REQUEST', "Malformed request: Failed to decode param 'x%FF.txt'");
    }
    const temporaryUrl = '/user_uploads/temporary/a%00b/x%00.txt';
    const temporary = await uploads.stack.anonymous().get(temporaryUrl, {}, { validate: false });
    expectError(temporary, 400, 'BAD_REQUEST', 'Invalid filename');
  });

  test('a tus filename with NUL is refused at creation and nothing is stored', async () => {
    const before = storedFiles(uploads);
    const attachmentsBefore = await uploads.stack.db.attachment.count();
    const created = await createTus('a\u0000b.txt', 4);
    // The old behaviour: accepted, then the finishing PATCH failed and left the bytes.
    if (created.status === 201) await patchTus(created.headers.get('location')!, 'data');
    expect(created.status).toBe(400);
    expect(await created.json()).toEqual({ message: 'Filename contains NULL (0x00) characters.' });
    expect(storedFiles(uploads)).toEqual(before);
    expect(await uploads.stack.db.attachment.count()).toBe(attachmentsBefore);
  });

  test('names past 255 bytes (and multi-byte ones) are bounded: stored under a short path, never a 500', async () => {
    const longAscii = `${'a'.repeat(300)}.txt`;
    const longAccented = `${'é'.repeat(200)}.txt`; // 400 bytes of UTF-8
    for (const name of [longAscii, longAccented]) {
      const multipart = await multipartUpload(name, 'x');
      expect(multipart.status).toBe(200);
      const body = JSON.stringify(multipart.body);
      expect(body).not.toMatch(/ENAMETOOLONG|\/tmp\/|\/work\//);
      const { filename, url } = multipart.body as { filename: string; url: string };
      // Django's rule for an upload's name: at most 255 characters, the extension kept.
      expect(filename.length).toBeLessThanOrEqual(255);
      expect(filename.endsWith('.txt')).toBe(true);
      for (const segment of pathIdOf(url).split('/'))
        expect(Buffer.byteLength(decodeURIComponent(segment))).toBeLessThanOrEqual(128);

      const created = await createTus(name, 4);
      const createdText = await created.text();
      expect(createdText).not.toMatch(/ENAMETOOLONG|\/tmp\/|\/work\//);
      expect(created.status).toBe(201);
      const finished = await patchTus(created.headers.get('location')!, 'data');
      expect(finished.status).toBe(200);
      const tusBody = (await finished.json()) as { filename: string; url: string };
      expect(tusBody.filename.length).toBeLessThanOrEqual(255);
      expect(tusBody.filename.endsWith('.txt')).toBe(true);
      for (const segment of pathIdOf(tusBody.url).split('/'))
        expect(Buffer.byteLength(decodeURIComponent(segment))).toBeLessThanOrEqual(128);
      expect((await owner.client.get(tusBody.url, {}, { validate: false })).status).toBe(200);
    }
  });

  test('a tus upload whose finish fails leaves no bytes in storage', async () => {
    // The database refuses this one attachment row, as it would any failure while recording it.
    await uploads.stack.db.$executeRawUnsafe(
      "ALTER TABLE attachment ADD CONSTRAINT refuse_test_name CHECK (file_name <> 'refused.bin')",
    );
    try {
      const created = await createTus('refused.bin', 4);
      expect(created.status).toBe(201);
      const uploadUrl = created.headers.get('location')!;
      const pathId = Buffer.from(uploadUrl.split('/').pop()!, 'base64url').toString();
      const patched = await patchTus(uploadUrl, 'data');
      expect(patched.status).toBeGreaterThanOrEqual(500);
      expect(await uploads.stack.db.attachment.count({ where: { path_id: pathId } })).toBe(0);
      for (const key of uploadKeys(uploads.storage, pathId)) expect(await uploads.storage.head(key)).toBeNull();
      expect(storedFiles(uploads).filter((name) => name.includes(pathId.split('/')[1]))).toEqual([]);
      // tus forgot it too: the client starts over.
      expect((await tusRequest('HEAD', uploadUrl)).status).toBe(404);
    } finally {
      await uploads.stack.db.$executeRawUnsafe('ALTER TABLE attachment DROP CONSTRAINT refuse_test_name');
    }
  });
});
