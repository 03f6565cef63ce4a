import { createServiceApp } from '@teamchat/core';
import { serviceAppOptions, type BaseDeps, type RunningService } from '@teamchat/runtime';
import { createStorage } from '@teamchat/storage';
import type { UploadsDeps } from './deps';
import { loadUploadsConfig } from './env';
import { scheduleUnreferencedCleanup } from './lib/cleanup-schedule';
import { createTusServer } from './lib/tus';
import { RedisLocker } from './lib/tus-redis';
import { routes } from './routes';

export function createApp(deps: UploadsDeps) {
  return createServiceApp(serviceAppOptions('uploads', routes, deps));
}

/**
 * The service as the runtime and the test harness start it: storage (local disk or S3, from
 * `env`), resumable uploads with their locks in Redis, and the clean-up schedule.
 */
export async function createService(base: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const config = loadUploadsConfig(env);
  const storage = createStorage(config.storage);
  const locker = await RedisLocker.start(base.redis, base.newBlockingRedis('tus-locks'), {
    prefix: base.bus.keys.custom('uploads', 'tus-lock', ''),
  });
  const withStorage = { ...base, config, storage };
  const deps: UploadsDeps = { ...withStorage, tus: createTusServer(withStorage, locker) };
  await scheduleUnreferencedCleanup(deps, config);
  return {
    handler: createApp(deps),
    close: async () => {
      await storage.close();
    },
  };
}
