// The whole HTTP surface of the web service: the pages around Zulip's web app (home, login,
// password reset), the session's entry and exit, and the app's static files.
import type { Route } from '@teamchat/core';
import type { WebDeps } from './deps';

export const routes: Route<WebDeps>[] = [];
