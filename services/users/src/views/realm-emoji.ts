import type { AuthedContext } from '@teamchat/core';
import { realmEmojiDict } from '@teamchat/domain';
import type { UsersDeps } from '../deps';

/**
 * GET /realm/emoji (Zulip's list_emoji): the realm's custom emoji, deactivated ones too. The
 * list is public within the realm (guests see it). The uploads service writes them.
 */
export async function listRealmEmoji({ deps, requester }: AuthedContext<UsersDeps>) {
  return { emoji: await realmEmojiDict(deps.db, requester.realmId) };
}
