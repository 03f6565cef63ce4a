// GET /user_uploads/{realm_id}/{...} and /user_uploads/download/{realm_id}/{...}: the file, to
// its owner and to everyone who can read a message linking it (Zulip's serve_file). Streamed
// from storage, with Zulip's Content-Type and Content-Disposition, and byte ranges.

import { pipeline } from 'node:stream/promises';
import parseRange from 'range-parser';
import { JsonableError, RESPONDED, type AuthedContext, type ViewResult } from '@teamchat/core';
import { canAccessAttachment } from '@teamchat/domain';
import type { ByteRange } from '@teamchat/storage';
import type { UploadsDeps } from '../deps';
import { contentDisposition, guessContentType, isInlineContentType } from '../lib/files';

const FILE_NOT_FOUND = 'This file does not exist or has been deleted.';
const NOT_AUTHORIZED = 'You are not authorized to view this file.';

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
    if (segments.length < 2 || !/^\d+$/.test(segments[0]) || segments.some((segment) => segment === '')) return null;
    return segments.join('/');
  } catch {
    return null;
  }
}

async function serveFile(ctx: AuthedContext<UploadsDeps>, forceDownload: boolean): Promise<ViewResult> {
  const { deps, req, res, requester } = ctx;
  const pathId = pathIdOf(req.path, forceDownload ? '/user_uploads/download/' : '/user_uploads/');
  if (pathId === null) throw new FileNotFoundError();
  const attachment = await deps.db.attachment.findFirst({ where: { path_id: pathId, realm_id: requester.realmId } });
  if (!attachment) throw new FileNotFoundError();
  const viewer = { id: requester.userId, realm_id: requester.realmId, role: requester.role };
  if (!(await canAccessAttachment(deps.db, viewer, attachment))) throw new JsonableError(NOT_AUTHORIZED, { status: 403 });

  const size = Number(attachment.size);
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
  const body = req.method === 'HEAD' || length === 0 ? null : await deps.storage.get(attachment.path_id, range);
  if (length > 0 && req.method !== 'HEAD' && !body) {
    ctx.log.error({ path_id: attachment.path_id }, 'attachment without bytes in storage');
    throw new FileNotFoundError();
  }

  const contentType = attachment.content_type || guessContentType(attachment.file_name) || 'application/octet-stream';
  const asAttachment = forceDownload || !isInlineContentType(contentType);
  res.status(range ? 206 : 200);
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Disposition', contentDisposition(asAttachment, attachment.file_name));
  res.setHeader('Content-Length', String(length));
  if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', 'private, immutable');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (!body) {
    res.end();
    return RESPONDED;
  }
  try {
    await pipeline(body, res);
  } catch (error) {
    // The client went away, or storage failed mid-stream: nothing more can be said on this response.
    ctx.log.warn({ err: error, path_id: attachment.path_id }, 'file download cut short');
    res.destroy();
  }
  return RESPONDED;
}

export const serveUpload = (ctx: AuthedContext<UploadsDeps>) => serveFile(ctx, false);
export const downloadUpload = (ctx: AuthedContext<UploadsDeps>) => serveFile(ctx, true);
