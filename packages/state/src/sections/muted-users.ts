// Register's muted_users: the users the user muted (Zulip's get_user_mutes).
import { userMutes } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const mutedUsersSection: StateSection = {
  eventType: 'muted_users',
  fetch: async ({ db, user }) => ({ muted_users: await userMutes(db, user.id) }),
};
