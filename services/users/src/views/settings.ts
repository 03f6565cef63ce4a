import { optional, param, SESSION_ID_HEADER, type AuthedContext } from '@teamchat/core';
import { checkFullName, loadActor } from '@teamchat/domain';
import { doChangeSettings } from '../actions/settings';
import type { UsersDeps } from '../deps';
import { requireHuman } from '../lib/access';
import {
  checkSettingValues,
  defaultLanguageType,
  STORED_SETTING_TYPES,
  timezoneType,
  type SettingValue,
} from '../lib/settings';

const settingSpecs = Object.fromEntries(
  Object.entries(STORED_SETTING_TYPES).map(([name, type]) => [name, optional(type)]),
);

/**
 * PATCH /settings (Zulip's json_change_settings, human users only). `email` (an address change
 * needs a confirmation email this server cannot send) is left unread, so it is reported in
 * ignored_parameters_unsupported.
 */
export async function updateSettings({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireHuman(actor);
  const { full_name, old_password, new_password, default_language, timezone } = params.parse({
    full_name: optional(param.string()),
    old_password: optional(param.string()),
    new_password: optional(param.string()),
    default_language: optional(defaultLanguageType),
    timezone: optional(timezoneType),
  });
  const stored = params.parse(settingSpecs) as Record<string, SettingValue | undefined>;
  checkSettingValues({
    default_language,
    notification_sound: stored.notification_sound,
    email_notifications_batching_period_seconds: stored.email_notifications_batching_period_seconds,
  });

  // Zulip checks the name only when it differs, and strips it.
  const fullName = full_name !== undefined && full_name !== actor.full_name ? checkFullName(full_name) : undefined;
  const settings: [string, SettingValue][] = [];
  for (const [name, value] of Object.entries({ ...stored, default_language, timezone })) {
    if (value !== undefined) settings.push([name, value]);
  }
  await doChangeSettings(deps, actor.id, {
    fullName,
    password:
      new_password !== undefined
        ? { old: old_password, new: new_password, keepSession: req.get(SESSION_ID_HEADER) }
        : undefined,
    settings,
  });
  return {};
}
