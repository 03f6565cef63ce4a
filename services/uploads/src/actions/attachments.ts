// Creating and deleting attachment records: the one place that writes `attachment` rows
// for uploads and sends the owner's `attachment` events.

import { JsonableError, type Requester } from '@teamchat/core';
import { transaction } from '@teamchat/db';
import {
  attachmentEvent,
  storedThumbnails,
  thumbnailPath,
  uploadSpaceUsed,
  type AttachmentDict,
} from '@teamchat/domain';
import { uploadKeys } from '@teamchat/storage';
import type { UploadsDeps } from '../deps';
import { imageFactsOfUpload } from '../lib/image-uploads';
import { checkUploadWithinQuota } from '../lib/limits';

/** What the attachment actions use of the service's dependencies. */
export type AttachmentActionDeps = Pick<UploadsDeps, 'db' | 'bus' | 'storage' | 'logger' | 'jobs'>;

export interface StoredUpload {
  pathId: string;
  /** The name the client gave the file (shown to users, used in Content-Disposition). */
  fileName: string;
  contentType: string;
  size: number;
}

/**
 * Records an upload whose bytes are already in storage (Zulip's create_attachment), after the
 * realm's quota check, and tells the owner's clients. If the quota refuses it, the caller
 * removes the bytes. An image (Zulip's maybe_thumbnail) also gets its image_attachment row, and
 * its thumbnails are asked of the worker once that commits.
 */
export async function doCreateAttachment(
  deps: AttachmentActionDeps,
  owner: Requester,
  upload: StoredUpload,
): Promise<AttachmentDict> {
  // The header is read before the transaction: it holds the realm's quota lock.
  const image = await imageFactsOfUpload(deps.storage, deps.logger, upload.pathId, upload.contentType);
  return transaction(deps.db, async (tx) => {
    await checkUploadWithinQuota(tx.db, owner.realmId, upload.size, { lock: true });
    const row = await tx.db.attachment.create({
      data: {
        realm_id: owner.realmId,
        owner_id: owner.userId,
        path_id: upload.pathId,
        file_name: upload.fileName,
        size: BigInt(upload.size),
        content_type: upload.contentType,
      },
    });
    if (image) {
      const imageRow = await tx.db.imageAttachment.create({
        data: {
          realm_id: owner.realmId,
          attachment_id: row.id,
          path_id: upload.pathId,
          original_width_px: image.width,
          original_height_px: image.height,
          frames: image.frames,
          content_type: upload.contentType,
        },
      });
      tx.onCommit(() => deps.jobs.enqueueThumbnail({ realmId: owner.realmId, imageAttachmentId: imageRow.id }));
    }
    const dict: AttachmentDict = {
      id: row.id,
      name: row.file_name,
      path_id: row.path_id,
      size: upload.size,
      create_time: row.create_time.getTime(),
      messages: [],
    };
    const used = await uploadSpaceUsed(tx.db, owner.realmId);
    await deps.bus.sendEventOnCommit(tx, owner.realmId, attachmentEvent('add', dict, used), [owner.userId]);
    return dict;
  });
}

export const INVALID_ATTACHMENT = 'Invalid attachment';

/**
 * Deletes one of the requester's uploads: its record, its links from messages, and its bytes
 * (Zulip's do_delete_attachment). The bytes go before the commit: if storage fails, nothing
 * changes and the client may retry.
 */
export async function doDeleteAttachment(
  deps: AttachmentActionDeps,
  requester: Requester,
  attachmentId: number,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    // Its thumbnails' keys: the image_attachment row goes with it (cascade).
    const [deleted] = await tx.db.$queryRaw<{ path_id: string; thumbnails: unknown }[]>`
      DELETE FROM attachment WHERE id = ${attachmentId} AND owner_id = ${requester.userId}
      RETURNING path_id, (SELECT thumbnail_metadata FROM image_attachment WHERE attachment_id = attachment.id) AS thumbnails`;
    if (!deleted) throw new JsonableError(INVALID_ATTACHMENT);
    const used = await uploadSpaceUsed(tx.db, requester.realmId);
    await deps.bus.sendEventOnCommit(tx, requester.realmId, attachmentEvent('remove', { id: attachmentId }, used), [
      requester.userId,
    ]);
    try {
      await deps.storage.delete([
        ...uploadKeys(deps.storage, deleted.path_id),
        ...storedThumbnails({ thumbnail_metadata: deleted.thumbnails }).map((made) =>
          thumbnailPath(deleted.path_id, made),
        ),
      ]);
    } catch (error) {
      deps.logger.error({ err: error, path_id: deleted.path_id }, 'deleting an upload from storage failed');
      throw new JsonableError('An error occurred while deleting the attachment. Please try again later.');
    }
  });
}
