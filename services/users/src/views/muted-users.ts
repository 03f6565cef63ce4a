import { JsonableError, pathInt, type AuthedContext } from '@teamchat/core';
import { loadActor } from '@teamchat/domain';
import { doMuteUser, doUnmuteUser } from '../actions/muted-users';
import type { UsersDeps } from '../deps';
import { accessUserById } from '../lib/access';

// Bots and deactivated users may be muted (and unmuted), as in Zulip; users the requester
// cannot access may not.
const mutable = { allowBots: true, allowDeactivated: true, forAdmin: false };

/** POST /users/me/muted_users/{muted_user_id} */
export async function muteUser({ deps, requester, req, log }: AuthedContext<UsersDeps>) {
  const mutedUserId = pathInt(req, 'muted_user_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  if (mutedUserId === actor.id) throw new JsonableError('Cannot mute self');
  const muted = await accessUserById(deps.db, actor, mutedUserId, mutable);
  await doMuteUser(deps, { messagesUrl: deps.serviceUrls.messages, logger: log }, actor, muted.id);
  return {};
}

/** DELETE /users/me/muted_users/{muted_user_id} */
export async function unmuteUser({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const mutedUserId = pathInt(req, 'muted_user_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  const muted = await accessUserById(deps.db, actor, mutedUserId, mutable);
  await doUnmuteUser(deps, actor, muted.id);
  return {};
}
