// GET /api/v1/attachments and DELETE /api/v1/attachments/{attachment_id}.
import { pathInt, type AuthedContext } from '@teamchat/core';
import { attachmentDicts, uploadSpaceUsed } from '@teamchat/domain';
import { doDeleteAttachment } from '../actions/attachments';
import type { UploadsDeps } from '../deps';

/** The requester's uploads, with the messages linking each, and the realm's space used. */
export async function listAttachments(ctx: AuthedContext<UploadsDeps>) {
  const { db } = ctx.deps;
  const [attachments, used] = await Promise.all([
    attachmentDicts(db, { ownerId: ctx.requester.userId }),
    uploadSpaceUsed(db, ctx.requester.realmId),
  ]);
  return { attachments, upload_space_used: used };
}

export async function deleteAttachment(ctx: AuthedContext<UploadsDeps>) {
  const attachmentId = pathInt(ctx.req, 'attachment_id');
  await doDeleteAttachment(ctx.deps, ctx.requester, attachmentId);
  return {};
}
