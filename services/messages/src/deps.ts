import type { BaseDeps } from '@teamchat/runtime';
import type { MessagesConfig } from './env';

/** The common dependencies plus the service's own settings. */
export type MessagesDeps = BaseDeps & { config: MessagesConfig };
