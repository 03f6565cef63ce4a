// Register's scheduled_messages: the user's undelivered scheduled messages (Zulip's
// get_undelivered_scheduled_messages), failed ones included so the user can fix them.
import { undeliveredScheduledMessages } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const scheduledMessagesSection: StateSection = {
  eventType: 'scheduled_messages',
  fetch: async ({ db, user }) => ({ scheduled_messages: await undeliveredScheduledMessages(db, user.id) }),
};
