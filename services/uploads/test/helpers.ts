// Shared by the uploads tests: a stack with the uploads service on local disk or on S3
// (s3rver), request bodies shaped exactly as real clients send them, and readers of what the
// service left behind (bytes in storage; committed events are read with captureEvents).

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JOB_QUEUES } from '@teamchat/bus';
import { createStorage, loadStorageConfig, type ObjectStorage } from '@teamchat/storage';
import { startS3TestServer, type S3TestServer } from '@teamchat/storage/test/s3-test-server';
import { startStack, type ServiceName, type Stack, type TestUser } from '@teamchat/stack';

export type StoreKind = 'local' | 's3';
export const STORE_KINDS: StoreKind[] = ['local', 's3'];

export interface UploadsStack {
  stack: Stack;
  /** The same storage the service writes to, for checking what is stored. */
  storage: ObjectStorage;
  /** The UPLOADS_* environment the services were given. */
  env: Record<string, string>;
  s3?: S3TestServer;
  localDir?: string;
  close(): Promise<void>;
}

export async function startUploadsStack(
  kind: StoreKind,
  options: {
    env?: Record<string, string>;
    services?: ServiceName[];
    /** Also put the storage settings in process.env, where the worker's clean-up job reads them. */
    exportEnv?: boolean;
  } = {},
): Promise<UploadsStack> {
  let s3: S3TestServer | undefined;
  let localDir: string | undefined;
  let storageEnv: Record<string, string>;
  if (kind === 's3') {
    s3 = await startS3TestServer();
    storageEnv = s3.env;
  } else {
    localDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-uploads-'));
    storageEnv = { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: localDir };
  }
  const env = { ...storageEnv, ...options.env };
  const savedEnv = new Map<string, string | undefined>();
  if (options.exportEnv) {
    for (const [name, value] of Object.entries(env)) {
      savedEnv.set(name, process.env[name]);
      process.env[name] = value;
    }
  }
  const stack = await startStack({ services: ['uploads', ...(options.services ?? [])], env });
  const storage = createStorage(loadStorageConfig(env));
  return {
    stack,
    storage,
    env,
    s3,
    localDir,
    async close() {
      // The clean-up schedule the service registered lives in Redis under this file's prefix.
      await stack.deps.jobs.queue(JOB_QUEUES.uploadsCleanup).obliterate({ force: true });
      await stack.close();
      await storage.close();
      await s3?.close();
      if (localDir) await fs.promises.rm(localDir, { recursive: true, force: true });
      for (const [name, value] of savedEnv) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}

export interface FilePart {
  /** python-zulip-api names the field after the file's path (f.name). */
  field: string;
  filename: string;
  content: Buffer | string;
  /** python-zulip-api (requests) sends no Content-Type for the part. */
  contentType?: string;
}

/** A multipart/form-data body exactly as requests (python-zulip-api) encodes it. */
export function multipartBody(
  parts: FilePart[],
  textFields: Record<string, string> = {},
): { body: Buffer; contentType: string } {
  const boundary = crypto.randomBytes(16).toString('hex');
  const quote = (value: string) => value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const chunks: Buffer[] = [];
  for (const [name, value] of Object.entries(textFields)) {
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`),
    );
  }
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${quote(part.field)}"; filename="${quote(part.filename)}"\r\n`;
    if (part.contentType) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(part.content), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** python-zulip-api's client.upload_file(open(path, 'rb')). */
export function uploadLikePythonZulipApi(user: TestUser, filePath: string, content: Buffer | string) {
  const { body, contentType } = multipartBody([{ field: filePath, filename: path.basename(filePath), content }]);
  return user.client.post('/api/v1/user_uploads', {}, { body, headers: { 'content-type': contentType } });
}

export function sha256(data: Buffer | string): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

export function basicAuth(user: TestUser): string {
  return `Basic ${Buffer.from(`${user.deliveryEmail}:${user.apiKey}`).toString('base64')}`;
}

/** Every file under a directory, relative to it (what local storage holds). */
export function filesUnder(directory: string): string[] {
  if (!fs.existsSync(directory)) return [];
  return fs
    .readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** Whatever the store holds: object files (local) or objects and pending multipart parts (s3rver). */
export function storedFiles(uploads: UploadsStack): string[] {
  if (uploads.localDir) return filesUnder(uploads.localDir);
  const bucketDir = path.join(uploads.s3!.directory, uploads.s3!.bucket);
  return filesUnder(bucketDir).filter((name) => !name.endsWith('metadata.json') && !name.endsWith('.md5'));
}

/** A message linking uploads, written straight to the database (the messages service's job). */
export async function linkFromMessage(
  stack: Stack,
  input: { senderId: number; attachmentIds: number[]; streamId?: number; recipients?: number[] },
): Promise<number> {
  const message = await stack.db.message.create({
    data: {
      realm_id: stack.realm.id,
      sender_id: input.senderId,
      stream_id: input.streamId ?? null,
      topic: input.streamId ? 'files' : '',
      dm_key: input.streamId
        ? null
        : [...new Set([input.senderId, ...(input.recipients ?? [])])].sort((a, b) => a - b).join(','),
      content: 'see the file',
      has_attachment: true,
    },
  });
  const receivers = [...new Set([input.senderId, ...(input.recipients ?? [])])];
  await stack.db.userMessage.createMany({
    data: receivers.map((userId) => ({ user_profile_id: userId, message_id: message.id })),
  });
  await stack.db.attachmentMessage.createMany({
    data: input.attachmentIds.map((id) => ({ attachment_id: id, message_id: message.id })),
  });
  return message.id;
}
