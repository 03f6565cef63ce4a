// register's realm_emoji: every custom emoji of the realm, deactivated ones too (Zulip's
// realm.get_emoji()), kept current by realm_emoji events.
import { realmEmojiDict } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const realmEmojiSection: StateSection = {
  eventType: 'realm_emoji',
  fetch: async ({ db, realm }) => ({ realm_emoji: await realmEmojiDict(db, realm.id) }),
};
