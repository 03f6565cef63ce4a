// A real S3-protocol server for tests and benchmarks: s3rver on a free port, in its own
// temporary directory, with one bucket. s3rver lacks ListParts and AbortMultipartUpload,
// which resumable (tus) uploads and failed multipart uploads need; a middleware in front of
// its router answers both from the parts it keeps on disk.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import type { S3StorageConfig } from '../src/s3';

export interface S3TestServer {
  endpoint: string;
  bucket: string;
  /** Where s3rver keeps the buckets. */
  directory: string;
  config: S3StorageConfig;
  /** The UPLOADS_* variables that point a service at this server. */
  env: Record<string, string>;
  close(): Promise<void>;
}

const ACCESS_KEY_ID = 'S3RVER';
const SECRET_ACCESS_KEY = 'S3RVER';

/** `address`: where it listens (default 127.0.0.1; another host's address in a multi-host test). */
export async function startS3TestServer(options: { bucket?: string; address?: string } = {}): Promise<S3TestServer> {
  const bucket = options.bucket ?? 'teamchat-uploads';
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-s3-'));
  const server = new S3rver({
    address: options.address ?? '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  server.middleware.unshift(multipartCompletion(directory));
  const address = await server.run();
  const endpoint = `http://${options.address ?? '127.0.0.1'}:${address.port}`;
  const config: S3StorageConfig = {
    bucket,
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey: SECRET_ACCESS_KEY,
  };
  return {
    endpoint,
    bucket,
    directory,
    config,
    env: {
      UPLOADS_STORAGE: 's3',
      UPLOADS_S3_BUCKET: bucket,
      UPLOADS_S3_ENDPOINT: endpoint,
      UPLOADS_S3_REGION: config.region,
      UPLOADS_S3_FORCE_PATH_STYLE: 'true',
      UPLOADS_S3_ACCESS_KEY_ID: ACCESS_KEY_ID,
      UPLOADS_S3_SECRET_ACCESS_KEY: SECRET_ACCESS_KEY,
    },
    async close() {
      await server.close();
      await fs.promises.rm(directory, { recursive: true, force: true });
    },
  };
}

/** ListParts (GET ?uploadId) and AbortMultipartUpload (DELETE ?uploadId), from s3rver's files. */
function multipartCompletion(root: string): S3rver['middleware'][number] {
  return async (ctx, next) => {
    const uploadId = typeof ctx.query.uploadId === 'string' ? ctx.query.uploadId : undefined;
    const isPartsRequest =
      (ctx.method === 'GET' || ctx.method === 'DELETE') && uploadId !== undefined && !('partNumber' in ctx.query);
    const [bucket, ...keySegments] = ctx.path.split('/').slice(1).map(decodeURIComponent);
    if (!isPartsRequest || !bucket || keySegments.length === 0 || !/^[0-9a-f]+$/.test(uploadId)) return next();
    const key = keySegments.join('/');
    // s3rver's layout: <root>/<bucket>/._S3rver_uploads/<uploadId>/<partNumber>(.md5)
    const uploadDir = path.join(root, bucket, '._S3rver_uploads', uploadId);
    if (!fs.existsSync(uploadDir)) {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = xml(
        'Error',
        `<Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message><UploadId>${escapeXml(uploadId)}</UploadId>`,
      );
      return;
    }
    if (ctx.method === 'DELETE') {
      await fs.promises.rm(uploadDir, { recursive: true, force: true });
      ctx.status = 204;
      ctx.body = '';
      return;
    }
    const marker = Number(ctx.query['part-number-marker'] ?? 0);
    const maxParts = Math.min(Number(ctx.query['max-parts'] ?? 1000), 1000);
    const entries = await fs.promises.readdir(uploadDir);
    // A part is complete once s3rver wrote its .md5 file.
    const numbers = entries
      .filter((name) => /^\d+$/.test(name) && entries.includes(`${name}.md5`))
      .map(Number)
      .filter((number) => number > marker)
      .sort((a, b) => a - b);
    const listed = numbers.slice(0, maxParts);
    const parts = await Promise.all(
      listed.map(async (number) => {
        const file = path.join(uploadDir, String(number));
        const [stat, md5] = await Promise.all([fs.promises.stat(file), fs.promises.readFile(`${file}.md5`, 'utf8')]);
        return `<Part><PartNumber>${number}</PartNumber><LastModified>${stat.mtime.toISOString()}</LastModified><ETag>"${md5.trim()}"</ETag><Size>${stat.size}</Size></Part>`;
      }),
    );
    const truncated = numbers.length > listed.length;
    ctx.status = 200;
    ctx.type = 'application/xml';
    ctx.body = xml(
      'ListPartsResult',
      `<Bucket>${escapeXml(bucket)}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${uploadId}</UploadId>` +
        `<PartNumberMarker>${marker}</PartNumberMarker><NextPartNumberMarker>${listed.at(-1) ?? marker}</NextPartNumberMarker>` +
        `<MaxParts>${maxParts}</MaxParts><IsTruncated>${truncated}</IsTruncated>${parts.join('')}`,
    );
  };
}

function xml(root: string, inner: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${inner}</${root}>`;
}

function escapeXml(text: string): string {
  return text.replace(
    /[<>&'"]/g,
    (ch) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[ch]!,
  );
}
