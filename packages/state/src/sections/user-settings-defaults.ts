// Register's realm_user_settings_defaults: the settings new users start with.
import { realmUserSettingsDefaults } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const userSettingsDefaultsSection: StateSection = {
  eventType: 'realm_user_settings_defaults',
  fetch: async ({ realm }) => ({ realm_user_settings_defaults: realmUserSettingsDefaults(realm) }),
};
