// Making an image upload's thumbnails and showing them in the messages that link it (Zulip's
// ensure_thumbnails and update_message_rendered_content, zerver/worker/thumbnail.py): run by the
// worker's thumbnail job, and by the uploads service when a thumbnail URL is asked for before
// the job got to it. The image_attachment row is locked meanwhile, so the two never make the
// same thumbnail twice, and a send that links the image waits for the lock (loadUploadPreviews
// with `lock`) and so either sees the thumbnails or is seen here.

import { buffer } from 'node:stream/consumers';
import type { EventBus } from '@teamchat/bus';
import type { Logger } from '@teamchat/core';
import { Prisma, transaction, type Db, type Tx } from '@teamchat/db';
import {
  flagsList,
  imagePreviewOf,
  messageActionAudience,
  missingThumbnails,
  rewriteThumbnailedImages,
  storedThumbnails,
  thumbnailPath,
  type ImageAttachmentFacts,
  type ImagePreview,
  type StoredThumbnail,
} from '@teamchat/domain';
import type { ObjectStorage } from '@teamchat/storage';
import { BadImageError } from './check';
import { makeThumbnail, THUMBNAIL_TIMEOUT_SECONDS } from './thumbnails';

export interface ThumbnailDeps {
  db: Db;
  storage: ObjectStorage;
  logger: Logger;
  /** The caller's (an action's or a job's) EventBus.sendEventOnCommit: it sends the events. */
  sendEventOnCommit: EventBus['sendEventOnCommit'];
}

interface ImageRow extends ImageAttachmentFacts {
  id: number;
  realm_id: number;
}

/**
 * Makes the thumbnails image_attachment `id` lacks, stores them beside the upload, records them,
 * and re-renders the messages still showing its placeholder, each with a rendering-only
 * update_message event after commit. An upload libvips cannot thumbnail at all loses its row and
 * its previews. Answers how many thumbnails were made (null: no such row).
 */
export async function ensureThumbnails(
  deps: ThumbnailDeps,
  id: number,
  timeoutSeconds = THUMBNAIL_TIMEOUT_SECONDS,
): Promise<number | null> {
  return transaction(
    deps.db,
    async (tx) => {
      const [row] = await tx.db.$queryRaw<ImageRow[]>`
        SELECT id, realm_id, path_id, content_type, original_width_px, original_height_px, frames, thumbnail_metadata
        FROM image_attachment WHERE id = ${id} FOR UPDATE`;
      if (!row) return null;
      const needed = missingThumbnails(row);
      const made: StoredThumbnail[] = storedThumbnails(row);
      let written = 0;
      if (needed.length > 0) {
        const body = await deps.storage.get(row.path_id);
        try {
          if (!body) throw new BadImageError('The upload has no bytes');
          const original = await buffer(body);
          for (const format of needed) {
            const { bytes, stored } = await makeThumbnail(original, format, row, timeoutSeconds);
            await deps.storage.put(thumbnailPath(row.path_id, format), bytes, { contentType: stored.content_type });
            made.push(stored);
            written++;
          }
        } catch (error) {
          if (!(error instanceof BadImageError)) throw error;
          deps.logger.warn({ err: error, path_id: row.path_id }, 'thumbnailing failed');
          if (made.length === 0) {
            // Never thumbnailed: most likely not an image after all. Its previews go.
            await showInMessages(tx, deps.sendEventOnCommit, row, null);
            await tx.db.$executeRaw`DELETE FROM image_attachment WHERE id = ${row.id}`;
            return 0;
          }
        }
        await tx.db.$executeRaw`
          UPDATE image_attachment SET thumbnail_metadata = ${JSON.stringify(made)}::jsonb WHERE id = ${row.id}`;
      }
      // Also when nothing was missing: a send that raced the first run asks again for its message.
      if (made.length > 0)
        await showInMessages(tx, deps.sendEventOnCommit, row, imagePreviewOf({ ...row, thumbnail_metadata: made }));
      return written;
    },
    // Each format has its own time limit; the lock is held through all of them.
    { timeout: (3 * timeoutSeconds + 30) * 1000 },
  );
}

/**
 * Zulip's update_message_rendered_content: each message linking the upload that still shows its
 * placeholder gets the thumbnail (or, `preview` null, loses the preview), and its recipients a
 * rendering-only update_message (Zulip's do_update_embedded_data).
 */
async function showInMessages(
  tx: Tx,
  sendEvent: EventBus['sendEventOnCommit'],
  image: ImageRow,
  preview: ImagePreview | null,
): Promise<void> {
  const messages = await tx.db.$queryRaw<
    {
      id: number;
      content: string;
      rendered_content: string | null;
      stream_id: number | null;
      invite_only: boolean | null;
      history_public_to_subscribers: boolean | null;
    }[]
  >`
    SELECT m.id, m.content, m.rendered_content, m.stream_id, s.invite_only, s.history_public_to_subscribers
    FROM message m
    JOIN attachment_message am ON am.message_id = m.id
    JOIN attachment a ON a.id = am.attachment_id
    LEFT JOIN stream s ON s.id = m.stream_id
    WHERE a.path_id = ${image.path_id} AND m.realm_id = ${image.realm_id}
    ORDER BY m.id
    FOR UPDATE OF m`;
  const now = Math.floor(Date.now() / 1000);
  for (const message of messages) {
    if (message.rendered_content === null) continue;
    const rewritten = rewriteThumbnailedImages(
      message.rendered_content,
      preview ? new Map([[image.path_id, preview]]) : new Map(),
      preview ? new Set() : new Set([image.path_id]),
    ).html;
    if (rewritten === null) continue;
    await tx.db.$executeRaw`UPDATE message SET rendered_content = ${rewritten} WHERE id = ${message.id}`;
    const stream =
      message.stream_id === null
        ? null
        : {
            id: message.stream_id,
            invite_only: message.invite_only!,
            history_public_to_subscribers: message.history_public_to_subscribers!,
          };
    const audience = new Set(await messageActionAudience(tx.db, [message.id], stream));
    const rows = await tx.db.$queryRaw<{ user_profile_id: number; flags: number }[]>(
      Prisma.sql`SELECT user_profile_id, flags FROM user_message WHERE message_id = ${message.id} ORDER BY user_profile_id`,
    );
    const users = rows
      .filter((row) => audience.has(row.user_profile_id))
      .map((row) => ({ id: row.user_profile_id, flags: flagsList(row.flags) }));
    await sendEvent(
      tx,
      image.realm_id,
      {
        type: 'update_message',
        user_id: null,
        edit_timestamp: now,
        message_id: message.id,
        message_ids: [message.id],
        content: message.content,
        rendered_content: rewritten,
        rendering_only: true,
      },
      users,
    );
  }
}
