import type { BaseDeps } from '@teamchat/runtime';
import type { ObjectStorage } from '@teamchat/storage';
import type { Server as TusServer } from '@tus/server';
import type { UploadsConfig } from './env';

export interface UploadsDeps extends BaseDeps {
  config: UploadsConfig;
  /** Where the bytes of uploads live (local disk or S3). */
  storage: ObjectStorage;
  /** Resumable uploads at /api/v1/tus. */
  tus: TusServer;
}
