// Resumable uploads at /api/v1/tus through the gateway, with tus-js-client, on local disk and S3.
import crypto from 'node:crypto';
import * as tus from 'tus-js-client';
import { uploadKeys } from '@teamchat/storage';
import type { TestUser } from '@teamchat/stack';
import { captureEvents, ofType } from '@teamchat/testing';
import { basicAuth, sha256, startUploadsStack, STORE_KINDS, storedFiles, type UploadsStack } from './helpers';

const MiB = 1024 * 1024;

interface Finished {
  uploadUrl: string;
  body: { url: string; filename: string };
}

/** Runs a tus-js-client upload to its end. */
function runUpload(file: Buffer, options: tus.UploadOptions): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(file, {
      retryDelays: null,
      ...options,
      onSuccess: (payload) => resolve({ uploadUrl: upload.url!, body: JSON.parse(payload.lastResponse.getBody()) }),
      onError: reject,
    });
    upload.start();
  });
}

/**
 * Starts an upload in chunks and stops it for good once the server has accepted at least
 * `afterBytes` (between two chunks, so it cannot finish first); resolves with its URL.
 */
function interruptedUpload(file: Buffer, options: tus.UploadOptions, afterBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let aborted = false;
    const upload = new tus.Upload(file, {
      retryDelays: null,
      chunkSize: 6 * MiB,
      ...options,
      onChunkComplete: (_chunkSize, accepted) => {
        if (aborted || accepted < afterBytes) return;
        aborted = true;
        void upload.abort().then(() => resolve(upload.url!), reject);
      },
      onSuccess: () => reject(new Error('the upload finished before it could be interrupted')),
      onError: reject,
    });
    upload.start();
  });
}

describe.each(STORE_KINDS)('tus uploads (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;
  let other: TestUser;
  let endpoint: string;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind, { env: { UPLOADS_MAX_FILE_SIZE_MIB: '32' } });
    owner = await uploads.stack.createUser({ fullName: 'Owner' });
    other = await uploads.stack.createUser({ fullName: 'Other' });
    endpoint = `${uploads.stack.gatewayUrl}/api/v1/tus`;
  });
  afterAll(async () => {
    await uploads.close();
  });

  const auth = (user: TestUser) => ({ Authorization: basicAuth(user) });

  /** A tus request by hand, for the answers tus-js-client turns into errors. */
  function tusRequest(
    user: TestUser | null,
    method: string,
    url: string,
    headers: Record<string, string> = {},
    body?: Buffer,
  ) {
    return fetch(new URL(url, uploads.stack.gatewayUrl), {
      method,
      headers: { 'Tus-Resumable': '1.0.0', ...(user ? auth(user) : {}), ...headers },
      body,
    });
  }

  test('an upload creates the attachment exactly as a multipart upload does', async () => {
    const data = Buffer.from('resumable hello');
    let finished!: Finished;
    const captured = await captureEvents(uploads.stack, async () => {
      finished = await runUpload(data, {
        endpoint,
        headers: auth(owner),
        metadata: { filename: 'notes été.txt', filetype: 'text/plain' },
      });
    });
    const { url, filename } = finished.body;
    expect(filename).toBe('notes été.txt');
    // tus path ids keep ASCII only (Zulip's strict sanitising).
    expect(url).toMatch(new RegExp(`^/user_uploads/${uploads.stack.realm.id}/[A-Za-z0-9_-]{24}/notes-t\\.txt$`));
    const pathId = url.slice('/user_uploads/'.length);
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathId } });
    expect(row).toMatchObject({
      owner_id: owner.id,
      file_name: 'notes été.txt',
      size: BigInt(data.length),
      content_type: 'text/plain',
    });
    const events = ofType(captured, 'attachment');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      event: {
        type: 'attachment',
        op: 'add',
        attachment: {
          id: row.id,
          name: 'notes été.txt',
          path_id: pathId,
          size: data.length,
          create_time: row.create_time.getTime(),
          messages: [],
        },
      },
      recipientIds: [owner.id],
    });
    const served = await owner.client.get(url, {}, { validate: false });
    expect(served.status).toBe(200);
    expect(served.raw).toEqual(data);
    expect((await owner.client.get('/api/v1/attachments')).body.attachments.map((a: { id: number }) => a.id)).toContain(
      row.id,
    );
  });

  test('an interrupted upload resumes where it stopped and arrives intact', async () => {
    const data = crypto.randomBytes(20 * MiB + 4321);
    const metadata = { filename: 'big.bin', filetype: 'application/octet-stream' };
    const uploadUrl = await interruptedUpload(data, { endpoint, headers: auth(owner), metadata }, 11 * MiB);

    // The server kept what arrived: the resumed upload starts past 0, before the end.
    const head = await tusRequest(owner, 'HEAD', uploadUrl);
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThan(data.length);
    expect(head.headers.get('upload-length')).toBe(String(data.length));
    expect(await uploads.stack.db.attachment.count({ where: { file_name: 'big.bin' } })).toBe(0);

    let resumedFrom = -1;
    const finished = await runUpload(data, {
      endpoint,
      uploadUrl,
      headers: auth(owner),
      metadata,
      onAfterResponse: (req, res) => {
        if (req.getMethod() === 'HEAD') resumedFrom = Number(res.getHeader('Upload-Offset'));
      },
    });
    expect(resumedFrom).toBe(offset);
    expect(finished.uploadUrl).toBe(uploadUrl);
    const served = await owner.client.get(finished.body.url, {}, { validate: false });
    expect(served.raw.length).toBe(data.length);
    expect(sha256(served.raw)).toBe(sha256(data));
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({
      where: { path_id: finished.body.url.slice('/user_uploads/'.length) },
    });
    expect(row.size).toBe(BigInt(data.length));
  });

  test('an upload in many small chunks', async () => {
    const data = crypto.randomBytes(7 * MiB + 99);
    const finished = await runUpload(data, {
      endpoint,
      headers: auth(owner),
      chunkSize: 2 * MiB,
      metadata: { filename: 'chunks.bin' },
    });
    const served = await owner.client.get(finished.body.url, {}, { validate: false });
    expect(sha256(served.raw)).toBe(sha256(data));
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({
      where: { path_id: finished.body.url.slice('/user_uploads/'.length) },
    });
    // No filetype in the metadata: guessed from the name, as Zulip does.
    expect(row.content_type).toBe('application/octet-stream');
  });

  test('an empty file', async () => {
    const finished = await runUpload(Buffer.alloc(0), {
      endpoint,
      headers: auth(owner),
      metadata: { filename: 'empty.txt' },
    });
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({
      where: { path_id: finished.body.url.slice('/user_uploads/'.length) },
    });
    expect(row).toMatchObject({ size: 0n, content_type: 'text/plain' });
  });

  test('creation checks the size limit, a known length and the quota', async () => {
    const before = storedFiles(uploads);
    const tooBig = await tusRequest(owner, 'POST', '/api/v1/tus', {
      'Upload-Length': String(32 * MiB + 1),
      'Upload-Metadata': 'filename YS5iaW4=',
    });
    expect(tooBig.status).toBe(413);
    expect(await tooBig.json()).toEqual({
      message: "File is larger than this server's configured maximum upload size (32 MiB).",
    });

    const deferred = await tusRequest(owner, 'POST', '/api/v1/tus', { 'Upload-Defer-Length': '1' });
    expect(deferred.status).toBe(411);
    expect(await deferred.json()).toEqual({ message: 'SizeIsDeferred is not supported' });

    const realmId = uploads.stack.realm.id;
    const used = Number(
      (await uploads.stack.db.attachment.aggregate({ where: { realm_id: realmId }, _sum: { size: true } }))._sum.size ??
        0,
    );
    await uploads.stack.db.realm.update({ where: { id: realmId }, data: { upload_quota_bytes: BigInt(used + 1000) } });
    try {
      const overQuota = await tusRequest(owner, 'POST', '/api/v1/tus', { 'Upload-Length': '1001' });
      expect(overQuota.status).toBe(413);
      expect(await overQuota.json()).toEqual({ message: "Upload would exceed your organization's upload quota." });
      const fits = await runUpload(Buffer.alloc(1000, 3), {
        endpoint,
        headers: auth(owner),
        metadata: { filename: 'fits.bin' },
      });
      expect(fits.body.filename).toBe('fits.bin');
    } finally {
      await uploads.stack.db.realm.update({ where: { id: realmId }, data: { upload_quota_bytes: null } });
    }
    // The refused creations left nothing behind; only the upload that fit was stored.
    expect(storedFiles(uploads).filter((name) => !before.includes(name) && !name.includes('fits.bin'))).toEqual([]);
  });

  test('the quota is checked again when the upload finishes, and a refused upload is not kept', async () => {
    const created = await tusRequest(owner, 'POST', '/api/v1/tus', {
      'Upload-Length': '500',
      'Upload-Metadata': `filename ${Buffer.from('late.bin').toString('base64')}`,
    });
    expect(created.status).toBe(201);
    const uploadUrl = created.headers.get('location')!;
    const realmId = uploads.stack.realm.id;
    const used = Number(
      (await uploads.stack.db.attachment.aggregate({ where: { realm_id: realmId }, _sum: { size: true } }))._sum.size ??
        0,
    );
    // Other uploads took the space meanwhile.
    await uploads.stack.db.realm.update({ where: { id: realmId }, data: { upload_quota_bytes: BigInt(used + 100) } });
    try {
      const patched = await tusRequest(
        owner,
        'PATCH',
        uploadUrl,
        { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
        Buffer.alloc(500, 1),
      );
      expect(patched.status).toBe(413);
      expect(await patched.json()).toEqual({ message: "Upload would exceed your organization's upload quota." });
    } finally {
      await uploads.stack.db.realm.update({ where: { id: realmId }, data: { upload_quota_bytes: null } });
    }
    expect(await uploads.stack.db.attachment.count({ where: { file_name: 'late.bin' } })).toBe(0);
    const pathId = Buffer.from(uploadUrl.split('/').pop()!, 'base64url').toString();
    for (const key of uploadKeys(uploads.storage, pathId)) expect(await uploads.storage.head(key)).toBeNull();
  });

  test('an unfinished upload can be terminated; a finished one cannot', async () => {
    const created = await tusRequest(owner, 'POST', '/api/v1/tus', {
      'Upload-Length': '10',
      'Upload-Metadata': `filename ${Buffer.from('drop.txt').toString('base64')}`,
    });
    const uploadUrl = created.headers.get('location')!;
    const patched = await tusRequest(
      owner,
      'PATCH',
      uploadUrl,
      { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      Buffer.from('12345'),
    );
    expect(patched.status).toBe(204);
    expect(patched.headers.get('upload-offset')).toBe('5');
    const pathId = Buffer.from(uploadUrl.split('/').pop()!, 'base64url').toString();
    const terminated = await tusRequest(owner, 'DELETE', uploadUrl);
    expect(terminated.status).toBe(204);
    expect((await tusRequest(owner, 'HEAD', uploadUrl)).status).toBe(404);
    for (const key of uploadKeys(uploads.storage, pathId)) expect(await uploads.storage.head(key)).toBeNull();
    // Nothing of it is left in the store, not even a pending part.
    const random = pathId.split('/')[1];
    expect(storedFiles(uploads).filter((name) => name.includes(random))).toEqual([]);

    const finished = await runUpload(Buffer.from('keep me'), {
      endpoint,
      headers: auth(owner),
      metadata: { filename: 'kept.txt' },
    });
    const refused = await tusRequest(owner, 'DELETE', finished.uploadUrl);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toBe('upload termination has been rejected by server\n');
    const served = await owner.client.get(finished.body.url, {}, { validate: false });
    expect(served.raw.toString()).toBe('keep me');
  });

  test('deleting a tus-made attachment removes its bytes and its tus metadata', async () => {
    const finished = await runUpload(Buffer.from('short lived'), {
      endpoint,
      headers: auth(owner),
      metadata: { filename: 'gone.txt' },
    });
    const pathId = finished.body.url.slice('/user_uploads/'.length);
    const keys = uploadKeys(uploads.storage, pathId);
    expect(await uploads.storage.head(keys[1])).not.toBeNull();
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathId } });
    expect((await owner.client.delete(`/api/v1/attachments/${row.id}`, {}, { validate: false })).status).toBe(200);
    for (const key of keys) expect(await uploads.storage.head(key)).toBeNull();
  });

  test("nobody else can look at, add to or terminate someone's upload", async () => {
    const created = await tusRequest(owner, 'POST', '/api/v1/tus', {
      'Upload-Length': '6',
      'Upload-Metadata': `filename ${Buffer.from('mine.txt').toString('base64')}`,
    });
    const uploadUrl = created.headers.get('location')!;
    expect((await tusRequest(other, 'HEAD', uploadUrl)).status).toBe(404);
    const patch = await tusRequest(
      other,
      'PATCH',
      uploadUrl,
      { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      Buffer.from('hijack'),
    );
    expect(patch.status).toBe(404);
    // A refused request's unread body (here 5 MiB at a wrong offset) neither holds up the
    // connection nor turns the answer into the gateway's 503 (tus's own "Connection: close"
    // reset the upstream connection mid-body: 503 in 15 of 25 runs of one attempt).
    for (let attempt = 0; attempt < 3; attempt++) {
      const wrongOffset = await tusRequest(
        owner,
        'PATCH',
        uploadUrl,
        { 'Upload-Offset': '3', 'Content-Type': 'application/offset+octet-stream' },
        Buffer.alloc(5 * MiB),
      );
      expect(wrongOffset.status).toBe(409);
    }
    for (let i = 0; i < 5; i++) expect((await tusRequest(owner, 'HEAD', uploadUrl)).status).toBe(200);
    expect((await tusRequest(other, 'DELETE', uploadUrl)).status).toBe(404);
    const head = await tusRequest(owner, 'HEAD', uploadUrl);
    expect(head.status).toBe(200);
    expect(head.headers.get('upload-offset')).toBe('0');
    expect((await tusRequest(null, 'HEAD', uploadUrl)).status).toBe(401);
    // Malformed ids are no upload at all.
    expect((await tusRequest(owner, 'HEAD', '/api/v1/tus/Li4vLi4vZXRjL3Bhc3N3ZA')).status).toBe(404);
  });

  test('a GET of an upload is not offered; anonymous creation is refused', async () => {
    const finished = await runUpload(Buffer.from('x'), {
      endpoint,
      headers: auth(owner),
      metadata: { filename: 'x.txt' },
    });
    const get = await tusRequest(owner, 'GET', finished.uploadUrl);
    expect(get.status).toBe(405);
    const anonymous = await tusRequest(null, 'POST', '/api/v1/tus', { 'Upload-Length': '1' });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { code: string }).code).toBe('UNAUTHORIZED');
  });
});
