import { createServiceApp } from '@teamchat/core';
import { storesReachable, type BaseDeps, type RunningService } from '@teamchat/runtime';
import type { WebDeps } from './deps';
import { loadWebConfig } from './env';
import { routes } from './routes';

export function createApp(deps: WebDeps) {
  return createServiceApp({
    name: 'web',
    routes,
    deps,
    internalSecret: deps.env.INTERNAL_JWT_SECRET,
    logger: deps.logger,
    ready: () => storesReachable(deps),
    afterWrite: (requester) => deps.reads.recordWrite(requester.realmId),
  });
}

/** The service as the runtime and the test harness start it. */
export async function createService(deps: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const webDeps: WebDeps = { ...deps, config: loadWebConfig(env) };
  return { handler: createApp(webDeps), close: async () => {} };
}
