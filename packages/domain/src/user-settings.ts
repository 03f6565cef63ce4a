// A user's personal settings (Zulip's UserBaseSettings): every setting with its default, what
// GET/PATCH /settings and register answer, and the legacy groups older clients still use.
import type { UserProfile } from '@teamchat/db';

/** Every personal setting of Zulip 10 with its default (user_profile.settings stores the changed ones). */
export const USER_SETTING_DEFAULTS = {
  twenty_four_hour_time: false,
  web_mark_read_on_scroll_policy: 1,
  web_channel_default_view: 1,
  starred_message_counts: true,
  receives_typing_notifications: true,
  web_suggest_update_timezone: true,
  fluid_layout_width: false,
  high_contrast_mode: false,
  web_font_size_px: 16,
  web_line_height_percent: 140,
  color_scheme: 1,
  translate_emoticons: false,
  display_emoji_reaction_users: true,
  web_home_view: 'inbox',
  web_escape_navigates_to_home_view: true,
  left_side_userlist: false,
  emojiset: 'google',
  demote_inactive_streams: 1,
  user_list_style: 2,
  web_animate_image_previews: 'on_hover',
  web_stream_unreads_count_display_policy: 2,
  hide_ai_features: false,
  enter_sends: false,
  enable_drafts_synchronization: true,
  enable_stream_desktop_notifications: false,
  enable_stream_email_notifications: false,
  enable_stream_push_notifications: false,
  enable_stream_audible_notifications: false,
  notification_sound: 'zulip',
  enable_desktop_notifications: true,
  enable_sounds: true,
  enable_followed_topic_desktop_notifications: true,
  enable_followed_topic_email_notifications: true,
  enable_followed_topic_push_notifications: true,
  enable_followed_topic_audible_notifications: true,
  email_notifications_batching_period_seconds: 120,
  enable_offline_email_notifications: true,
  enable_offline_push_notifications: true,
  enable_online_push_notifications: true,
  enable_digest_emails: true,
  enable_marketing_emails: true,
  enable_login_emails: true,
  message_content_in_email_notifications: true,
  pm_content_in_desktop_notifications: true,
  wildcard_mentions_notify: true,
  enable_followed_topic_wildcard_mentions_notify: true,
  desktop_icon_count_display: 1,
  realm_name_in_email_notifications_policy: 1,
  automatically_follow_topics_policy: 4,
  automatically_unmute_topics_in_muted_streams_policy: 3,
  automatically_follow_topics_where_mentioned: true,
  presence_enabled: true,
  send_private_typing_notifications: true,
  send_stream_typing_notifications: true,
  send_read_receipts: true,
  allow_private_data_export: false,
  web_navigate_to_sent_message: true,
} as const;

export const AVAILABLE_NOTIFICATION_SOUNDS = ['chime', 'ding', 'zulip'];

export const EMOJISET_CHOICES = [
  { key: 'google', text: 'Google' },
  { key: 'twitter', text: 'Twitter' },
  { key: 'text', text: 'Plain text' },
];

/** A user's personal settings: the defaults, overridden by what they changed. */
export function userSettings(
  user: Pick<UserProfile, 'settings' | 'timezone' | 'default_language' | 'email_address_visibility'>,
) {
  const isObject = user.settings && typeof user.settings === 'object' && !Array.isArray(user.settings);
  const stored = isObject ? (user.settings as Record<string, unknown>) : {};
  const known = Object.fromEntries(
    Object.keys(USER_SETTING_DEFAULTS)
      .filter((name) => name in stored)
      .map((name) => [name, stored[name]]),
  );
  return {
    ...USER_SETTING_DEFAULTS,
    ...known,
    default_language: user.default_language,
    timezone: user.timezone,
    email_address_visibility: user.email_address_visibility,
    available_notification_sounds: AVAILABLE_NOTIFICATION_SOUNDS,
    emojiset_choices: EMOJISET_CHOICES,
  };
}

/**
 * Zulip's UserProfile.notification_settings_legacy: changing one also sends
 * update_global_notifications, and register reports them as top-level keys to clients
 * without user_settings_object.
 */
export const NOTIFICATION_SETTINGS_LEGACY: ReadonlySet<string> = new Set([
  'enable_desktop_notifications',
  'enable_digest_emails',
  'enable_login_emails',
  'enable_marketing_emails',
  'email_notifications_batching_period_seconds',
  'enable_offline_email_notifications',
  'enable_offline_push_notifications',
  'enable_online_push_notifications',
  'enable_sounds',
  'enable_stream_desktop_notifications',
  'enable_stream_email_notifications',
  'enable_stream_push_notifications',
  'enable_stream_audible_notifications',
  'wildcard_mentions_notify',
  'message_content_in_email_notifications',
  'notification_sound',
  'pm_content_in_desktop_notifications',
  'desktop_icon_count_display',
  'realm_name_in_email_notifications_policy',
  'presence_enabled',
]);

/** Zulip's UserProfile.display_settings_legacy (and timezone): the same, for update_display_settings. */
export const DISPLAY_SETTINGS_LEGACY: ReadonlySet<string> = new Set([
  'color_scheme',
  'default_language',
  'demote_inactive_streams',
  'emojiset',
  'enable_drafts_synchronization',
  'fluid_layout_width',
  'web_home_view',
  'high_contrast_mode',
  'left_side_userlist',
  'starred_message_counts',
  'timezone',
  'translate_emoticons',
  'twenty_four_hour_time',
  'enter_sends',
]);
