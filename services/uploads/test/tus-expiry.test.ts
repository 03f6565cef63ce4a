// Resumable uploads never finished expire: UPLOADS_TUS_EXPIRE_AFTER_MS after its creation the
// worker's uploads-cleanup job removes an unfinished upload's bytes and tus metadata (the S3
// store's buffered tail and the Redis cache of its metadata too), and tus no longer knows it;
// before the horizon it is still there, and a finished upload (an attachment) stays.
import { uploadKeys } from '@teamchat/storage';
import type { TestUser } from '@teamchat/stack';
import { waitFor } from '@teamchat/testing';
import { tusMetadataCacheKey } from '../src/lib/tus';
import { basicAuth, startUploadsStack, STORE_KINDS, type UploadsStack } from './helpers';

const HORIZON_MS = 4000;

describe.each(STORE_KINDS)('unfinished tus uploads expire (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind, {
      env: { UPLOADS_TUS_EXPIRE_AFTER_MS: String(HORIZON_MS) },
      services: ['worker'],
      exportEnv: true,
    });
    owner = await uploads.stack.createUser({ fullName: 'Owner' });
  });
  afterAll(async () => {
    await uploads.close();
  });

  function tus(method: string, url: string, headers: Record<string, string> = {}, body?: Buffer) {
    return fetch(new URL(url, uploads.stack.gatewayUrl), {
      method,
      headers: { 'Tus-Resumable': '1.0.0', Authorization: basicAuth(owner), ...headers },
      body,
    });
  }

  /** Creates an upload of `length` bytes and sends the first `sent`; returns its URL and path id. */
  async function startUpload(name: string, length: number, sent: number) {
    // Taken before the creation, where the service's delay starts: a slow PATCH after it cannot
    // make the expiry look early.
    const createdAt = Date.now();
    const created = await tus('POST', '/api/v1/tus', {
      'Upload-Length': String(length),
      'Upload-Metadata': `filename ${Buffer.from(name).toString('base64')}`,
    });
    expect(created.status).toBe(201);
    const url = created.headers.get('location')!;
    const pathId = Buffer.from(url.split('/').at(-1)!, 'base64url').toString('utf8');
    const patched = await tus(
      'PATCH',
      url,
      { 'Content-Type': 'application/offset+octet-stream', 'Upload-Offset': '0' },
      Buffer.alloc(sent, 7),
    );
    expect(patched.status).toBe(sent === length ? 200 : 204);
    return { url, pathId, createdAt };
  }

  const stored = async (pathId: string) => {
    const keys = [...uploadKeys(uploads.storage, pathId), `${pathId}.part`];
    const present = await Promise.all(keys.map(async (key) => ((await uploads.storage.head(key)) ? key : null)));
    return present.filter((key): key is string => key !== null);
  };
  const metadataCacheKey = (pathId: string) => tusMetadataCacheKey(uploads.stack.deps.bus.keys, pathId);

  test('past the horizon its bytes and metadata are gone; before it, and once finished, they stay', async () => {
    const unfinished = await startUpload('abandoned.bin', 1000, 300);
    const finished = await startUpload('done.bin', 200, 200);
    expect(await uploads.stack.db.attachment.count({ where: { path_id: finished.pathId } })).toBe(1);

    // Before the horizon: resumable.
    expect((await stored(unfinished.pathId)).length).toBeGreaterThan(0);
    const head = await tus('HEAD', unfinished.url);
    expect([head.status, head.headers.get('upload-offset')]).toEqual([200, '300']);
    if (kind === 's3') expect(await uploads.stack.deps.redis.exists(metadataCacheKey(unfinished.pathId))).toBe(1);

    // Expired once the job has done its every step: the bytes, then the upload's metadata (its
    // file beside the bytes on disk, the Redis cache on S3), so a HEAD no longer finds it.
    await waitFor(
      async () =>
        (await stored(unfinished.pathId)).length === 0 &&
        (await uploads.stack.deps.redis.exists(metadataCacheKey(unfinished.pathId))) === 0 &&
        (await tus('HEAD', unfinished.url)).status === 404,
      { what: 'the unfinished upload to expire', timeoutMs: 30_000 },
    );
    expect(Date.now() - unfinished.createdAt).toBeGreaterThanOrEqual(HORIZON_MS - 500);
    expect((await tus('HEAD', unfinished.url)).status).toBe(404);
    expect(await uploads.stack.deps.redis.exists(metadataCacheKey(unfinished.pathId))).toBe(0);
    // Resuming it now is refused: the client starts over.
    const resumed = await tus(
      'PATCH',
      unfinished.url,
      { 'Content-Type': 'application/offset+octet-stream', 'Upload-Offset': '300' },
      Buffer.alloc(10),
    );
    expect(resumed.status).toBe(404);

    // The finished one, past the same horizon, is an attachment and stays.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, finished.createdAt + HORIZON_MS + 1500 - Date.now())),
    );
    expect(await stored(finished.pathId)).toContain(finished.pathId);
    const served = await owner.client.get(`/user_uploads/${finished.pathId}`, {}, { validate: false });
    expect(served.status).toBe(200);
  });
});
