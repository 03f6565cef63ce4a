// Thumbnails made on demand: a thumbnail URL asked for before the worker's job got to the image
// (Zulip's serve_file calls ensure_thumbnails itself). The same work as the job
// (packages/images), waiting for its lock if it is at it; messages showing the placeholder are
// re-rendered and their recipients told after commit.

import { ensureThumbnails } from '@teamchat/images';
import type { UploadsDeps } from '../deps';

export async function doEnsureThumbnails(deps: UploadsDeps, imageAttachmentId: number): Promise<void> {
  await ensureThumbnails(
    { ...deps, sendEventOnCommit: (...args) => deps.bus.sendEventOnCommit(...args) },
    imageAttachmentId,
  );
}
