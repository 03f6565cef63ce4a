import { InvalidArgumentError, optional, param, v, type AuthedContext } from '@teamchat/core';
import { EmailVisibility, loadActor, REALM_DEFAULT_SETTING_NAMES } from '@teamchat/domain';
import { doSetRealmUserDefaultSettings } from '../actions/user-settings-defaults';
import type { UsersDeps } from '../deps';
import { requireAdministrator } from '../lib/access';
import { checkSettingValues, STORED_SETTING_TYPES, type SettingValue } from '../lib/settings';

const EMAIL_VISIBILITIES: number[] = Object.values(EmailVisibility);

const defaultsSpecs = {
  ...Object.fromEntries(REALM_DEFAULT_SETTING_NAMES.map((name) => [name, optional(STORED_SETTING_TYPES[name])])),
  email_address_visibility: optional(
    param.json(
      v.refine(v.int(), (value, varName) => {
        if (!EMAIL_VISIBILITIES.includes(value)) throw new InvalidArgumentError(`Invalid ${varName}`);
      }),
    ),
  ),
};

/**
 * PATCH /realm/user_settings_defaults (Zulip's update_realm_user_settings_defaults, administrators).
 * Settings administrators may not choose for others (login and marketing emails, data export
 * consent) are left unread: ignored_parameters_unsupported names them.
 */
export async function updateRealmUserSettingsDefaults({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const parsed = params.parse(defaultsSpecs) as Record<string, SettingValue | undefined>;
  checkSettingValues({
    notification_sound: parsed.notification_sound,
    email_notifications_batching_period_seconds: parsed.email_notifications_batching_period_seconds,
  });
  // In Zulip's order (its parameters are alphabetical).
  const settings = Object.entries(parsed)
    .filter((entry): entry is [string, SettingValue] => entry[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  await doSetRealmUserDefaultSettings(deps, actor.realm_id, settings);
  return {};
}
