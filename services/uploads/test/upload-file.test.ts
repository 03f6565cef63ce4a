// POST /api/v1/user_uploads through the gateway, on local disk and on S3.
import { type TestUser } from '@teamchat/stack';
import { type ApiResponse, captureEvents, expectError, ofType } from '@teamchat/testing';
import {
  multipartBody,
  sha256,
  STORE_KINDS,
  startUploadsStack,
  storedFiles,
  uploadLikePythonZulipApi,
  type UploadsStack,
} from './helpers';

const MiB = 1024 * 1024;

describe.each(STORE_KINDS)('uploading a file (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind, { env: { UPLOADS_MAX_FILE_SIZE_MIB: '1' } });
    owner = await uploads.stack.createUser({ fullName: 'Uploader' });
  });
  afterAll(async () => {
    await uploads.close();
  });

  test('python-zulip-api upload_file: field named after the path; stored, recorded, announced, served', async () => {
    const content = 'hello from python\n';
    let response!: ApiResponse;
    const captured = await captureEvents(uploads.stack, async () => {
      response = await uploadLikePythonZulipApi(owner, '/home/me/notes/hello.txt', content);
    });
    expect(response.status).toBe(200);
    const { url } = response.body;
    expect(url).toMatch(new RegExp(`^/user_uploads/${uploads.stack.realm.id}/[A-Za-z0-9_-]{24}/hello\\.txt$`));
    expect(response.body).toEqual({ result: 'success', msg: '', url, uri: url, filename: 'hello.txt' });

    const pathId = url.slice('/user_uploads/'.length);
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathId } });
    expect(row).toMatchObject({
      owner_id: owner.id,
      realm_id: uploads.stack.realm.id,
      file_name: 'hello.txt',
      size: BigInt(content.length),
      content_type: 'text/plain',
    });
    expect(await uploads.storage.head(pathId)).toEqual({ size: content.length });

    expect(ofType(captured, 'attachment')).toEqual([
      {
        event: {
          type: 'attachment',
          op: 'add',
          attachment: {
            id: row.id,
            name: 'hello.txt',
            path_id: pathId,
            size: content.length,
            create_time: row.create_time.getTime(),
            messages: [],
          },
          upload_space_used: Number(
            (
              await uploads.stack.db.attachment.aggregate({
                where: { realm_id: uploads.stack.realm.id },
                _sum: { size: true },
              })
            )._sum.size,
          ),
        },
        recipientIds: [owner.id],
      },
    ]);

    const served = await owner.client.get(url, {}, { validate: false });
    expect(served.status).toBe(200);
    expect(served.raw.toString()).toBe(content);
    expect(served.headers['content-type']).toMatch(/^text\/plain/);
  });

  test('takes the first file part whatever its field is called, after other fields', async () => {
    const { body, contentType } = multipartBody(
      [
        {
          field: 'file',
          filename: 'photo.png',
          content: Buffer.from([0x89, 0x50, 0x4e, 0x47]),
          contentType: 'image/png',
        },
      ],
      {
        note: 'ignored',
      },
    );
    const response = await owner.client.post(
      '/api/v1/user_uploads',
      {},
      { body, headers: { 'content-type': contentType } },
    );
    expect(response.status).toBe(200);
    expect(response.body.filename).toBe('photo.png');
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({
      where: { path_id: response.body.url.slice('/user_uploads/'.length) },
    });
    expect(row.content_type).toBe('image/png');
  });

  test('without a Content-Type the type comes from the name', async () => {
    const response = await uploadLikePythonZulipApi(owner, '/tmp/picture.jpeg', Buffer.from([0xff, 0xd8, 0xff]));
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({
      where: { path_id: response.body.url.slice('/user_uploads/'.length) },
    });
    expect(row.content_type).toBe('image/jpeg');
    const unknown = await uploadLikePythonZulipApi(owner, '/tmp/data.unknownext', 'x');
    const unknownRow = await uploads.stack.db.attachment.findUniqueOrThrow({
      where: { path_id: unknown.body.url.slice('/user_uploads/'.length) },
    });
    expect(unknownRow.content_type).toBe('application/octet-stream');
  });

  test('file names are sanitised in the URL and kept as given in filename', async () => {
    const cases: [string, string, string][] = [
      ['my file (1).png', 'my-file-1.png', 'my file (1).png'],
      ['café résumé.txt', 'café-résumé.txt', 'café résumé.txt'],
      ['a%20b%2Bc.txt', 'a-bc.txt', 'a b+c.txt'],
      ['[brackets] & $ymbols!.md', 'brackets-ymbols.md', '[brackets] & $ymbols!.md'],
      ['....', '....', '....'],
      ['Ω≈ç√.bin', 'Ωç.bin', 'Ω≈ç√.bin'],
    ];
    for (const [given, inUrl, filename] of cases) {
      const { body, contentType } = multipartBody([{ field: `/x/${given}`, filename: given, content: 'x' }]);
      const response = await owner.client.post(
        '/api/v1/user_uploads',
        {},
        { body, headers: { 'content-type': contentType } },
      );
      expect(response.status).toBe(200);
      expect(response.body.url.split('/').pop()).toBe(inUrl);
      expect(response.body.filename).toBe(filename);
      const row = await uploads.stack.db.attachment.findUniqueOrThrow({
        where: { path_id: response.body.url.slice('/user_uploads/'.length) },
      });
      expect(row.file_name).toBe(filename);
    }
  });

  test('no file, or more than one, is refused and nothing is stored', async () => {
    const captured = await captureEvents(uploads.stack, async () => {
      const before = storedFiles(uploads);
      const attachmentsBefore = await uploads.stack.db.attachment.count();

      const onlyFields = multipartBody([], { a: 'b' });
      expectError(
        await owner.client.post(
          '/api/v1/user_uploads',
          {},
          { body: onlyFields.body, headers: { 'content-type': onlyFields.contentType } },
        ),
        400,
        'BAD_REQUEST',
        'You must specify a file to upload',
      );
      expectError(
        await owner.client.post('/api/v1/user_uploads', { a: 'b' }),
        400,
        'BAD_REQUEST',
        'You must specify a file to upload',
      );

      const two = multipartBody([
        { field: 'one', filename: 'one.txt', content: 'first' },
        { field: 'two', filename: 'two.txt', content: 'second' },
      ]);
      expectError(
        await owner.client.post(
          '/api/v1/user_uploads',
          {},
          { body: two.body, headers: { 'content-type': two.contentType } },
        ),
        400,
        'BAD_REQUEST',
        'You may only upload one file at a time',
      );
      expect(storedFiles(uploads)).toEqual(before);
      expect(await uploads.stack.db.attachment.count()).toBe(attachmentsBefore);
    });
    expect(ofType(captured, 'attachment')).toEqual([]);
  });

  test('a file above max_file_upload_size_mib is refused and nothing of it is stored', async () => {
    const before = storedFiles(uploads);
    const attachmentsBefore = await uploads.stack.db.attachment.count();
    const response = await uploadLikePythonZulipApi(owner, '/tmp/big.bin', Buffer.alloc(MiB + 1, 7));
    expectError(
      response,
      400,
      'BAD_REQUEST',
      "File is larger than this server's configured maximum upload size (1 MiB).",
    );
    expect(storedFiles(uploads)).toEqual(before);
    expect(await uploads.stack.db.attachment.count()).toBe(attachmentsBefore);

    const exact = await uploadLikePythonZulipApi(owner, '/tmp/exact.bin', Buffer.alloc(MiB, 7));
    expect(exact.status).toBe(200);
    expect(await uploads.storage.head(exact.body.url.slice('/user_uploads/'.length))).toEqual({ size: MiB });
  });

  test("the realm's upload quota is enforced and a refused file is not kept", async () => {
    const realmId = uploads.stack.realm.id;
    const used = Number(
      (await uploads.stack.db.attachment.aggregate({ where: { realm_id: realmId }, _sum: { size: true } }))._sum.size ??
        0,
    );
    await uploads.stack.db.realm.update({ where: { id: realmId }, data: { upload_quota_bytes: BigInt(used + 100) } });
    try {
      const before = storedFiles(uploads);
      const refused = await uploadLikePythonZulipApi(owner, '/tmp/over.bin', Buffer.alloc(101, 1));
      expectError(refused, 400, 'REALM_UPLOAD_QUOTA', "Upload would exceed your organization's upload quota.");
      expect(storedFiles(uploads)).toEqual(before);
      const fits = await uploadLikePythonZulipApi(owner, '/tmp/fits.bin', Buffer.alloc(100, 1));
      expect(fits.status).toBe(200);
      expectError(await uploadLikePythonZulipApi(owner, '/tmp/one-more.bin', 'x'), 400, 'REALM_UPLOAD_QUOTA');
    } finally {
      await uploads.stack.db.realm.update({ where: { id: realmId }, data: { upload_quota_bytes: null } });
    }
  });

  test('a larger file streams through intact', async () => {
    const data = Buffer.alloc(MiB - 17);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31 + 7) % 251;
    const response = await uploadLikePythonZulipApi(owner, '/tmp/pattern.bin', data);
    expect(response.status).toBe(200);
    const served = await owner.client.get(response.body.url, {}, { validate: false });
    expect(sha256(served.raw)).toBe(sha256(data));
  });

  test('needs authentication', async () => {
    const { body, contentType } = multipartBody([{ field: 'f', filename: 'a.txt', content: 'a' }]);
    expectError(
      await uploads.stack
        .anonymous()
        .post('/api/v1/user_uploads', {}, { body, headers: { 'content-type': contentType } }),
      401,
      'UNAUTHORIZED',
    );
  });
});
