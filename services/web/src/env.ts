// The web service's configuration (read here only, validated at boot).
import { env, loadEnv, type EnvOf } from '@teamchat/core';

export const webEnvSpec = {
  ZULIP_WEB_DIR: env.string(
    "folder of Zulip's built web app (static/, templates/, webpack-stats-production.json); empty: pages say how to install it",
    '',
  ),
};

export type WebConfig = EnvOf<typeof webEnvSpec>;

export function loadWebConfig(source: NodeJS.ProcessEnv): WebConfig {
  return loadEnv(webEnvSpec, source);
}
