// Register's realm_playgrounds: the organisation's code playgrounds.
import { realmPlaygrounds } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const realmPlaygroundsSection: StateSection = {
  eventType: 'realm_playgrounds',
  fetch: async ({ db, realm }) => ({ realm_playgrounds: await realmPlaygrounds(db, realm.id) }),
};
