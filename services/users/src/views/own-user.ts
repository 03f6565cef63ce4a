import type { AuthedContext } from '@teamchat/core';
import { ownUserDict } from '@teamchat/domain';
import type { UsersDeps } from '../deps';
import { profileDataOf } from '../lib/profile-data';

/** GET /users/me (one of the most frequent requests: its three reads run at once). */
export async function getOwnUser({ deps, requester }: AuthedContext<UsersDeps>) {
  const [user, newest, profileData] = await Promise.all([
    deps.db.userProfile.findUniqueOrThrow({ where: { id: requester.userId } }),
    // Raw: an index-only max, without the query compiler's cost of an aggregate.
    deps.db.$queryRaw<{ id: number | null }[]>`SELECT max(message_id) AS id FROM user_message WHERE user_profile_id = ${requester.userId}`,
    profileDataOf(deps.db, requester.userId),
  ]);
  return ownUserDict(user, newest[0].id ?? -1, profileData);
}
