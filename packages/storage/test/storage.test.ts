import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListPartsCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import {
  createStorage,
  InvalidStorageKeyError,
  loadStorageConfig,
  LocalDiskStorage,
  ObjectTooLargeError,
  S3Storage,
  type ObjectStorage,
} from '../src';
import { startS3TestServer, type S3TestServer } from './s3-test-server';

async function readAll(stream: Readable | null): Promise<Buffer> {
  if (!stream) throw new Error('no object');
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A stream of `size` pseudo-random bytes in 1 MiB chunks, and their sha256. */
function randomStream(size: number): { stream: Readable; sha256: string } {
  const data = crypto.randomBytes(size);
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < size; offset += 1 << 20) chunks.push(data.subarray(offset, offset + (1 << 20)));
  return { stream: Readable.from(chunks), sha256: crypto.createHash('sha256').update(data).digest('hex') };
}

function filesUnder(directory: string): string[] {
  if (!fs.existsSync(directory)) return [];
  return fs
    .readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => entry.name);
}

interface StoreUnderTest {
  storage: ObjectStorage;
  /** Whatever the store keeps on disk besides complete objects (temporary files, multipart parts). */
  leftovers(): string[];
  close(): Promise<void>;
}

const stores: [string, () => Promise<StoreUnderTest>][] = [
  [
    'local disk',
    async () => {
      const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-storage-'));
      const storage = new LocalDiskStorage(directory);
      return {
        storage,
        leftovers: () => filesUnder(directory).filter((name) => name.endsWith('.partial')),
        close: async () => {
          await storage.close();
          await fs.promises.rm(directory, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    'S3 (s3rver)',
    async () => {
      const server = await startS3TestServer();
      const storage = new S3Storage(server.config);
      return {
        storage,
        leftovers: () => filesUnder(path.join(server.directory, server.bucket, '._S3rver_uploads')),
        close: async () => {
          await storage.close();
          await server.close();
        },
      };
    },
  ],
];

describe.each(stores)('%s storage', (_name, start) => {
  let store: StoreUnderTest;
  let storage: ObjectStorage;

  beforeAll(async () => {
    store = await start();
    storage = store.storage;
  });
  afterAll(async () => {
    await store.close();
  });

  test('stores a buffer and reads it back whole and by range', async () => {
    const body = Buffer.from('hello, uploaded world');
    expect(await storage.put('7/abc/hello.txt', body, { contentType: 'text/plain' })).toEqual({ size: body.length });
    expect(await storage.head('7/abc/hello.txt')).toEqual({ size: body.length });
    expect((await readAll(await storage.get('7/abc/hello.txt'))).toString()).toBe('hello, uploaded world');
    expect((await readAll(await storage.get('7/abc/hello.txt', { start: 7, end: 14 }))).toString()).toBe('uploaded');
  });

  test('streams a body larger than one multipart part and keeps every byte', async () => {
    const size = 20 * 1024 * 1024 + 12345;
    const { stream, sha256 } = randomStream(size);
    expect(await storage.put('7/big/data.bin', stream)).toEqual({ size });
    expect(await storage.head('7/big/data.bin')).toEqual({ size });
    const stored = await readAll(await storage.get('7/big/data.bin'));
    expect(stored.length).toBe(size);
    expect(crypto.createHash('sha256').update(stored).digest('hex')).toBe(sha256);
    expect(store.leftovers()).toEqual([]);
  });

  test('refuses a body above maxBytes and stores nothing of it', async () => {
    const { stream } = randomStream(12 * 1024 * 1024);
    await expect(storage.put('7/too/large.bin', stream, { maxBytes: 10 * 1024 * 1024 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    );
    expect(await storage.head('7/too/large.bin')).toBeNull();
    expect(await storage.get('7/too/large.bin')).toBeNull();
    expect(store.leftovers()).toEqual([]);
    await expect(storage.put('7/too/small.bin', Buffer.alloc(11), { maxBytes: 10 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    );
    expect(await storage.head('7/too/small.bin')).toBeNull();
  });

  test('a body of exactly maxBytes is accepted', async () => {
    expect(await storage.put('7/exact/ten.bin', Readable.from([Buffer.alloc(10, 1)]), { maxBytes: 10 })).toEqual({
      size: 10,
    });
  });

  test('missing objects read as null; deleting is idempotent', async () => {
    expect(await storage.get('7/nothing/here')).toBeNull();
    expect(await storage.head('7/nothing/here')).toBeNull();
    await storage.put('7/del/a', Buffer.from('a'));
    await storage.put('7/del/b', Buffer.from('b'));
    await storage.delete(['7/del/a', '7/del/b', '7/del/never-existed']);
    expect(await storage.head('7/del/a')).toBeNull();
    expect(await storage.head('7/del/b')).toBeNull();
    await storage.delete(['7/del/a']);
  });

  test('rejects keys that could escape their place', async () => {
    for (const key of ['../etc/passwd', '7/../../x', '/abs', '7//x', '7/./x', 'a\\b', '']) {
      await expect(storage.put(key, Buffer.from('x'))).rejects.toBeInstanceOf(InvalidStorageKeyError);
    }
  });
});

describe('local disk layout', () => {
  test('an emptied upload directory is removed', async () => {
    const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-storage-'));
    const storage = new LocalDiskStorage(directory);
    await storage.put('3/rand0m/file.txt', Buffer.from('x'));
    expect(fs.existsSync(path.join(directory, '3', 'rand0m', 'file.txt'))).toBe(true);
    await storage.delete(['3/rand0m/file.txt']);
    expect(fs.existsSync(path.join(directory, '3', 'rand0m'))).toBe(false);
    await fs.promises.rm(directory, { recursive: true, force: true });
  });
});

describe('the S3 test server', () => {
  let server: S3TestServer;
  let storage: S3Storage;
  beforeAll(async () => {
    server = await startS3TestServer();
    storage = new S3Storage(server.config);
  });
  afterAll(async () => {
    await storage.close();
    await server.close();
  });

  test('answers ListParts and AbortMultipartUpload, which s3rver lacks', async () => {
    const { client, bucket } = storage;
    const Key = '9/parts/object.bin';
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }));
    const part = crypto.randomBytes(5 * 1024 * 1024);
    await client.send(
      new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: 1, Body: part, ContentLength: part.length }),
    );
    await client.send(
      new UploadPartCommand({
        Bucket: bucket,
        Key,
        UploadId,
        PartNumber: 2,
        Body: Buffer.from('tail'),
        ContentLength: 4,
      }),
    );
    const listed = await client.send(new ListPartsCommand({ Bucket: bucket, Key, UploadId }));
    expect(listed.Parts?.map((p) => [p.PartNumber, p.Size, p.ETag])).toEqual([
      [1, part.length, `"${crypto.createHash('md5').update(part).digest('hex')}"`],
      [2, 4, `"${crypto.createHash('md5').update('tail').digest('hex')}"`],
    ]);
    expect(listed.IsTruncated).toBe(false);
    const afterFirst = await client.send(
      new ListPartsCommand({ Bucket: bucket, Key, UploadId, PartNumberMarker: '1' }),
    );
    expect(afterFirst.Parts?.map((p) => p.PartNumber)).toEqual([2]);

    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key, UploadId }));
    await expect(client.send(new ListPartsCommand({ Bucket: bucket, Key, UploadId }))).rejects.toMatchObject({
      name: 'NoSuchUpload',
    });
    expect(await storage.head(Key)).toBeNull();
  });
});

describe('storage configuration', () => {
  test('local disk by default, in var/uploads', () => {
    expect(loadStorageConfig({})).toEqual({ kind: 'local', directory: path.resolve('var/uploads') });
    expect(createStorage(loadStorageConfig({ UPLOADS_LOCAL_DIR: '/tmp/x' }))).toBeInstanceOf(LocalDiskStorage);
  });

  test('S3 with its endpoint, path style and credentials', () => {
    const config = loadStorageConfig({
      UPLOADS_STORAGE: 's3',
      UPLOADS_S3_BUCKET: 'b',
      UPLOADS_S3_ENDPOINT: 'http://minio:9000',
      UPLOADS_S3_FORCE_PATH_STYLE: 'true',
      UPLOADS_S3_ACCESS_KEY_ID: 'id',
      UPLOADS_S3_SECRET_ACCESS_KEY: 'secret',
    });
    expect(config).toEqual({
      kind: 's3',
      bucket: 'b',
      endpoint: 'http://minio:9000',
      region: 'us-east-1',
      forcePathStyle: true,
      accessKeyId: 'id',
      secretAccessKey: 'secret',
    });
    const storage = createStorage(config);
    expect(storage).toBeInstanceOf(S3Storage);
    void storage.close();
  });

  test('says what is wrong with a bad configuration', () => {
    expect(() => loadStorageConfig({ UPLOADS_STORAGE: 'ftp' })).toThrow(/UPLOADS_STORAGE="ftp" is invalid/);
    expect(() => loadStorageConfig({ UPLOADS_STORAGE: 's3' })).toThrow(/UPLOADS_S3_BUCKET is missing/);
    expect(() =>
      loadStorageConfig({ UPLOADS_STORAGE: 's3', UPLOADS_S3_BUCKET: 'b', UPLOADS_S3_ENDPOINT: 'not a url' }),
    ).toThrow(/not a URL/);
    expect(() => loadStorageConfig({ UPLOADS_S3_FORCE_PATH_STYLE: 'maybe' })).toThrow(/UPLOADS_S3_FORCE_PATH_STYLE/);
  });
});
