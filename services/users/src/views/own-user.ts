import { type AuthedContext, UnauthorizedError } from '@teamchat/core';
import { ownUserDict } from '@teamchat/domain';
import type { UsersDeps } from '../deps';
import { readOwnUser } from '../lib/own-user';

/** GET /users/me. */
export async function getOwnUser({ deps, requester }: AuthedContext<UsersDeps>) {
  const own = await readOwnUser(deps.db, requester.userId);
  // Only a race with a hard delete could get here: the gateway authenticated this user.
  if (!own) throw new UnauthorizedError('Invalid API key');
  return ownUserDict(own.user, own.maxMessageId, own.profileData);
}
