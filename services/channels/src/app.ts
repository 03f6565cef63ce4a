import { BODY_LIMITS, createServiceApp } from '@teamchat/core';
import { serviceAppOptions, type BaseDeps, type RunningService } from '@teamchat/runtime';
import type { ChannelsDeps } from './deps';
import { loadChannelsConfig } from './env';
import { routes } from './routes';

export function createApp(deps: ChannelsDeps) {
  return createServiceApp({
    ...serviceAppOptions('channels', routes, deps),
    bodyLimitBytes: BODY_LIMITS.messagesAndChannels,
  });
}

/** The service as the runtime and the test harness start it; it owns nothing beyond deps. */
export async function createService(deps: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const channelsDeps: ChannelsDeps = { ...deps, config: loadChannelsConfig(env) };
  return { handler: createApp(channelsDeps), close: async () => {} };
}
