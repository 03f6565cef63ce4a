import type { BaseDeps } from '@teamchat/runtime';
import type { WebConfig } from './env';
import type { ZulipWebApp } from './lib/web-app';

/** The common dependencies plus the service's own settings and the installed web app (null: not installed). */
export type WebDeps = BaseDeps & { config: WebConfig; webApp: ZulipWebApp | null };
