// Everything the uploads service reads from the environment, validated at boot.
import { env, EnvError, loadEnv, type EnvOf } from '@teamchat/core';
import { MAX_EMOJI_FILE_SIZE_MIB, SERVER_LIMITS } from '@teamchat/domain';
import { baseEnvSpec } from '@teamchat/runtime';
import { loadStorageConfig, storageEnvSpec, type StorageConfig } from '@teamchat/storage';

export const uploadsEnvSpec = {
  ...baseEnvSpec,
  ...storageEnvSpec,
  PORT: env.int('port the uploads service listens on', 9104),
  UPLOADS_MAX_FILE_SIZE_MIB: env.int(
    'largest accepted upload in MiB (register reports max_file_upload_size_mib from the server limits; keep them equal outside tests)',
    SERVER_LIMITS.max_file_upload_size_mib,
  ),
  UPLOADS_MAX_EMOJI_FILE_SIZE_MIB: env.int(
    "largest accepted custom emoji image in MiB (Zulip's MAX_EMOJI_FILE_SIZE_MIB)",
    MAX_EMOJI_FILE_SIZE_MIB,
  ),
  SERVER_ADMINISTRATOR_EMAIL: env.string(
    "who to ask for a manual data export of an organisation too big for an automatic one (Zulip's ZULIP_ADMINISTRATOR)",
    'zulip-admin@example.com',
  ),
  UPLOADS_DELETE_UNREFERENCED_AFTER_WEEKS: env.int(
    'uploads no message links are deleted once they are this many weeks old',
    5,
  ),
  UPLOADS_CLEANUP_EVERY_MS: env.int(
    'how often the clean-up of unreferenced uploads runs, in milliseconds',
    24 * 3600 * 1000,
  ),
  UPLOADS_TUS_EXPIRE_AFTER_MS: env.int(
    'a resumable (tus) upload not finished this many milliseconds after its creation is removed (its bytes and tus metadata) by the worker',
    24 * 3600 * 1000,
  ),
};

export type UploadsEnv = EnvOf<typeof uploadsEnvSpec>;

export interface UploadsConfig {
  env: UploadsEnv;
  storage: StorageConfig;
  maxFileSizeBytes: number;
  maxEmojiFileSizeMiB: number;
}

export function loadUploadsConfig(source: NodeJS.ProcessEnv): UploadsConfig {
  const values = loadEnv(uploadsEnvSpec, source);
  const problems: string[] = [];
  if (values.UPLOADS_MAX_FILE_SIZE_MIB < 1) problems.push('UPLOADS_MAX_FILE_SIZE_MIB must be at least 1');
  if (values.UPLOADS_MAX_EMOJI_FILE_SIZE_MIB < 0) problems.push('UPLOADS_MAX_EMOJI_FILE_SIZE_MIB must not be negative');
  if (values.UPLOADS_DELETE_UNREFERENCED_AFTER_WEEKS < 1)
    problems.push('UPLOADS_DELETE_UNREFERENCED_AFTER_WEEKS must be at least 1');
  if (values.UPLOADS_CLEANUP_EVERY_MS < 100) problems.push('UPLOADS_CLEANUP_EVERY_MS must be at least 100');
  if (values.UPLOADS_TUS_EXPIRE_AFTER_MS < 1000) problems.push('UPLOADS_TUS_EXPIRE_AFTER_MS must be at least 1000');
  if (problems.length) throw new EnvError(`Bad configuration:\n  - ${problems.join('\n  - ')}`);
  return {
    env: values,
    storage: loadStorageConfig(source),
    maxFileSizeBytes: values.UPLOADS_MAX_FILE_SIZE_MIB * 1024 * 1024,
    maxEmojiFileSizeMiB: values.UPLOADS_MAX_EMOJI_FILE_SIZE_MIB,
  };
}
