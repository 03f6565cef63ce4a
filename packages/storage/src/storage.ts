// One interface for where uploaded files live: local disk or an S3-compatible store.
// Keys are the uploads' path ids ("{realm_id}/{random}/{filename}"). A write either stores
// the whole body under its key or leaves nothing there.

import { Transform, type Readable, type TransformCallback } from 'node:stream';

export interface PutOptions {
  contentType?: string;
  contentDisposition?: string;
  /** Refuse the body (ObjectTooLargeError, nothing stored) once it exceeds this many bytes. */
  maxBytes?: number;
}

/** Inclusive byte offsets, as in an HTTP Range header. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface ObjectStorage {
  readonly kind: 'local' | 's3';
  /** Stores `body` under `key`; resolves with the number of bytes stored. */
  put(key: string, body: Readable | Buffer, options?: PutOptions): Promise<{ size: number }>;
  /** The object's bytes (or the `range` of them); null when there is no such object. */
  get(key: string, range?: ByteRange): Promise<Readable | null>;
  /** The object's size; null when there is no such object. */
  head(key: string): Promise<{ size: number } | null>;
  /** Removes the objects; keys that do not exist are fine. */
  delete(keys: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export class ObjectTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`object larger than ${maxBytes} bytes`);
    this.name = 'ObjectTooLargeError';
  }
}

export class InvalidStorageKeyError extends Error {
  constructor(key: string) {
    super(`invalid storage key ${JSON.stringify(key)}`);
    this.name = 'InvalidStorageKeyError';
  }
}

/** Keys are relative slash-separated paths without empty, "." or ".." segments. */
export function assertValidKey(key: string): void {
  const segments = key.split('/');
  if (
    !key ||
    key.includes('\0') ||
    key.includes('\\') ||
    segments.some((segment) => segment === '' || segment === '.' || segment === '..')
  ) {
    throw new InvalidStorageKeyError(key);
  }
}

/** Counts the bytes passing through and fails once they exceed `maxBytes`. */
export class ByteCounter extends Transform {
  bytes = 0;

  constructor(private readonly maxBytes = Infinity) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      callback(new ObjectTooLargeError(this.maxBytes));
      return;
    }
    callback(null, chunk);
  }
}

/**
 * Every key an upload occupies: its bytes, and the metadata file a resumable (tus) upload
 * leaves beside them (tus's S3 store writes "<key>.info", its file store "<key>.json").
 */
export function uploadKeys(storage: Pick<ObjectStorage, 'kind'>, pathId: string): string[] {
  return [pathId, `${pathId}${storage.kind === 's3' ? '.info' : '.json'}`];
}
