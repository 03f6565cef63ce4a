import { BODY_LIMITS, createServiceApp } from '@teamchat/core';
import { storesReachable, type BaseDeps, type RunningService } from '@teamchat/runtime';
import type { ChannelsDeps } from './deps';
import { loadChannelsConfig } from './env';
import { routes } from './routes';

export function createApp(deps: ChannelsDeps) {
  return createServiceApp({
    name: 'channels',
    routes,
    deps,
    internalSecret: deps.env.INTERNAL_JWT_SECRET,
    logger: deps.logger,
    ready: () => storesReachable(deps),
    afterWrite: (requester) => deps.reads.recordWrite(requester.realmId),
    bodyLimitBytes: BODY_LIMITS.messagesAndChannels,
  });
}

/** The service as the runtime and the test harness start it; it owns nothing beyond deps. */
export async function createService(deps: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const channelsDeps: ChannelsDeps = { ...deps, config: loadChannelsConfig(env) };
  return { handler: createApp(channelsDeps), close: async () => {} };
}
