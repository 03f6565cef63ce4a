// GET /user_uploads/{realm_id}/{...} and /user_uploads/download/{realm_id}/{...}: the file, to
// its owner and to everyone who can read a message linking it (Zulip's serve_file). Streamed
// from storage, with Zulip's Content-Type and Content-Disposition, and byte ranges.
// GET /api/v1/user_uploads/{realm_id}/{...} answers a temporary URL of the file instead, which
// GET /user_uploads/temporary/{token}/{file name} serves to anyone for a minute.

import parseRange from 'range-parser';
import { JsonableError, RESPONDED, type AuthedContext, type ViewResult } from '@teamchat/core';
import {
  canAccessAttachment,
  parseThumbnailFormat,
  sameThumbnailFormat,
  storedThumbnails,
  THUMBNAIL_OUTPUT_FORMATS,
  thumbnailFormatName,
  thumbnailPath,
  type StoredThumbnail,
  type ThumbnailFormat,
} from '@teamchat/domain';
import type { Attachment } from '@teamchat/db';
import type { ByteRange } from '@teamchat/storage';
import { doEnsureThumbnails } from '../actions/thumbnails';
import type { UploadsDeps } from '../deps';
import { contentDisposition, isInlineContentType, sendFileBody, servedContentType } from '../lib/files';
import { TEMPORARY_URL_PREFIX, temporaryFileUrl, uploadOfTemporaryToken } from '../lib/temporary-urls';

const FILE_NOT_FOUND = 'This file does not exist or has been deleted.';
const NOT_AUTHORIZED = 'You are not authorized to view this file.';

/**
 * Zulip's policy for served uploads (its nginx sends it): a file opened from our origin may
 * load nothing and run nothing, whatever a browser makes of it; PDFs still show in the viewer.
 */
export const UPLOADS_CSP = [
  "default-src 'none'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self'",
  "object-src 'self'",
  'plugin-types application/pdf;',
].join('; ');

class FileNotFoundError extends JsonableError {
  constructor() {
    super(FILE_NOT_FOUND, { status: 404 });
  }
}

/** "{realm_id}/{...}" from the URL path after `prefix`, percent-escapes decoded; null if malformed. */
function pathIdOf(urlPath: string, prefix: string): string | null {
  if (!urlPath.startsWith(prefix)) return null;
  try {
    const segments = urlPath.slice(prefix.length).split('/').map(decodeURIComponent);
    if (segments.length < 2 || !/^\d+$/.test(segments[0])) return null;
    // No path id has an empty segment or a NUL (which PostgreSQL could not even compare).
    if (segments.some((segment) => segment === '' || segment.includes('\u0000'))) return null;
    return segments.join('/');
  } catch {
    return null;
  }
}

/** The upload at the URL path after `prefix`, if the requester may read it (404 / 403 otherwise). */
async function accessibleUpload(
  { deps, req, requester }: AuthedContext<UploadsDeps>,
  prefix: string,
  urlPath = req.path,
): Promise<Attachment> {
  const pathId = pathIdOf(urlPath, prefix);
  if (pathId === null) throw new FileNotFoundError();
  const attachment = await deps.db.attachment.findFirst({ where: { path_id: pathId, realm_id: requester.realmId } });
  if (!attachment) throw new FileNotFoundError();
  const viewer = { id: requester.userId, realm_id: requester.realmId, role: requester.role };
  if (!(await canAccessAttachment(deps.db, viewer, attachment)))
    throw new JsonableError(NOT_AUTHORIZED, { status: 403 });
  return attachment;
}

/** What is served: the upload itself, or one of its thumbnails (its own key, name, type and size). */
interface ServedObject {
  key: string;
  fileName: string;
  contentType: string | null;
  size: number;
}

async function serveFile(
  ctx: AuthedContext<UploadsDeps>,
  attachment: Attachment,
  forceDownload: boolean,
  served: ServedObject = {
    key: attachment.path_id,
    fileName: attachment.file_name,
    contentType: attachment.content_type,
    size: Number(attachment.size),
  },
): Promise<ViewResult> {
  const { deps, req, res } = ctx;

  const size = served.size;
  let range: ByteRange | undefined;
  const rangeHeader = req.headers.range;
  if (rangeHeader && size > 0) {
    const ranges = parseRange(size, rangeHeader, { combine: true });
    if (ranges === -1) {
      res.setHeader('Content-Range', `bytes */${size}`);
      res.status(416).end();
      return RESPONDED;
    }
    // A malformed header is ignored; several ranges are answered with the whole file.
    if (ranges !== -2 && ranges.type === 'bytes' && ranges.length === 1) range = ranges[0];
  }
  const length = range ? range.end - range.start + 1 : size;
  const body = req.method === 'HEAD' || length === 0 ? null : await deps.storage.get(served.key, range);
  if (length > 0 && req.method !== 'HEAD' && !body) {
    ctx.log.error({ key: served.key }, 'attachment without bytes in storage');
    throw new FileNotFoundError();
  }

  const contentType = servedContentType(served.contentType, served.fileName);
  const asAttachment = forceDownload || !isInlineContentType(contentType);
  res.status(range ? 206 : 200);
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Disposition', contentDisposition(asAttachment, served.fileName));
  res.setHeader('Content-Length', String(length));
  if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', 'private, immutable');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', UPLOADS_CSP);
  await sendFileBody(res, body, ctx.log, { path_id: served.key });
  return RESPONDED;
}

export const serveUpload = async (ctx: AuthedContext<UploadsDeps>) =>
  serveFile(ctx, await accessibleUpload(ctx, '/user_uploads/'), false);
export const downloadUpload = async (ctx: AuthedContext<UploadsDeps>) =>
  serveFile(ctx, await accessibleUpload(ctx, '/user_uploads/download/'), true);

const THUMBNAIL_PREFIX = '/user_uploads/thumbnail/';

/**
 * Zulip's closest_thumbnail_format, for a format no longer made: the made one that moves as
 * asked, then of the asked extension, then nearest in width, then smallest.
 */
function closestThumbnail(requested: ThumbnailFormat, made: StoredThumbnail[]): StoredThumbnail {
  const grade = (format: StoredThumbnail) => [
    Number(format.animated !== requested.animated),
    Number(format.extension !== requested.extension),
    Math.abs(requested.maxWidth - format.max_width),
    format.byte_size,
  ];
  return [...made].sort((a, b) => {
    const [ga, gb] = [grade(a), grade(b)];
    const index = ga.findIndex((value, i) => value !== gb[i]);
    return index === -1 ? 0 : ga[index] - gb[index];
  })[0];
}

/**
 * GET /user_uploads/thumbnail/{realm_id}/{...}/{format} (Zulip's serve_file with a thumbnail
 * format): to whoever may read the upload, its thumbnail in that format. A format of
 * THUMBNAIL_OUTPUT_FORMATS not made yet is made now (waiting for the worker's lock if it is at
 * it); one made earlier is served; another gets the closest made one; anything else is a 404.
 */
export async function serveThumbnail(ctx: AuthedContext<UploadsDeps>) {
  const urlPath = ctx.req.path;
  const slash = urlPath.lastIndexOf('/');
  const formatName = safeDecode(urlPath.slice(slash + 1));
  const attachment = await accessibleUpload(ctx, THUMBNAIL_PREFIX, urlPath.slice(0, slash));
  let image = await ctx.deps.db.imageAttachment.findUnique({ where: { path_id: attachment.path_id } });
  let requested = formatName === null ? null : parseThumbnailFormat(formatName);
  if (!image || !requested) throw new FileNotFoundError();
  const potential = THUMBNAIL_OUTPUT_FORMATS.filter((format) => image!.frames > 1 || !format.animated);
  let made = storedThumbnails(image);
  if (!potential.some((format) => sameThumbnailFormat(format, requested!))) {
    if (made.length === 0) throw new FileNotFoundError();
    if (!made.some((format) => sameThumbnailFormat(format, requested!))) {
      const closest = closestThumbnail(requested, made);
      requested = parseThumbnailFormat(thumbnailFormatName(closest))!;
    }
  } else if (!made.some((format) => sameThumbnailFormat(format, requested!))) {
    await doEnsureThumbnails(ctx.deps, image.id);
    image = await ctx.deps.db.imageAttachment.findUnique({ where: { id: image.id } });
    made = image ? storedThumbnails(image) : [];
  }
  const thumbnail = made.find((format) => sameThumbnailFormat(format, requested!));
  if (!thumbnail) throw new FileNotFoundError();
  return serveFile(ctx, attachment, false, {
    key: thumbnailPath(attachment.path_id, thumbnail),
    fileName: thumbnailFormatName(thumbnail),
    contentType: thumbnail.content_type,
    size: thumbnail.byte_size,
  });
}

/** GET /api/v1/user_uploads/{realm_id}/{...} (Zulip's serve_file_url_backend): a temporary URL of the file. */
export async function getTemporaryFileUrl(ctx: AuthedContext<UploadsDeps>) {
  const attachment = await accessibleUpload(ctx, '/api/v1/user_uploads/');
  return { url: temporaryFileUrl(ctx.deps.env.INTERNAL_JWT_SECRET, attachment.realm_id, attachment.path_id) };
}

/**
 * GET /user_uploads/temporary/{token}/{file name} (Zulip's serve_file_unauthed_from_token): no
 * credentials, the token is the permission; a bad or expired one, or another file's name, is
 * Zulip's "Invalid filename".
 */
export async function serveTemporaryFile(ctx: AuthedContext<UploadsDeps>) {
  const [token, fileName, ...rest] = ctx.req.path.slice(TEMPORARY_URL_PREFIX.length).split('/');
  const upload =
    rest.length === 0 && token && fileName ? uploadOfTemporaryToken(ctx.deps.env.INTERNAL_JWT_SECRET, token) : null;
  if (!upload || safeDecode(fileName) !== upload.pathId.split('/').at(-1)) throw new JsonableError('Invalid filename');
  const attachment = await ctx.deps.db.attachment.findFirst({
    where: { path_id: upload.pathId, realm_id: upload.realmId },
  });
  if (!attachment) throw new FileNotFoundError();
  return serveFile(ctx, attachment, false);
}

function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}
