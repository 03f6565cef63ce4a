// Uploaded files in an S3-compatible store (AWS S3, MinIO, Ceph, s3rver, ...), one object per
// key in one bucket. Streams of unknown length go up as multipart uploads, which S3 only
// makes visible once complete, and which are aborted on failure: nothing partial is stored.

import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { Readable } from 'node:stream';
import {
  assertValidKey,
  ByteCounter,
  ObjectTooLargeError,
  type ByteRange,
  type ObjectStorage,
  type PutOptions,
} from './storage';

export interface S3StorageConfig {
  bucket: string;
  /** Empty: AWS's own endpoint for the region. */
  endpoint?: string;
  region: string;
  /** Address the bucket in the path (MinIO, s3rver) instead of the host name. */
  forcePathStyle: boolean;
  /** Both empty: the AWS SDK's default credential chain (environment, profile, instance role). */
  accessKeyId?: string;
  secretAccessKey?: string;
}

/** Bigger parts mean fewer requests; S3 needs at least 5 MiB for every part but the last. */
const PART_SIZE = 8 * 1024 * 1024;
const PARALLEL_PARTS = 4;
/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

/**
 * The AWS SDK client settings for `config`. Checksums only where S3 requires them: stores such
 * as s3rver do not understand the SDK's default aws-chunked checksum framing and would keep it
 * inside the object (wrong size, wrong bytes). Used for our client and for tus's S3 store.
 */
export function s3ClientConfig(config: S3StorageConfig): S3ClientConfig {
  return {
    region: config.region,
    endpoint: config.endpoint || undefined,
    forcePathStyle: config.forcePathStyle,
    credentials:
      config.accessKeyId && config.secretAccessKey
        ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey }
        : undefined,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}

export class S3Storage implements ObjectStorage {
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly client: S3Client;

  constructor(readonly config: S3StorageConfig) {
    this.bucket = config.bucket;
    this.client = new S3Client(s3ClientConfig(config));
  }

  async put(key: string, body: Readable | Buffer, options: PutOptions = {}): Promise<{ size: number }> {
    assertValidKey(key);
    const params = {
      Bucket: this.bucket,
      Key: key,
      ContentType: options.contentType,
      ContentDisposition: options.contentDisposition,
    };
    if (Buffer.isBuffer(body)) {
      if (options.maxBytes !== undefined && body.length > options.maxBytes)
        throw new ObjectTooLargeError(options.maxBytes);
      await this.client.send(new PutObjectCommand({ ...params, Body: body, ContentLength: body.length }));
      return { size: body.length };
    }
    const counter = new ByteCounter(options.maxBytes);
    body.on('error', (error) => counter.destroy(error));
    // A failing body (too large, cut off) makes the upload fail, which aborts its parts.
    await new Upload({
      client: this.client,
      params: { ...params, Body: body.pipe(counter) },
      partSize: PART_SIZE,
      queueSize: PARALLEL_PARTS,
      leavePartsOnError: false,
    }).done();
    return { size: counter.bytes };
  }

  async get(key: string, range?: ByteRange): Promise<Readable | null> {
    assertValidKey(key);
    try {
      const result = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      return result.Body as Readable;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async head(key: string): Promise<{ size: number } | null> {
    assertValidKey(key);
    try {
      const result = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: result.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    keys.forEach(assertValidKey);
    for (let start = 0; start < keys.length; start += DELETE_BATCH) {
      const batch = keys.slice(start, start + DELETE_BATCH);
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failures = (result.Errors ?? []).filter((error) => error.Code !== 'NoSuchKey');
      if (failures.length) {
        throw new Error(
          `S3 could not delete ${failures.map((failure) => `${failure.Key} (${failure.Code})`).join(', ')}`,
        );
      }
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}
