// Which store uploaded files go to, from the environment: local disk by default, any
// S3-compatible store when UPLOADS_STORAGE=s3. Read by the uploads service and by the
// worker's uploads clean-up job, which must agree.

import path from 'node:path';
import { env, EnvError, loadEnv, type EnvOf } from '@teamchat/core';
import { LocalDiskStorage } from './local';
import { S3Storage, type S3StorageConfig } from './s3';
import type { ObjectStorage } from './storage';

export const storageEnvSpec = {
  UPLOADS_STORAGE: env.string(
    "where uploaded files are kept: 'local' (a directory) or 's3' (an S3-compatible bucket)",
    'local',
  ),
  UPLOADS_LOCAL_DIR: env.string('directory of uploaded files when UPLOADS_STORAGE=local', 'var/uploads'),
  UPLOADS_S3_BUCKET: env.string('bucket of uploaded files when UPLOADS_STORAGE=s3', ''),
  UPLOADS_S3_ENDPOINT: env.string("S3 endpoint URL (empty: AWS's endpoint for the region)", ''),
  UPLOADS_S3_REGION: env.string('S3 region', 'us-east-1'),
  UPLOADS_S3_FORCE_PATH_STYLE: env.bool('address the bucket in the URL path (MinIO, Ceph, s3rver)', false),
  UPLOADS_S3_ACCESS_KEY_ID: env.string("S3 access key id (empty: the AWS SDK's default credential chain)", ''),
  UPLOADS_S3_SECRET_ACCESS_KEY: env.string('S3 secret access key', ''),
};

export type StorageConfig = { kind: 'local'; directory: string } | ({ kind: 's3' } & S3StorageConfig);

export function loadStorageConfig(source: NodeJS.ProcessEnv = process.env): StorageConfig {
  const values: EnvOf<typeof storageEnvSpec> = loadEnv(storageEnvSpec, source);
  if (values.UPLOADS_STORAGE === 'local') return { kind: 'local', directory: path.resolve(values.UPLOADS_LOCAL_DIR) };
  if (values.UPLOADS_STORAGE !== 's3') {
    throw new EnvError(
      `Bad configuration:\n  - UPLOADS_STORAGE=${JSON.stringify(values.UPLOADS_STORAGE)} is invalid: not 'local' or 's3'`,
    );
  }
  if (!values.UPLOADS_S3_BUCKET)
    throw new EnvError('Bad configuration:\n  - UPLOADS_S3_BUCKET is missing (needed when UPLOADS_STORAGE=s3)');
  if (values.UPLOADS_S3_ENDPOINT) {
    try {
      new URL(values.UPLOADS_S3_ENDPOINT);
    } catch {
      throw new EnvError(
        `Bad configuration:\n  - UPLOADS_S3_ENDPOINT=${JSON.stringify(values.UPLOADS_S3_ENDPOINT)} is not a URL`,
      );
    }
  }
  return {
    kind: 's3',
    bucket: values.UPLOADS_S3_BUCKET,
    endpoint: values.UPLOADS_S3_ENDPOINT || undefined,
    region: values.UPLOADS_S3_REGION,
    forcePathStyle: values.UPLOADS_S3_FORCE_PATH_STYLE,
    accessKeyId: values.UPLOADS_S3_ACCESS_KEY_ID || undefined,
    secretAccessKey: values.UPLOADS_S3_SECRET_ACCESS_KEY || undefined,
  };
}

export function createStorage(config: StorageConfig): ObjectStorage {
  return config.kind === 'local' ? new LocalDiskStorage(config.directory) : new S3Storage(config);
}
