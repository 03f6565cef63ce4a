// The organisation's defaults for new users' settings (Zulip's RealmUserDefault): stored in
// realm.user_settings_defaults (only the changed ones), shown by register, and copied into every
// account created afterwards (Zulip's copy_default_settings).
import type { Realm } from '@teamchat/db';
import { EmailVisibility } from './users';
import { AVAILABLE_NOTIFICATION_SOUNDS, EMOJISET_CHOICES, USER_SETTING_DEFAULTS } from './user-settings';

/**
 * Personal settings administrators may not set for others: security emails, marketing emails
 * (the signup form's choice wins) and consent to private data exports.
 */
const NOT_REALM_DEFAULTS: ReadonlySet<string> = new Set([
  'enable_login_emails',
  'enable_marketing_emails',
  'allow_private_data_export',
]);

/** The settings PATCH /realm/user_settings_defaults changes (email_address_visibility besides these). */
export const REALM_DEFAULT_SETTING_NAMES: readonly string[] = Object.keys(USER_SETTING_DEFAULTS).filter(
  (name) => !NOT_REALM_DEFAULTS.has(name),
);

type DefaultsSource = Pick<Realm, 'user_settings_defaults'>;

/** What the realm changed: known settings (and email_address_visibility) only. */
export function storedUserSettingsDefaults(realm: DefaultsSource): Record<string, unknown> {
  const raw = realm.user_settings_defaults;
  const stored = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const names = [...REALM_DEFAULT_SETTING_NAMES, 'email_address_visibility'];
  return Object.fromEntries(names.filter((name) => name in stored).map((name) => [name, stored[name]]));
}

/** Register's realm_user_settings_defaults. */
export function realmUserSettingsDefaults(realm: DefaultsSource & Pick<Realm, 'default_language'>) {
  return {
    ...USER_SETTING_DEFAULTS,
    default_language: realm.default_language,
    email_address_visibility: EmailVisibility.EVERYONE as number,
    ...storedUserSettingsDefaults(realm),
    available_notification_sounds: AVAILABLE_NOTIFICATION_SOUNDS,
    emojiset_choices: EMOJISET_CHOICES,
  };
}

/** What a new account starts with: its settings column and its email visibility. */
export function newUserSettings(realm: DefaultsSource): {
  settings: Record<string, unknown>;
  emailAddressVisibility: number | undefined;
} {
  const { email_address_visibility, ...settings } = storedUserSettingsDefaults(realm);
  return {
    settings,
    emailAddressVisibility: typeof email_address_visibility === 'number' ? email_address_visibility : undefined,
  };
}
