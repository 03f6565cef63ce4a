// The web service's configuration (read here only, validated at boot).
import { DEFAULT_SESSION_COOKIE_AGE_SECONDS } from '@teamchat/bus';
import { env, loadEnv, type EnvOf } from '@teamchat/core';
import { passwordResetEnvSpec } from '@teamchat/domain';

export const webEnvSpec = {
  ...passwordResetEnvSpec,
  USERS_URL: env.url('base URL of the users service (password checks, password changes)', 'http://127.0.0.1:9101'),
  SESSION_COOKIE_AGE_SECONDS: env.int(
    "how long a browser session lasts from login (Zulip's SESSION_COOKIE_AGE, two weeks)",
    DEFAULT_SESSION_COOKIE_AGE_SECONDS,
  ),
  ZULIP_WEB_DIR: env.string(
    "folder of Zulip's built web app (static/, templates/, webpack-stats-production.json); empty: var/zulip-web, else ../shared/zulip-web beside the checkout, else pages say how to install it",
    '',
  ),
  EVENTS_URL: env.url('base URL of the event tier (the home page embeds its register answer)', 'http://127.0.0.1:9105'),
};

export type WebConfig = EnvOf<typeof webEnvSpec>;

export function loadWebConfig(source: NodeJS.ProcessEnv): WebConfig {
  return loadEnv(webEnvSpec, source);
}
