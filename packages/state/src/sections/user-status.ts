// Register's user_status: the statuses the user may see, keyed by user id (Zulip's
// get_all_users_status_dict).
import { realmUserStatuses } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const userStatusSection: StateSection = {
  eventType: 'user_status',
  fetch: async ({ db, user }) => ({ user_status: await realmUserStatuses(db, user) }),
};
