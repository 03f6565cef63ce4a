// tus's S3 store, with the parts of an upload cut in memory. The stock store writes every
// incoming 64 KiB to a temporary file, one awaited write at a time, and reads each part back
// from disk to send it: that, not the network, bounded a 100 MiB upload. Here a part is
// gathered in memory (the chunks as they arrived, not copied) and sent as soon as it is
// complete, up to PARALLEL_PARTS at once; the
// request stream waits (back-pressure) while they are all in flight. Memory per upload: at
// most (PARALLEL_PARTS + 1) parts (8 MiB each by default).
//
// Everything else — metadata, resuming, the short tail kept as "<id>.part" between PATCH
// requests, completion — is the stock store's.

import { Readable } from 'node:stream';
import { S3Store, type MetadataValue } from '@tus/s3-store';

const PARALLEL_PARTS = 4;

export class BufferedPartsS3Store extends S3Store {
  protected override async uploadParts(
    metadata: MetadataValue,
    readStream: Readable,
    currentPartNumber: number,
    offset: number,
  ): Promise<number> {
    const size = metadata.file.size;
    const partSize = this.calcOptimalPartSize(size);
    const inFlight = new Set<Promise<void>>();
    let nextPartNumber = currentPartNumber;
    let position = offset;
    let bytesUploaded = 0;
    let failure: unknown;

    /** Sends one part, made of the chunks as they arrived (no copying into one buffer). */
    const send = async (chunks: Buffer[], length: number): Promise<void> => {
      if (failure) throw failure;
      const partNumber = nextPartNumber++;
      position += length;
      const isFinalPart = size === position;
      // A stream with a known length goes unsigned (UNSIGNED-PAYLOAD): no hashing of the bytes.
      const body = () => Readable.from(chunks, { objectMode: false });
      const upload = (async () => {
        if (length >= this.minPartSize || isFinalPart) {
          await this.client.uploadPart({
            Bucket: this.bucket,
            Key: metadata.file.id,
            UploadId: metadata['upload-id'],
            PartNumber: partNumber,
            Body: body(),
            ContentLength: length,
          });
        } else {
          // Too short to be a part unless it is the last: kept aside until the next PATCH.
          await this.client.putObject({
            Bucket: this.bucket,
            Key: this.partKey(metadata.file.id, true),
            Body: body(),
            ContentLength: length,
            Tagging: this.useCompleteTag('false'),
          });
        }
        bytesUploaded += length;
      })().catch((error: unknown) => {
        failure ??= error;
      });
      inFlight.add(upload);
      void upload.then(() => inFlight.delete(upload));
      while (inFlight.size >= PARALLEL_PARTS) await Promise.race(inFlight);
      if (failure) throw failure;
    };

    let pending: Buffer[] = [];
    let pendingLength = 0;
    try {
      for await (const chunk of readStream) {
        let data = chunk as Buffer;
        while (pendingLength + data.length >= partSize) {
          const taken = partSize - pendingLength;
          pending.push(data.subarray(0, taken));
          await send(pending, partSize);
          pending = [];
          pendingLength = 0;
          data = data.subarray(taken);
        }
        if (data.length > 0) {
          pending.push(data);
          pendingLength += data.length;
        }
      }
      // The body ended: what is left is the last part, or a tail kept for the next PATCH.
      if (pendingLength > 0) await send(pending, pendingLength);
    } finally {
      // A body cut short drops its unfinished part (as the stock store does), after the parts
      // already on their way have landed: the next HEAD reports exactly what S3 holds.
      await Promise.allSettled(inFlight);
    }
    if (failure) throw failure;
    return bytesUploaded;
  }
}
