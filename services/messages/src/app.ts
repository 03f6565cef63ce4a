import { BODY_LIMITS, createServiceApp } from '@teamchat/core';
import { serviceAppOptions, type BaseDeps, type RunningService } from '@teamchat/runtime';
import type { MessagesDeps } from './deps';
import { loadMessagesConfig } from './env';
import { routes } from './routes';

export function createApp(deps: MessagesDeps) {
  return createServiceApp({
    ...serviceAppOptions('messages', routes, deps),
    bodyLimitBytes: BODY_LIMITS.messagesAndChannels,
  });
}

/** The service as the runtime and the test harness start it; it owns nothing beyond deps. */
export async function createService(deps: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const messagesDeps: MessagesDeps = { ...deps, config: loadMessagesConfig(env) };
  return { handler: createApp(messagesDeps), close: async () => {} };
}
