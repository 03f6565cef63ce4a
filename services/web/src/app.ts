import { createServiceApp } from '@teamchat/core';
import { serviceAppOptions, type BaseDeps, type RunningService } from '@teamchat/runtime';
import type { WebDeps } from './deps';
import { loadWebConfig } from './env';
import { ZulipWebApp } from './lib/web-app';
import { locateZulipWebDir } from './lib/zulip-web-dir';
import { routes } from './routes';

export function createApp(deps: WebDeps) {
  return createServiceApp(serviceAppOptions('web', routes, deps));
}

/** The service as the runtime and the test harness start it. */
export async function createService(deps: BaseDeps, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const config = loadWebConfig(env);
  const { dir: webDir, problems } = locateZulipWebDir(config.ZULIP_WEB_DIR);
  // Without the folder the service still starts (the API works without it); its pages say why.
  if (problems.length) deps.logger.warn({ problems }, "Zulip's web app is not usable");
  const webApp = webDir && !problems.length ? new ZulipWebApp(webDir) : null;
  const webDeps: WebDeps = { ...deps, config, webApp };
  return { handler: createApp(webDeps), close: async () => {} };
}
