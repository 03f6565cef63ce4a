// Shared by the verify-action suites: the register arguments whose event shapes differ, and a
// helper that fails a set-up request loudly.
import type { ApiResponse } from '@teamchat/testing';
import { WEB_APP_REGISTER_PARAMS, type RegisterArguments } from '@teamchat/testing';

/**
 * Each case runs under these: Zulip's web app (its home page's register arguments, every
 * capability) and an old client that sends none (events then come in their older shapes:
 * update_display_settings, delete_message per message, avatar URLs always sent, ...).
 */
export const CAPABILITY_SETS: [string, RegisterArguments][] = [
  ['web app', WEB_APP_REGISTER_PARAMS],
  ['old client', {}],
];

/** The web app's arguments with subscriber lists, which peer events keep current. */
export const WITH_SUBSCRIBERS: [string, RegisterArguments] = [
  'web app + subscribers',
  { ...WEB_APP_REGISTER_PARAMS, include_subscribers: true },
];

/** The body of a set-up request that must succeed. */
export function ok(response: ApiResponse): Record<string, any> {
  if (response.status !== 200)
    throw new Error(`set-up request failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as Record<string, any>;
}
