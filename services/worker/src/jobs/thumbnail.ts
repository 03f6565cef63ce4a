// thumbnail: an image upload's thumbnails (Zulip's ThumbnailWorker), enqueued by the uploads
// service once the upload commits, and by a send that saw the thumbnails appear while it
// rendered. Makes the formats the image lacks (packages/images: bounded by pixel limits and a
// time limit per format), then shows them in the messages still showing its placeholder, each
// with a rendering-only update_message event after commit.
//
// Storage settings (UPLOADS_STORAGE, UPLOADS_LOCAL_DIR, UPLOADS_S3_*) are read from the worker's
// environment; they must match the uploads service's. THUMBNAIL_TIMEOUT_SECONDS (default 20)
// bounds each resize.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type ThumbnailJobData } from '@teamchat/bus';
import { ensureThumbnails } from '@teamchat/images';
import { createStorage, loadStorageConfig } from '@teamchat/storage';
import type { JobProcessor, WorkerDeps } from './processor';

async function processThumbnail(job: Job<ThumbnailJobData>, deps: WorkerDeps): Promise<{ made: number | null }> {
  const storage = createStorage(loadStorageConfig(process.env));
  const started = Date.now();
  try {
    const made = await ensureThumbnails(
      { ...deps, storage, sendEventOnCommit: (...args) => deps.bus.sendEventOnCommit(...args) },
      job.data.imageAttachmentId,
      deps.config.THUMBNAIL_TIMEOUT_SECONDS,
    );
    if (made === null) deps.logger.info({ image_attachment_id: job.data.imageAttachmentId }, 'image attachment gone');
    else deps.logger.info({ made, ms: Date.now() - started }, 'processed thumbnails');
    return { made };
  } finally {
    await storage.close();
  }
}

export const thumbnailProcessor: JobProcessor<typeof JOB_QUEUES.thumbnail> = {
  queue: JOB_QUEUES.thumbnail,
  // libvips uses the cores itself; one image at a time keeps memory bounded.
  concurrency: 1,
  process: processThumbnail,
};
