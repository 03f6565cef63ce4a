// The personal settings PATCH /settings changes (Zulip's json_change_settings and
// UserProfile.property_types): how each is parsed and checked, and which legacy event
// (update_display_settings / update_global_notifications) clients before feature level 89 get.

import { InvalidArgumentError, param, v, type ParamType } from '@teamchat/core';
import { AVAILABLE_NOTIFICATION_SOUNDS, EMOJISET_CHOICES, USER_SETTING_DEFAULTS } from '@teamchat/domain';

export type SettingValue = boolean | number | string;

/** Integer settings limited to a set of values (UserProfile's *_CHOICES), as zulip.yaml lists them. */
const INT_CHOICES: Record<string, number[]> = {
  web_mark_read_on_scroll_policy: [1, 2, 3],
  web_channel_default_view: [1, 2],
  color_scheme: [1, 2, 3],
  demote_inactive_streams: [1, 2, 3],
  user_list_style: [1, 2, 3],
  web_stream_unreads_count_display_policy: [1, 2, 3],
  desktop_icon_count_display: [1, 2, 3, 4],
  realm_name_in_email_notifications_policy: [1, 2, 3],
  automatically_follow_topics_policy: [1, 2, 3, 4],
  automatically_unmute_topics_in_muted_streams_policy: [1, 2, 3, 4],
};

const WEB_HOME_VIEWS = ['recent_topics', 'inbox', 'all_messages'] as const;
const WEB_ANIMATE_IMAGE_PREVIEWS = ['always', 'on_hover', 'never'] as const;
const MAX_EMAIL_BATCHING_SECONDS = 7 * 24 * 60 * 60;

/**
 * The languages a user may choose (Zulip's get_available_language_codes: the locales it ships
 * translations for), named in English for language_name.
 */
export const LANGUAGE_CODES = [
  'ar',
  'be',
  'bg',
  'bn',
  'ca',
  'cs',
  'cy',
  'da',
  'de',
  'el',
  'en',
  'en_GB',
  'eo',
  'es',
  'fa',
  'fi',
  'fr',
  'gl',
  'gu',
  'hi',
  'hu',
  'id',
  'it',
  'ja',
  'ko',
  'lt',
  'ml',
  'mn',
  'nl',
  'no',
  'pl',
  'pt',
  'pt_BR',
  'pt_PT',
  'ro',
  'ru',
  'si',
  'sk',
  'sr',
  'sv',
  'ta',
  'te',
  'tl',
  'tr',
  'uk',
  'uz',
  'vi',
  'zh-hans',
  'zh-hant',
  'zh_TW',
] as const;

const languageNames = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'code' });

/** The English name of a language code (Zulip's get_language_name), e.g. "de" → "German". */
export function languageName(code: string): string {
  const tag = code
    .replace('_', '-')
    .replace(/^zh-hans$/i, 'zh-Hans')
    .replace(/^zh-hant$/i, 'zh-Hant');
  try {
    return languageNames.of(tag) ?? code;
  } catch {
    return code;
  }
}

/**
 * Zulip's check_timezone: an IANA time zone name (aliases like "US/Eastern" included), spelled
 * as the tz database spells it.
 */
export function isKnownTimezone(name: string): boolean {
  if (!/^[A-Z][A-Za-z0-9_+-]*(\/[A-Z][A-Za-z0-9_+-]*)*$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const timezoneType: ParamType<string> = {
  decode(raw, varName) {
    // The pattern admits no NUL (PostgreSQL text cannot hold one).
    if (!isKnownTimezone(raw)) throw new InvalidArgumentError(`${varName} is not a recognized time zone`);
    return raw;
  },
};

function intIn(choices: number[]): ParamType<number> {
  return param.json(
    v.refine(v.int(), (value, varName) => {
      if (!choices.includes(value)) throw new InvalidArgumentError(`Invalid ${varName}`);
    }),
  );
}

/** How one setting's parameter is read. */
function settingType(name: string): ParamType<SettingValue> {
  if (name in INT_CHOICES) return intIn(INT_CHOICES[name]);
  switch (name) {
    case 'web_home_view':
      return param.enumString(...WEB_HOME_VIEWS);
    case 'web_animate_image_previews':
      return param.enumString(...WEB_ANIMATE_IMAGE_PREVIEWS);
    case 'emojiset':
      return param.enumString(...EMOJISET_CHOICES.map((choice) => choice.key));
  }
  const defaultValue = (USER_SETTING_DEFAULTS as Record<string, SettingValue>)[name];
  if (typeof defaultValue === 'boolean') return param.bool();
  if (typeof defaultValue === 'number') return param.int();
  return param.string();
}

/** Settings stored in user_profile.settings (the JSON column), each with its parameter type. */
export const STORED_SETTING_TYPES: Record<string, ParamType<SettingValue>> = Object.fromEntries(
  Object.keys(USER_SETTING_DEFAULTS).map((name) => [name, settingType(name)]),
);

export const defaultLanguageType: ParamType<string> = param.string();
export { timezoneType };

/** Zulip's check_settings_values: the checks REQ cannot make. */
export function checkSettingValues(values: {
  default_language?: string;
  notification_sound?: SettingValue;
  email_notifications_batching_period_seconds?: SettingValue;
}): void {
  if (
    values.default_language !== undefined &&
    !(LANGUAGE_CODES as readonly string[]).includes(values.default_language)
  ) {
    throw new InvalidArgumentError('Invalid default_language');
  }
  const sound = values.notification_sound;
  if (sound !== undefined && sound !== 'none' && !AVAILABLE_NOTIFICATION_SOUNDS.includes(String(sound))) {
    throw new InvalidArgumentError(`Invalid notification sound '${sound}'`);
  }
  const period = values.email_notifications_batching_period_seconds;
  if (period !== undefined && (Number(period) <= 0 || Number(period) > MAX_EMAIL_BATCHING_SECONDS)) {
    throw new InvalidArgumentError(`Invalid email batching period: ${period} seconds`);
  }
}
