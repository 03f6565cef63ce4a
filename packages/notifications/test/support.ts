// Shared by the package's tests: the rules' exports, and the notification settings' defaults.
import { notificationSettings } from '../src/recipients';

export * from '../src/triggers';
export { VisibilityPolicy } from '@teamchat/domain';

/** Zulip 10's defaults, as a user who changed nothing has them. */
export const USER_SETTING_DEFAULTS_FOR_TESTS = notificationSettings({
  settings: {},
  timezone: '',
  default_language: 'en',
  email_address_visibility: 1,
});
