import type { BaseDeps } from '@teamchat/runtime';
import type { WebConfig } from './env';

/** The common dependencies plus the service's own settings. */
export type WebDeps = BaseDeps & { config: WebConfig };
