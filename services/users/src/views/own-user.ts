import type { AuthedContext } from '@teamchat/core';
import { ownUserDict } from '@teamchat/domain';
import type { UsersDeps } from '../deps';
import { profileDataOf } from '../lib/profile-data';

/** GET /users/me */
export async function getOwnUser({ deps, requester }: AuthedContext<UsersDeps>) {
  const user = await deps.db.userProfile.findUniqueOrThrow({ where: { id: requester.userId } });
  const newest = await deps.db.userMessage.aggregate({ where: { user_profile_id: user.id }, _max: { message_id: true } });
  return ownUserDict(user, newest._max.message_id ?? -1, await profileDataOf(deps.db, user.id));
}
