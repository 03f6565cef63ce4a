// Reading an archive (docs/export-format.md) line by line: from a file (gzipped or not), a
// byte stream, or lines a converter produces (the Slack importer hands its lines straight in).

import fs from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import zlib from 'node:zlib';

export type ArchiveSource = string | Readable | AsyncIterable<string> | Iterable<string>;

/** Bytes that may be gzipped: gunzipped when they start with gzip's magic number. */
async function maybeGunzip(input: Readable): Promise<Readable> {
  const iterator = input[Symbol.asyncIterator]();
  const first = await iterator.next();
  const out = new PassThrough();
  if (first.done) {
    out.end();
    return out;
  }
  const head = Buffer.isBuffer(first.value) ? (first.value as Buffer) : Buffer.from(String(first.value));
  const rest = Readable.from(
    (async function* () {
      yield head;
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        yield next.value as Buffer;
      }
    })(),
  );
  const gzipped = head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
  if (!gzipped) return rest;
  const gunzip = zlib.createGunzip();
  rest.on('error', (error) => gunzip.destroy(error));
  return rest.pipe(gunzip);
}

/** The archive's lines, without their newlines. */
export async function* archiveLines(source: ArchiveSource): AsyncGenerator<string> {
  if (typeof source !== 'string' && !(source instanceof Readable)) {
    for await (const chunk of source as AsyncIterable<string>) {
      // A producer may hand several lines at once.
      for (const line of chunk.split('\n')) if (line) yield line;
    }
    return;
  }
  const bytes = typeof source === 'string' ? fs.createReadStream(source) : source;
  const text = await maybeGunzip(bytes);
  // Split by hand: a stream's error (a truncated gzip) then ends the loop with that error.
  const decoder = new StringDecoder('utf8');
  let pending = '';
  for await (const chunk of text as AsyncIterable<Buffer>) {
    pending += decoder.write(chunk);
    let newline = pending.indexOf('\n');
    let start = 0;
    while (newline !== -1) {
      const line = pending.slice(start, newline);
      if (line) yield line;
      start = newline + 1;
      newline = pending.indexOf('\n', start);
    }
    pending = pending.slice(start);
  }
  pending += decoder.end();
  if (pending) yield pending;
}
