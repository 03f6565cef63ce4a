// The channels service's configuration (read here only, validated at boot).
import { env, loadEnv, type EnvOf } from '@teamchat/core';

export const channelsEnvSpec = {
  DELETE_TOPIC_BUDGET_MS: env.int(
    'how long a delete_topic request waits for its job before answering complete: false',
    50_000,
  ),
};

export type ChannelsConfig = EnvOf<typeof channelsEnvSpec>;

export function loadChannelsConfig(source: NodeJS.ProcessEnv): ChannelsConfig {
  return loadEnv(channelsEnvSpec, source);
}
