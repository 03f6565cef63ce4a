// Uploaded files on local disk, one file per key under a root directory. Writes go to a
// temporary file next to the target and are renamed into place, so a failed or refused
// write never leaves a partial file under the key.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertValidKey, ByteCounter, type ByteRange, type ObjectStorage, type PutOptions } from './storage';

export class LocalDiskStorage implements ObjectStorage {
  readonly kind = 'local' as const;
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  /** The file of `key`; never outside the root. */
  pathOf(key: string): string {
    assertValidKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Readable | Buffer, options: PutOptions = {}): Promise<{ size: number }> {
    const target = this.pathOf(key);
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    const temporary = path.join(path.dirname(target), `.${crypto.randomBytes(8).toString('hex')}.partial`);
    const counter = new ByteCounter(options.maxBytes);
    try {
      await pipeline(
        Buffer.isBuffer(body) ? Readable.from([body]) : body,
        counter,
        fs.createWriteStream(temporary, { flags: 'wx' }),
      );
      await fs.promises.rename(temporary, target);
    } catch (error) {
      await fs.promises.rm(temporary, { force: true });
      await this.removeEmptyParents(target);
      throw error;
    }
    return { size: counter.bytes };
  }

  async get(key: string, range?: ByteRange): Promise<Readable | null> {
    const file = this.pathOf(key);
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, 'r');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      return null;
    }
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async head(key: string): Promise<{ size: number } | null> {
    try {
      const stat = await fs.promises.stat(this.pathOf(key));
      return stat.isFile() ? { size: stat.size } : null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const file = this.pathOf(key);
      await fs.promises.rm(file, { force: true });
      await this.removeEmptyParents(file);
    }
  }

  async close(): Promise<void> {}

  /** Removes the directories the key created ("{realm}/{random}/") once they are empty. */
  private async removeEmptyParents(file: string): Promise<void> {
    let directory = path.dirname(file);
    while (directory.startsWith(this.root + path.sep)) {
      try {
        await fs.promises.rmdir(directory);
      } catch {
        return;
      }
      directory = path.dirname(directory);
    }
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}
