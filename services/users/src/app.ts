import { createServiceApp, loadEnv } from '@teamchat/core';
import { loadNotificationsConfig } from '@teamchat/notifications';
import { serviceAppOptions, type BaseDeps, type RunningService } from '@teamchat/runtime';
import { createStorage, loadStorageConfig } from '@teamchat/storage';
import type { UsersDeps } from './deps';
import { LoginThrottle, loginThrottleEnvSpec } from './lib/login-throttle';
import { PresenceCache, presenceCacheEnvSpec } from './lib/presence-cache';
import { routes } from './routes';

export function createApp(deps: UsersDeps) {
  return createServiceApp(serviceAppOptions('users', routes, deps));
}

/** Where the channels service is when CHANNELS_URL does not say (its default port). */
export const DEFAULT_CHANNELS_URL = 'http://127.0.0.1:9103';
/** Where the messages service is when MESSAGES_URL does not say (its default port). */
export const DEFAULT_MESSAGES_URL = 'http://127.0.0.1:9102';

/** The service as the runtime and the test harness start it; it owns nothing beyond deps. */
export async function createService(deps: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const loginThrottle = new LoginThrottle(
    deps.redis,
    deps.env.REDIS_PREFIX,
    loadEnv(loginThrottleEnvSpec, env),
    deps.logger,
  );
  const storage = createStorage(loadStorageConfig(env));
  const usersDeps: UsersDeps = {
    ...deps,
    serviceUrls: {
      channels: env.CHANNELS_URL || DEFAULT_CHANNELS_URL,
      messages: env.MESSAGES_URL || DEFAULT_MESSAGES_URL,
    },
    loginThrottle,
    presence: new PresenceCache(deps.db, loadEnv(presenceCacheEnvSpec, env).PRESENCE_RELOAD_SECONDS * 1000),
    notifications: loadNotificationsConfig(env),
    storage,
  };
  return { handler: createApp(usersDeps), close: () => storage.close() };
}
