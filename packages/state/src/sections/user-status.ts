// Register's user_status: the statuses the user may see, keyed by user id (Zulip's
// get_all_users_status_dict).
import { realmUserStatuses } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const userStatusSection: StateSection = {
  eventType: 'user_status',
  // Statuses are for people with an account (Zulip sends spectators none).
  fetch: async ({ db, user, spectator }) => ({ user_status: spectator ? {} : await realmUserStatuses(db, user) }),
};
