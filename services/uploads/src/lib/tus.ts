// Resumable uploads (tus) at /api/v1/tus with @tus/server, in this process, doing what Zulip's
// tusd hooks do (zerver/views/tusd.py): creating an upload checks the size limit and the
// realm's quota and picks the upload's path id, so the bytes land where the attachment will
// point; finishing records the attachment exactly as a multipart upload does; terminating is
// refused once the attachment exists. Uploads belong to the user who created them.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { JOB_QUEUES } from '@teamchat/bus';
import { JsonableError, type Requester } from '@teamchat/core';
import { s3ClientConfig, uploadKeys } from '@teamchat/storage';
import { FileStore } from '@tus/file-store';
import type { MetadataValue } from '@tus/s3-store';
import { Server, type ServerOptions } from '@tus/server';
import { ERRORS, type DataStore, type Locker, type Upload } from '@tus/utils';
import { doCreateAttachment } from '../actions/attachments';
import type { UploadsDeps } from '../deps';
import { boundedFileName, FILENAME_WITH_NUL, newPathId, sanitizeName, storedContentType, uploadUrl } from './files';
import { checkUploadWithinQuota, fileTooLargeMessage, RealmUploadQuotaError } from './limits';
import { BufferedPartsS3Store } from './s3-tus-store';
import { ExpiringRedisKvStore } from './tus-redis';

export const TUS_PATH = '/api/v1/tus';

/** The srvx request tus hands its hooks; its Node request is the one the view saw. */
type TusRequest = Parameters<NonNullable<ServerOptions['onIncomingRequest']>>[0];

/** Whose request a tus hook is running for (set by the view before tus handles it). */
const requesters = new WeakMap<IncomingMessage, Requester>();

export function setTusRequester(req: IncomingMessage, requester: Requester): void {
  requesters.set(req, requester);
}

function requesterOf(req: TusRequest): Requester {
  const node = (req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  const requester = node && requesters.get(node);
  if (!requester) throw { status_code: 401, body: 'Unauthenticated upload\n' };
  return requester;
}

/**
 * The request body as a web stream, chunk for chunk: Node's Readable.toWeb (what tus's own
 * handle() uses, through srvx) copies every chunk, 100 MiB more to allocate and collect per
 * 100 MiB uploaded. Back-pressure: the request pauses while the stream's queue is full.
 * `discardRest` lets whatever tus did not read flow away, so the connection can carry the
 * next request.
 */
function webBody(req: IncomingMessage): { stream: ReadableStream<Uint8Array>; discardRest(): void } {
  let open = true;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const fail = (error: Error) => {
          if (!open) return;
          open = false;
          controller.error(error);
        };
        req.on('data', (chunk: Buffer) => {
          if (!open) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.once('end', () => {
          if (!open) return;
          open = false;
          controller.close();
        });
        req.once('error', fail);
        // A client that goes away mid-body: the stream fails, as tus expects of a cut request.
        req.once('close', () => {
          if (!req.complete) fail(new Error('request aborted'));
        });
      },
      pull() {
        req.resume();
      },
      cancel() {
        open = false;
        req.resume();
      },
    },
    { highWaterMark: 16 },
  );
  return {
    stream,
    discardRest() {
      open = false;
      req.resume();
    },
  };
}

/**
 * Hands one request to tus (what its handle() does, with webBody) and writes its answer. The
 * request carries its Node request and response as srvx's do, for tus and for requesterOf.
 */
export async function handleTusRequest(
  server: Server,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  const body = req.method === 'POST' || req.method === 'PATCH' ? webBody(req) : null;
  const request = {
    method: req.method,
    url: `http://${req.headers.host ?? 'uploads'}${req.originalUrl ?? req.url}`,
    headers,
    body: body?.stream ?? null,
    runtime: { name: 'node', node: { req, res } },
  };
  try {
    const response = await server.handleWeb(request as unknown as Request);
    res.statusCode = response.status;
    response.headers.forEach((value, name) => {
      // tus answers a PATCH it refuses mid-body (a wrong offset, say) with "Connection: close".
      // Closing while that body still arrives resets the connection, and the gateway in front
      // can see the reset before the answer (a 503 instead of the 409). The rest of the body is
      // drained instead (discardRest below), which keeps the connection usable.
      if (name === 'connection' && !req.destroyed) return;
      res.setHeader(name, value);
    });
    if (response.body && req.method !== 'HEAD')
      await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), res);
    else res.end();
  } finally {
    body?.discardRest();
  }
}

/** tus's answer to a refused request: a status and a JSON {message} body, as Zulip's tusd hooks give. */
function reject(statusCode: number, message: string): { status_code: number; body: string } {
  return { status_code: statusCode, body: JSON.stringify({ message }) };
}

const TERMINATION_REJECTED = { status_code: 400, body: 'upload termination has been rejected by server\n' };

/**
 * Upload ids are path ids ("{realm_id}/{random}/{name}"), base64url-encoded in URLs because
 * they contain slashes. Anything that does not decode to a well-formed path id is no upload.
 */
const TUS_PATH_ID = /^\d+\/[A-Za-z0-9_-]{24}\/(?!\.\.?$)[A-Za-z0-9_.-]+$/;

function encodeUploadId(pathId: string): string {
  return Buffer.from(pathId, 'utf8').toString('base64url');
}

function decodeUploadId(encoded: string | undefined): string | undefined {
  if (!encoded || !/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined;
  const pathId = Buffer.from(encoded, 'base64url').toString('utf8');
  return TUS_PATH_ID.test(pathId) ? pathId : undefined;
}

/**
 * The tus data stores, refusing to terminate an upload once it is an attachment, and removing
 * on termination what the store itself leaves (`leftovers`).
 */
function guardTermination<S extends DataStore>(
  store: S,
  attachmentExists: (pathId: string) => Promise<boolean>,
  leftovers: (pathId: string) => Promise<void> = async () => {},
): S {
  const remove = store.remove.bind(store);
  // Runs under the upload's lock, which the finish hook holds while it records the attachment.
  store.remove = async (id: string) => {
    if (await attachmentExists(id)) throw TERMINATION_REJECTED;
    await remove(id);
    await leftovers(id);
  };
  return store;
}

/** tus's data store, and how to forget an upload entirely: its bytes, its tus metadata, leftovers. */
interface TusStorage {
  datastore: DataStore;
  forget(pathId: string): Promise<void>;
}

function createTusStorage(deps: Omit<UploadsDeps, 'tus'>): TusStorage {
  const attachmentExists = async (pathId: string) =>
    (await deps.db.attachment.count({ where: { path_id: pathId } })) > 0;
  const { storage } = deps.config;
  if (storage.kind === 'local') {
    // Writes "<dir>/<path id>" and "<dir>/<path id>.json" (see uploadKeys).
    return {
      datastore: guardTermination(new FileStore({ directory: storage.directory }), attachmentExists),
      forget: (pathId) => deps.storage.delete(uploadKeys(deps.storage, pathId)),
    };
  }
  // Writes "<path id>" and "<path id>.info" in the bucket (see uploadKeys), and caches the
  // metadata in Redis: a forgotten upload must leave the cache too, or tus still knows it.
  const cacheKeys = tusMetadataCacheKey(deps.bus.keys, '');
  const cache = new ExpiringRedisKvStore<MetadataValue>(deps.redis, cacheKeys, 7 * 24 * 3600);
  // The S3 store keeps a not yet part-sized tail as "<path id>.part" and does not remove it.
  const leftovers = (pathId: string) => deps.storage.delete([`${pathId}.part`]);
  return {
    datastore: guardTermination(
      new BufferedPartsS3Store({
        partSize: 8 * 1024 * 1024,
        cache,
        s3ClientConfig: { ...s3ClientConfig(storage), bucket: storage.bucket },
      }),
      attachmentExists,
      leftovers,
    ),
    forget: async (pathId) => {
      await deps.storage.delete([...uploadKeys(deps.storage, pathId), `${pathId}.part`]);
      await cache.delete(pathId);
    },
  };
}

/** The Redis key of an upload's cached tus metadata (S3 store); the worker's expiry removes it too. */
export function tusMetadataCacheKey(keys: { custom(...parts: string[]): string }, pathId: string): string {
  return keys.custom('uploads', 'tus-meta', '') + pathId;
}

/**
 * Unfinished uploads expire: each creation enqueues the worker's uploads-cleanup job for that
 * upload, delayed by UPLOADS_TUS_EXPIRE_AFTER_MS; it removes the bytes and tus metadata unless
 * the upload became an attachment. (S3 multipart parts of an abandoned upload: the bucket's
 * AbortIncompleteMultipartUpload lifecycle rule, docs/operations.md.)
 */
async function scheduleExpiry(deps: Omit<UploadsDeps, 'tus'>, pathId: string): Promise<void> {
  await deps.jobs.queue(JOB_QUEUES.uploadsCleanup).add(
    'expire-unfinished-upload',
    { unfinishedUpload: pathId },
    {
      delay: deps.config.env.UPLOADS_TUS_EXPIRE_AFTER_MS,
      jobId: `tus-expiry-${encodeUploadId(pathId)}`,
      removeOnComplete: true,
      removeOnFail: 100,
      attempts: 3,
      backoff: { type: 'exponential', delay: 1000 },
    },
  );
}

export function createTusServer(deps: Omit<UploadsDeps, 'tus'>, locker: Locker): Server {
  const maxBytes = deps.config.maxFileSizeBytes;
  const { datastore, forget } = createTusStorage(deps);

  async function assertOwnUpload(req: TusRequest, pathId: string): Promise<void> {
    const requester = requesterOf(req);
    if (!pathId.startsWith(`${requester.realmId}/`)) throw ERRORS.FILE_NOT_FOUND;
    const upload = await datastore.getUpload(pathId);
    if (upload.metadata?.user_id !== String(requester.userId)) throw ERRORS.FILE_NOT_FOUND;
  }

  /** Records the finished upload; repeating the final request answers the same. */
  async function finishUpload(req: TusRequest, upload: Upload): Promise<{ url: string; filename: string }> {
    const requester = requesterOf(req);
    const pathId = upload.id;
    const requested = upload.metadata?.filename ?? '';
    const fileName = boundedFileName(
      requested === '' || requested === '.' || requested === '..' ? 'uploaded-file' : requested,
    );
    const contentType = storedContentType(upload.metadata?.filetype ?? undefined, fileName);
    // Under the upload's lock: a termination cannot remove the bytes while they are recorded,
    // and a repeated final request finds the attachment the first one made.
    const lock = locker.newLock(pathId);
    await lock.lock(AbortSignal.timeout(30_000), () => {});
    try {
      const existing = await deps.db.attachment.findUnique({ where: { path_id: pathId }, select: { file_name: true } });
      if (existing) return { url: uploadUrl(pathId), filename: existing.file_name };
      await doCreateAttachment(deps, requester, { pathId, fileName, contentType, size: upload.size ?? upload.offset });
    } catch (error) {
      // Not recorded (over quota, or any failure): the bytes would sit outside every quota,
      // with nothing to clean them up. The client starts over.
      await forget(pathId);
      if (error instanceof RealmUploadQuotaError) throw reject(413, error.message);
      throw error;
    } finally {
      await lock.unlock();
    }
    return { url: uploadUrl(pathId), filename: fileName };
  }

  return new Server({
    path: TUS_PATH,
    datastore,
    locker,
    // Clients reach /api/v1/tus on the realm's own origin; no cross-origin access is offered.
    allowedOrigins: [],
    generateUrl: (_req, { path, id }) => `${path}/${encodeUploadId(id)}`,
    getFileIdFromRequest: (_req, lastPath) => decodeUploadId(lastPath),
    namingFunction: (req, metadata) =>
      newPathId(requesterOf(req).realmId, sanitizeName(metadata?.filename ?? '', { strict: true })),
    onIncomingRequest: async (req, pathId) => {
      if (req.method !== 'POST') await assertOwnUpload(req, pathId);
    },
    onUploadCreate: async (req, upload) => {
      const requester = requesterOf(req);
      if (upload.sizeIsDeferred || upload.size === undefined) throw reject(411, 'SizeIsDeferred is not supported');
      if (upload.size > maxBytes) throw reject(413, fileTooLargeMessage(maxBytes));
      // Refused before any byte arrives: such a name could never be recorded.
      if (upload.metadata?.filename?.includes('\u0000')) throw reject(400, FILENAME_WITH_NUL);
      try {
        await checkUploadWithinQuota(deps.db, requester.realmId, upload.size);
      } catch (error) {
        if (error instanceof JsonableError) throw reject(413, error.message);
        throw error;
      }
      await scheduleExpiry(deps, upload.id);
      return { metadata: { ...upload.metadata, user_id: String(requester.userId) } };
    },
    // An unexpected failure (a store's error, whose text names server paths) is logged, and the
    // client gets tus's generic answer without it.
    onResponseError: (_req, error) => {
      if ('status_code' in error) return undefined;
      deps.logger.error({ err: error }, 'tus request failed');
      return { status_code: ERRORS.UNKNOWN_ERROR.status_code, body: ERRORS.UNKNOWN_ERROR.body };
    },
    onUploadFinish: async (req, upload) => {
      const body = JSON.stringify(await finishUpload(req, upload));
      // A PATCH may answer 200 with a body (as Zulip's tusd does); a creation must stay 201 with its Location.
      return {
        status_code: req.method === 'PATCH' ? 200 : undefined,
        headers: { 'Content-Type': 'application/json' },
        body,
      };
    },
  });
}
