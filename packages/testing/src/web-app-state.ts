// What Zulip 10.2's web app requires of the state it boots from (`state_data` in the home page,
// register's answer under the web app's arguments): the app parses it with zod
// (web/src/state_data.ts and the schemas it imports), and one missing key or wrong type is a
// blank page. These are our own zod schemas of those shapes, written from reading the app's;
// like the app's, they ignore keys they do not name.
import { z } from 'zod';
import { WEB_APP_CLIENT_CAPABILITIES } from '@teamchat/domain';

/** Register's arguments as Zulip's home view passes them (zerver/lib/home.py, build_page_params_for_home_page_load). */
export const WEB_APP_REGISTER_PARAMS = {
  apply_markdown: true,
  client_gravatar: true,
  slim_presence: true,
  include_subscribers: true,
  include_streams: false,
  client_capabilities: WEB_APP_CLIENT_CAPABILITIES,
};

const num = z.number();
const str = z.string();
const bool = z.boolean();
const ids = z.array(num);
const idAndName = z.object({ id: num, name: str });
const nullableNum = num.nullable();

/** A group-setting value: a group's id, or an anonymous group. */
const groupValue = z.union([num, z.object({ direct_members: ids, direct_subgroups: ids })]);

const permissionSettingConfig = z.object({
  require_system_group: bool,
  allow_internet_group: bool,
  allow_nobody_group: bool,
  allow_everyone_group: bool,
  default_group_name: str,
  default_for_system_groups: str.nullable(),
  allowed_system_groups: z.array(str),
});

const userObject = z
  .object({
    user_id: num,
    email: str,
    delivery_email: str.nullable(),
    full_name: str,
    date_joined: str,
    is_active: bool.optional(),
    is_owner: bool,
    is_admin: bool,
    is_guest: bool,
    is_moderator: bool.optional(),
    role: num,
    timezone: str.optional(),
    avatar_url: str.nullish(),
    avatar_version: num,
    profile_data: z.record(z.coerce.number(), z.object({ value: str, rendered_value: str.nullish() })).optional(),
    is_system_bot: z.literal(true).optional(),
  })
  .and(
    z.discriminatedUnion('is_bot', [
      z.object({ is_bot: z.literal(false), bot_type: z.null().optional() }),
      z.object({ is_bot: z.literal(true), bot_type: num, bot_owner_id: nullableNum }),
    ]),
  );

const ownedBot = z.object({
  user_id: num,
  email: str,
  full_name: str,
  api_key: str,
  avatar_url: str,
  bot_type: num,
  is_active: bool,
  owner_id: nullableNum,
  default_all_public_streams: bool,
  default_sending_stream: str.nullable(),
  default_events_register_stream: str.nullable(),
  services: z.union([
    z.array(z.object({ base_url: str, interface: num, token: str })),
    z.array(z.object({ service_name: str, config_data: z.record(str) })),
  ]),
});

const channelSettings = {
  can_add_subscribers_group: groupValue,
  can_administer_channel_group: groupValue,
  can_remove_subscribers_group: groupValue,
  can_send_message_group: groupValue,
  can_subscribe_group: groupValue,
};

const channel = z.object({
  stream_id: num,
  name: str,
  description: str,
  rendered_description: str,
  date_created: num,
  creator_id: nullableNum,
  first_message_id: nullableNum,
  invite_only: bool,
  is_web_public: bool,
  is_announcement_only: bool,
  is_archived: bool,
  is_recently_active: bool,
  history_public_to_subscribers: bool,
  message_retention_days: nullableNum,
  stream_post_policy: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)]),
  stream_weekly_traffic: nullableNum,
  ...channelSettings,
});

const subscription = channel.extend({
  color: str,
  is_muted: bool,
  pin_to_top: bool,
  audible_notifications: bool.nullable(),
  desktop_notifications: bool.nullable(),
  email_notifications: bool.nullable(),
  push_notifications: bool.nullable(),
  wildcard_mentions_notify: bool.nullable(),
  subscribers: ids.optional(),
});

const userGroupSettings = {
  can_add_members_group: groupValue,
  can_join_group: groupValue,
  can_leave_group: groupValue,
  can_manage_group: groupValue,
  can_mention_group: groupValue,
  can_remove_members_group: groupValue,
};

const userGroup = z.object({
  id: num,
  name: str,
  description: str,
  creator_id: nullableNum,
  date_created: nullableNum,
  members: ids,
  direct_subgroup_ids: ids,
  is_system_group: bool,
  deactivated: bool,
  ...userGroupSettings,
});

const scheduledMessage = z
  .object({
    scheduled_message_id: num,
    content: str,
    rendered_content: str,
    scheduled_delivery_timestamp: num,
    failed: bool,
  })
  .and(
    z.discriminatedUnion('type', [
      z.object({ type: z.literal('stream'), to: num, topic: str }),
      z.object({ type: z.literal('private'), to: ids }),
    ]),
  );

const userStatus = z.object({ status_text: str.optional(), away: bool.optional() }).and(
  z.union([
    z.object({
      emoji_name: str,
      emoji_code: str,
      reaction_type: z.enum(['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji']),
    }),
    z.object({ emoji_name: z.undefined() }),
  ]),
);

/** Settings both user_settings and realm_user_settings_defaults carry (the app's two schemas). */
const sharedPersonalSettings = {
  allow_private_data_export: bool,
  automatically_follow_topics_policy: num,
  automatically_follow_topics_where_mentioned: bool,
  automatically_unmute_topics_in_muted_streams_policy: num,
  available_notification_sounds: z.array(str),
  color_scheme: num,
  default_language: str,
  demote_inactive_streams: num,
  desktop_icon_count_display: num,
  display_emoji_reaction_users: bool,
  email_address_visibility: num,
  email_notifications_batching_period_seconds: num,
  emojiset: str,
  emojiset_choices: z.array(z.object({ key: str, text: str })),
  enable_desktop_notifications: bool,
  enable_digest_emails: bool,
  enable_drafts_synchronization: bool,
  enable_followed_topic_audible_notifications: bool,
  enable_followed_topic_desktop_notifications: bool,
  enable_followed_topic_email_notifications: bool,
  enable_followed_topic_push_notifications: bool,
  enable_followed_topic_wildcard_mentions_notify: bool,
  enable_login_emails: bool,
  enable_marketing_emails: bool,
  enable_offline_email_notifications: bool,
  enable_offline_push_notifications: bool,
  enable_online_push_notifications: bool,
  enable_sounds: bool,
  enable_stream_audible_notifications: bool,
  enable_stream_desktop_notifications: bool,
  enable_stream_email_notifications: bool,
  enable_stream_push_notifications: bool,
  enter_sends: bool,
  fluid_layout_width: bool,
  hide_ai_features: bool,
  high_contrast_mode: bool,
  left_side_userlist: bool,
  message_content_in_email_notifications: bool,
  notification_sound: str,
  pm_content_in_desktop_notifications: bool,
  presence_enabled: bool,
  realm_name_in_email_notifications_policy: num,
  receives_typing_notifications: bool,
  send_private_typing_notifications: bool,
  send_read_receipts: bool,
  send_stream_typing_notifications: bool,
  starred_message_counts: bool,
  translate_emoticons: bool,
  twenty_four_hour_time: bool,
  user_list_style: num,
  web_channel_default_view: num,
  web_escape_navigates_to_home_view: bool,
  web_font_size_px: num,
  web_line_height_percent: num,
  web_mark_read_on_scroll_policy: num,
  web_navigate_to_sent_message: bool,
  web_stream_unreads_count_display_policy: num,
  wildcard_mentions_notify: bool,
};

const userSettings = z.object({
  ...sharedPersonalSettings,
  timezone: str,
  web_animate_image_previews: z.enum(['always', 'on_hover', 'never']),
  web_home_view: z.enum(['inbox', 'recent_topics', 'all_messages']),
  web_suggest_update_timezone: bool,
});

const realmUserSettingsDefaults = z.object({
  ...sharedPersonalSettings,
  web_animate_image_previews: str,
  web_home_view: str,
});

/** The current user's keys (the app's current_user). */
const currentUser = {
  user_id: num,
  email: str,
  delivery_email: str,
  full_name: str,
  avatar_source: str,
  avatar_url: str.nullish(),
  avatar_url_medium: str.nullish(),
  is_owner: bool,
  is_admin: bool,
  is_moderator: bool,
  is_guest: bool,
  can_create_streams: bool,
  can_create_public_streams: bool,
  can_create_private_streams: bool,
  can_create_web_public_streams: bool,
  can_invite_others_to_realm: bool,
  has_zoom_token: bool,
};

/** Realm permission settings the app reads as group-setting values. */
const REALM_GROUP_VALUE_SETTINGS = [
  'can_add_custom_emoji_group',
  'can_add_subscribers_group',
  'can_create_bots_group',
  'can_create_groups',
  'can_create_public_channel_group',
  'can_create_private_channel_group',
  'can_create_write_only_bots_group',
  'can_delete_any_message_group',
  'can_delete_own_message_group',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
  'can_mention_many_users_group',
  'can_move_messages_between_channels_group',
  'can_move_messages_between_topics_group',
  'can_resolve_topics_group',
  'can_summarize_topics_group',
  'create_multiuse_invite_group',
  'direct_message_initiator_group',
  'direct_message_permission_group',
];

/** The two realm permission settings the app reads as a group's id. */
const REALM_GROUP_ID_SETTINGS = ['can_access_all_users_group', 'can_create_web_public_channel_group'];

/** The names of a table of permission settings, as the app's enum of them. */
const settingNames = (names: string[]) => z.enum(names as [string, ...string[]]);

const videoChatProvider = z.object({ name: str, id: num });

/** The organisation's and the server's keys (the app's realm). */
const realm = {
  ...Object.fromEntries(REALM_GROUP_VALUE_SETTINGS.map((name) => [`realm_${name}`, groupValue])),
  ...Object.fromEntries(REALM_GROUP_ID_SETTINGS.map((name) => [`realm_${name}`, num])),
  custom_profile_fields: z.array(
    z.object({
      id: num,
      name: str,
      hint: str,
      type: num,
      order: num,
      field_data: str,
      required: bool,
      editable_by_user: bool,
      display_in_profile_summary: bool.optional(),
    }),
  ),
  custom_profile_field_types: z.object(
    Object.fromEntries(
      ['SHORT_TEXT', 'LONG_TEXT', 'DATE', 'SELECT', 'URL', 'EXTERNAL_ACCOUNT', 'USER', 'PRONOUNS'].map((kind) => [
        kind,
        idAndName,
      ]),
    ),
  ),
  demo_organization_scheduled_deletion_date: num.optional(),
  giphy_api_key: str,
  giphy_rating_options: z.record(idAndName).and(z.object({ disabled: idAndName })),
  max_avatar_file_size_mib: num,
  max_file_upload_size_mib: num,
  max_icon_file_size_mib: num,
  max_logo_file_size_mib: num,
  max_message_length: num,
  max_stream_description_length: num,
  max_stream_name_length: num,
  max_topic_length: num,
  password_min_guesses: num,
  password_min_length: num,
  password_max_length: num,
  realm_allow_message_editing: bool,
  realm_authentication_methods: z.record(
    z.object({ enabled: bool, available: bool, unavailable_reason: str.optional() }),
  ),
  realm_available_video_chat_providers: z.object({
    disabled: videoChatProvider,
    jitsi_meet: videoChatProvider,
    zoom: videoChatProvider.optional(),
    zoom_server_to_server: videoChatProvider.optional(),
    big_blue_button: videoChatProvider.optional(),
  }),
  realm_avatar_changes_disabled: bool,
  realm_bot_domain: str,
  realm_date_created: num,
  realm_default_code_block_language: str,
  realm_default_external_accounts: z.record(z.object({ name: str, text: str, hint: str, url_pattern: str })),
  realm_default_language: str,
  realm_description: str,
  realm_digest_emails_enabled: bool,
  realm_digest_weekday: num,
  realm_disallow_disposable_email_addresses: bool,
  realm_domains: z.array(z.object({ domain: str, allow_subdomains: bool })),
  realm_email_auth_enabled: bool,
  realm_email_changes_disabled: bool,
  realm_emails_restricted_to_domains: bool,
  realm_embedded_bots: z.array(z.object({ name: str, config: z.record(str) })),
  realm_empty_topic_display_name: str,
  realm_enable_guest_user_dm_warning: bool,
  realm_enable_guest_user_indicator: bool,
  realm_enable_read_receipts: bool,
  realm_enable_spectator_access: bool,
  realm_giphy_rating: num,
  realm_icon_source: str,
  realm_icon_url: str,
  realm_incoming_webhook_bots: z.array(
    z.object({
      name: str,
      display_name: str,
      all_event_types: z.array(str).nullable(),
      config_options: z.array(z.object({ key: str, label: str, validator: str })).optional(),
    }),
  ),
  realm_inline_image_preview: bool,
  realm_inline_url_embed_preview: bool,
  realm_invite_required: bool,
  realm_is_zephyr_mirror_realm: bool,
  realm_jitsi_server_url: str.nullable(),
  realm_linkifiers: z.array(z.object({ id: num, pattern: str, url_template: str })),
  realm_logo_source: str,
  realm_logo_url: str,
  realm_mandatory_topics: bool,
  realm_message_content_allowed_in_email_notifications: bool,
  realm_message_content_edit_limit_seconds: nullableNum,
  realm_message_content_delete_limit_seconds: nullableNum,
  realm_message_edit_history_visibility_policy: z.enum(['all', 'moves', 'none']),
  realm_message_retention_days: num,
  realm_move_messages_between_streams_limit_seconds: nullableNum,
  realm_move_messages_within_stream_limit_seconds: nullableNum,
  realm_name_changes_disabled: bool,
  realm_name: str,
  realm_new_stream_announcements_stream_id: num,
  realm_night_logo_source: str,
  realm_night_logo_url: str,
  realm_org_type: num,
  realm_password_auth_enabled: bool,
  realm_plan_type: num,
  realm_playgrounds: z.array(z.object({ id: num, name: str, pygments_language: str, url_template: str })),
  realm_presence_disabled: bool,
  realm_push_notifications_enabled: bool,
  realm_push_notifications_enabled_end_timestamp: nullableNum,
  realm_require_unique_names: bool,
  realm_send_welcome_emails: bool,
  realm_signup_announcements_stream_id: num,
  realm_upload_quota_mib: nullableNum,
  realm_url: str,
  realm_video_chat_provider: num,
  realm_waiting_period_threshold: num,
  realm_want_advertise_in_communities_directory: bool,
  realm_zulip_update_announcements_stream_id: num,
  server_avatar_changes_disabled: bool,
  server_can_summarize_topics: bool,
  server_emoji_data_url: str,
  server_inline_image_preview: bool,
  server_inline_url_embed_preview: bool,
  server_jitsi_server_url: str.nullable(),
  server_max_deactivated_realm_deletion_days: nullableNum,
  server_min_deactivated_realm_deletion_days: nullableNum,
  server_name_changes_disabled: bool,
  server_needs_upgrade: bool,
  server_presence_offline_threshold_seconds: num,
  server_presence_ping_interval_seconds: num,
  // The app parses each table's names with an enum of the settings it knows and stops at any other
  // (check_group_permission_settings_data): Zulip 10.2's 22, 5 and 6.
  server_supported_permission_settings: z.object({
    realm: z.record(settingNames([...REALM_GROUP_VALUE_SETTINGS, ...REALM_GROUP_ID_SETTINGS]), permissionSettingConfig),
    stream: z.record(settingNames(Object.keys(channelSettings)), permissionSettingConfig),
    group: z.record(settingNames(Object.keys(userGroupSettings)), permissionSettingConfig),
  }),
  server_thumbnail_formats: z.array(
    z.object({ name: str, max_width: num, max_height: num, format: str, animated: bool }),
  ),
  server_typing_started_expiry_period_milliseconds: num,
  server_typing_started_wait_period_milliseconds: num,
  server_typing_stopped_wait_period_milliseconds: num,
  server_web_public_streams_enabled: bool,
  settings_send_digest_emails: bool,
  stop_words: z.array(str),
  upgrade_text_for_wide_organization_logo: str,
  zulip_feature_level: num,
  zulip_merge_base: str,
  zulip_plan_is_not_limited: bool,
  zulip_version: str,
};

const withMessageIds = { unread_message_ids: ids };

export const webAppStateSchema = z.object({
  ...currentUser,
  ...realm,
  alert_words: z.array(str),
  realm_emoji: z.record(
    z.object({
      id: str,
      name: str,
      author_id: num,
      deactivated: bool,
      source_url: str,
      still_url: str.nullable(),
    }),
  ),
  realm_billing: z.object({ has_pending_sponsorship_request: bool }),
  realm_bots: z.array(ownedBot),
  realm_users: z.array(userObject),
  realm_non_active_users: z.array(userObject),
  cross_realm_bots: z.array(userObject),
  recent_private_conversations: z.array(z.object({ max_message_id: num, user_ids: ids })),
  presences: z.record(
    z.coerce.number(),
    z.object({ active_timestamp: num.optional(), idle_timestamp: num.optional() }),
  ),
  server_timestamp: num,
  presence_last_update_id: num.optional(),
  saved_snippets: z.array(z.object({ id: num, title: str, content: str, date_created: num })),
  starred_messages: ids,
  subscriptions: z.array(subscription),
  unsubscribed: z.array(subscription),
  never_subscribed: z.array(channel.extend({ subscribers: ids.optional() })),
  realm_default_streams: ids,
  realm_user_groups: z.array(userGroup),
  unread_msgs: z.object({
    count: num,
    old_unreads_missing: bool,
    mentions: ids,
    pms: z.array(z.object({ other_user_id: num, ...withMessageIds })),
    streams: z.array(z.object({ stream_id: num, topic: str, ...withMessageIds })),
    huddles: z.array(z.object({ user_ids_string: str, ...withMessageIds })),
  }),
  muted_users: z.array(z.object({ id: num, timestamp: num })),
  user_topics: z.array(z.object({ stream_id: num, topic_name: str, last_updated: num, visibility_policy: num })),
  user_status: z.record(userStatus),
  user_settings: userSettings,
  realm_user_settings_defaults: realmUserSettingsDefaults,
  scheduled_messages: z.array(scheduledMessage),
  // The app only passes these on to its event loop; it requires the keys, of any value.
  queue_id: z.unknown().refine((value) => value !== undefined, 'Required'),
  last_event_id: z.unknown().refine((value) => value !== undefined, 'Required'),
  server_generation: z.unknown().refine((value) => value !== undefined, 'Required'),
  event_queue_longpoll_timeout_seconds: z.unknown().refine((value) => value !== undefined, 'Required'),
  max_message_id: num,
  onboarding_steps: z.array(z.object({ type: z.enum(['one_time_notice', 'one_time_action']), name: str })),
  navigation_tour_video_url: str.nullable(),
});

/** Every way `state` fails the app's parse, one line each: "path: message". Empty when the app boots. */
export function webAppStateProblems(state: unknown): string[] {
  const result = webAppStateSchema.safeParse(state);
  if (result.success) return [];
  return result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
}
