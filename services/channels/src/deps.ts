import type { BaseDeps } from '@teamchat/runtime';
import type { ChannelsConfig } from './env';

/** The common dependencies plus the service's own settings. */
export type ChannelsDeps = BaseDeps & { config: ChannelsConfig };
