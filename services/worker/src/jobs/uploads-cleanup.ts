// uploads-cleanup: removes uploads no message links any more, for the uploads service.
//
// Two kinds of job: {attachmentIds} — enqueued after messages are deleted, with the uploads
// only those messages linked; each is deleted if it is still unlinked (it may have been shared
// again meanwhile). {unreferencedOlderThanWeeks} — the repeatable run the uploads service
// schedules, deleting every upload never linked (or no longer linked) that is older than that
// (Zulip's delete_old_unclaimed_attachments). {unfinishedUpload} — a resumable (tus) upload's
// expiry, enqueued by the uploads service at its creation and delayed by
// UPLOADS_TUS_EXPIRE_AFTER_MS: unless it became an attachment, its bytes, its tus metadata and
// the S3 store's buffered tail are removed (it has no row). Batches of 1000; each batch is one transaction
// that deletes the rows, tells the owners' clients, and removes the bytes before committing,
// so a storage failure changes nothing and the retried job finds the same uploads.
//
// Storage settings (UPLOADS_STORAGE, UPLOADS_LOCAL_DIR, UPLOADS_S3_*) are read from the worker's
// environment; they must match the uploads service's.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type UploadsCleanupJobData } from '@teamchat/bus';
import { Prisma, transaction } from '@teamchat/db';
import { attachmentEvent, storedThumbnails, thumbnailPath, uploadSpaceUsed } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { createStorage, loadStorageConfig, uploadKeys, type ObjectStorage } from '@teamchat/storage';
import type { JobProcessor } from './processor';

export const UPLOADS_CLEANUP_BATCH_SIZE = 1000;

interface DeletedAttachment {
  id: number;
  realm_id: number;
  owner_id: number;
  path_id: string;
  /** Its image_attachment row's thumbnails (the row goes with it), null when it is no image. */
  thumbnails: unknown;
}

/** One batch: returns how many uploads it removed. */
async function deleteBatch(deps: BaseDeps, files: ObjectStorage, filter: Prisma.Sql): Promise<number> {
  return transaction(deps.db, async (tx) => {
    const deleted = await tx.db.$queryRaw<DeletedAttachment[]>`
      DELETE FROM attachment WHERE id IN (
        SELECT a.id FROM attachment a
        WHERE ${filter}
          AND NOT EXISTS (SELECT 1 FROM attachment_message am WHERE am.attachment_id = a.id)
        ORDER BY a.id LIMIT ${UPLOADS_CLEANUP_BATCH_SIZE}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, realm_id, owner_id, path_id,
        (SELECT thumbnail_metadata FROM image_attachment WHERE attachment_id = attachment.id) AS thumbnails`;
    if (deleted.length === 0) return 0;
    for (const realmId of new Set(deleted.map((row) => row.realm_id))) {
      const used = await uploadSpaceUsed(tx.db, realmId);
      for (const row of deleted.filter((r) => r.realm_id === realmId)) {
        await deps.bus.sendEventOnCommit(tx, realmId, attachmentEvent('remove', { id: row.id }, used), [row.owner_id]);
      }
    }
    await files.delete(
      deleted.flatMap((row) => [
        ...uploadKeys(files, row.path_id),
        ...storedThumbnails({ thumbnail_metadata: row.thumbnails }).map((made) => thumbnailPath(row.path_id, made)),
      ]),
    );
    return deleted.length;
  });
}

/** An unfinished tus upload past its horizon: removed unless it was recorded as an attachment. */
async function expireUnfinishedUpload(deps: BaseDeps, pathId: string): Promise<{ deleted: number }> {
  if (await deps.db.attachment.count({ where: { path_id: pathId } })) return { deleted: 0 };
  const files = createStorage(loadStorageConfig(process.env));
  try {
    // The file store's "<key>.json" or the S3 store's "<key>.info", and its not yet part-sized "<key>.part".
    await files.delete([...uploadKeys(files, pathId), `${pathId}.part`]);
  } finally {
    await files.close();
  }
  // The uploads service's cache of the S3 store's metadata (services/uploads/src/lib/tus.ts).
  await deps.redis.del(deps.bus.keys.custom('uploads', 'tus-meta', '') + pathId);
  return { deleted: 1 };
}

async function processUploadsCleanup(job: Job<UploadsCleanupJobData>, deps: BaseDeps): Promise<{ deleted: number }> {
  const { attachmentIds, unreferencedOlderThanWeeks, unfinishedUpload } = job.data;
  if (unfinishedUpload !== undefined) return expireUnfinishedUpload(deps, unfinishedUpload);
  let filter: Prisma.Sql;
  if (attachmentIds !== undefined) {
    if (attachmentIds.length === 0) return { deleted: 0 };
    filter = Prisma.sql`a.id = ANY(${attachmentIds}::int[])`;
  } else if (unreferencedOlderThanWeeks !== undefined) {
    filter = Prisma.sql`a.create_time < now() - make_interval(weeks => ${unreferencedOlderThanWeeks}::int)`;
  } else {
    throw new Error('uploads-cleanup job without attachmentIds or unreferencedOlderThanWeeks');
  }
  const files = createStorage(loadStorageConfig(process.env));
  let deleted = 0;
  try {
    for (;;) {
      const count = await deleteBatch(deps, files, filter);
      deleted += count;
      if (count < UPLOADS_CLEANUP_BATCH_SIZE) break;
      await job.updateProgress({ deleted });
    }
  } finally {
    await files.close();
  }
  return { deleted };
}

export const uploadsCleanupProcessor: JobProcessor<typeof JOB_QUEUES.uploadsCleanup> = {
  queue: JOB_QUEUES.uploadsCleanup,
  concurrency: 1,
  process: processUploadsCleanup,
};
