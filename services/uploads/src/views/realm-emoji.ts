// POST /realm/emoji/{emoji_name} (the image in a multipart body, whatever its field's name),
// DELETE /realm/emoji/{emoji_name}, and the images at /user_avatars/{realm_id}/emoji/images/...
// (Zulip serves that directory without credentials; so do we).

import type { Request } from 'express';
import { JsonableError, RESPONDED, ResourceNotFoundError, type AuthedContext, type ViewResult } from '@teamchat/core';
import { isGuest, loadActor, PUBLIC_FILES_PREFIX } from '@teamchat/domain';
import { assertValidKey } from '@teamchat/storage';
import { receiveUploadedFiles } from '@teamchat/images';
import { doAddRealmEmoji, doDeactivateRealmEmoji } from '../actions/realm-emoji';
import type { UploadsDeps } from '../deps';
import { sendFileBody } from '../lib/files';
import { UPLOADS_CSP } from './serve-file';

/** The emoji name in the path: it may hold slashes (which make it invalid, as in Zulip). */
function emojiNameOf(req: Request): string {
  const raw = req.params.emoji_name as unknown;
  return Array.isArray(raw) ? raw.join('/') : String(raw ?? '');
}

/** Zulip's @require_member_or_admin. */
function requireMemberOrAdmin(user: { role: number; is_bot: boolean }): void {
  if (isGuest(user.role)) throw new JsonableError('Not allowed for guest users');
  if (user.is_bot) throw new JsonableError('This endpoint does not accept bot requests.');
}

/** POST /realm/emoji/{emoji_name} */
export async function uploadRealmEmoji(ctx: AuthedContext<UploadsDeps>) {
  const { deps, requester, req, res } = ctx;
  const actor = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor.user);
  const maxMiB = deps.config.maxEmojiFileSizeMiB;
  const maxBytes = maxMiB * 1024 * 1024;
  const upload = await receiveUploadedFiles(req, res, maxBytes);
  await doAddRealmEmoji(deps, actor, emojiNameOf(req), upload, { maxBytes, maxMiB });
  return {};
}

/** DELETE /realm/emoji/{emoji_name} */
export async function deactivateRealmEmoji(ctx: AuthedContext<UploadsDeps>) {
  const actor = await loadActor(ctx.deps.db, ctx.requester.userId);
  await doDeactivateRealmEmoji(ctx.deps, actor, emojiNameOf(ctx.req));
  return {};
}

const PUBLIC_FILE_TYPES: Record<string, string> = {
  png: 'image/png',
  gif: 'image/gif',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gz: 'application/gzip',
  jsonl: 'application/x-ndjson',
};

/**
 * GET /user_avatars/{...}: files the organisation publishes by unguessable path (custom emoji
 * images, export archives), straight from storage.
 */
export async function servePublicFile(ctx: AuthedContext<UploadsDeps>): Promise<ViewResult> {
  const { deps, req, res } = ctx;
  let key: string;
  try {
    key = decodeURIComponent(req.path.slice(1));
    assertValidKey(key);
  } catch {
    throw new ResourceNotFoundError('File not found');
  }
  if (!key.startsWith(`${PUBLIC_FILES_PREFIX}/`)) throw new ResourceNotFoundError('File not found');
  const head = await deps.storage.head(key);
  const body = head && req.method !== 'HEAD' ? await deps.storage.get(key) : null;
  if (!head || (req.method !== 'HEAD' && !body)) throw new ResourceNotFoundError('File not found');
  const extension = key.split('.').at(-1)?.toLowerCase() ?? '';
  res.status(200);
  res.setHeader('Content-Type', PUBLIC_FILE_TYPES[extension] ?? 'application/octet-stream');
  res.setHeader('Content-Length', String(head.size));
  res.setHeader('Cache-Control', 'public, max-age=86400, immutable');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', UPLOADS_CSP);
  await sendFileBody(res, body, ctx.log, { key });
  return RESPONDED;
}
