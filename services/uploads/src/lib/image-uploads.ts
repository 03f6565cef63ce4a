// Image uploads (Zulip's maybe_thumbnail): an upload declared as an image type the server
// thumbnails, whose header parses as such an image within the pixel limits, gets an
// image_attachment row and a thumbnail job (actions/attachments.ts); anything else is an
// ordinary file.

import { buffer } from 'node:stream/consumers';
import { ACCEPTED_IMAGE_TYPES, thumbnailableImage, type ImageFacts } from '@teamchat/images';
import type { ObjectStorage } from '@teamchat/storage';
import type { Logger } from '@teamchat/core';

/** The upload's shown size and frames if it is an image to thumbnail; null otherwise. */
export async function imageFactsOfUpload(
  storage: ObjectStorage,
  logger: Logger,
  pathId: string,
  contentType: string,
): Promise<ImageFacts | null> {
  // Zulip trusts the declared type only to decide whether to look at the bytes at all.
  if (!ACCEPTED_IMAGE_TYPES.has(contentType.split(';')[0].trim().toLowerCase())) return null;
  try {
    const body = await storage.get(pathId);
    return body ? await thumbnailableImage(await buffer(body)) : null;
  } catch (error) {
    logger.warn({ err: error, path_id: pathId }, 'reading an image upload’s header failed');
    return null;
  }
}
