import type { AuthedContext } from '@teamchat/core';
import type { UsersDeps } from '../deps';

/**
 * GET /realm/emoji (Zulip's list_emoji): the realm's custom emoji. None can be created on this
 * server (register's realm_emoji is empty too), but clients list them (python-zulip-api's
 * get_realm_emoji).
 */
export function listRealmEmoji(_ctx: AuthedContext<UsersDeps>) {
  return { emoji: {} };
}
