// The realm's settings in POST /register (Zulip's fetch_initial_state_data for the "realm"
// event type): the realm row, the settings it stores in its JSON column, Zulip's defaults for
// everything else, and each realm group-setting permission in its API form. Server-wide limits
// come from the server section.

import {
  AVAILABLE_NOTIFICATION_SOUNDS,
  EmailVisibility,
  EMOJISET_CHOICES,
  groupSettingValues,
  placeholderEmailDomain,
  realmUrl,
  renderMarkdown,
  USER_SETTING_DEFAULTS,
} from '@teamchat/domain';
import type { StateSection } from '../registry';

/** Realm settings Teamchat stores but does not act on, with Zulip 10's defaults. */
const REALM_SETTING_DEFAULTS = {
  realm_allow_edit_history: true,
  realm_message_edit_history_visibility_policy: 'all',
  realm_allow_message_editing: true,
  realm_message_content_edit_limit_seconds: 600,
  realm_message_content_delete_limit_seconds: null,
  realm_move_messages_within_stream_limit_seconds: 604800,
  realm_move_messages_between_streams_limit_seconds: 604800,
  realm_mandatory_topics: false,
  realm_digest_emails_enabled: false,
  realm_digest_weekday: 1,
  realm_disallow_disposable_email_addresses: true,
  realm_email_changes_disabled: false,
  realm_name_changes_disabled: false,
  realm_avatar_changes_disabled: false,
  realm_emails_restricted_to_domains: false,
  realm_send_welcome_emails: true,
  realm_message_content_allowed_in_email_notifications: true,
  realm_inline_image_preview: true,
  realm_inline_url_embed_preview: false,
  realm_require_unique_names: false,
  realm_want_advertise_in_communities_directory: false,
  realm_video_chat_provider: 1,
  realm_jitsi_server_url: null,
  realm_giphy_rating: 2,
  realm_default_code_block_language: '',
  realm_enable_read_receipts: false,
  realm_enable_guest_user_dm_warning: true,
  realm_enable_guest_user_indicator: true,
  realm_presence_disabled: false,
  realm_org_type: 0,
  realm_name_in_email_notifications_policy: 1,
  realm_new_stream_announcements_stream_id: -1,
  realm_signup_announcements_stream_id: -1,
  realm_zulip_update_announcements_stream_id: -1,
  realm_moderation_request_channel_id: -1,
} as const;

const AUTHENTICATION_METHODS = ['Email', 'Dev', 'LDAP', 'RemoteUser', 'GitHub', 'AzureAD', 'GitLab', 'Apple', 'Google', 'SAML', 'OpenID Connect'];

export const realmSection: StateSection = {
  eventType: 'realm',
  async fetch({ db, realm, scheme }) {
    const stored = realm.settings && typeof realm.settings === 'object' && !Array.isArray(realm.settings) ? (realm.settings as Record<string, unknown>) : {};
    const settings = Object.fromEntries(Object.entries(REALM_SETTING_DEFAULTS).map(([key, value]) => [key, key in stored ? stored[key] : value]));
    const groupSettings = await groupSettingValues(db, 'realm', realm.id);
    const url = realmUrl(realm, scheme);
    return {
      realm_name: realm.name,
      realm_description: realm.description ? renderMarkdown(realm.description) : '',
      realm_date_created: Math.floor(realm.date_created.getTime() / 1000),
      realm_invite_required: realm.invite_required,
      realm_default_language: realm.default_language,
      realm_waiting_period_threshold: realm.waiting_period_threshold,
      realm_enable_spectator_access: realm.enable_spectator_access,
      realm_message_retention_days: realm.message_retention_days,
      realm_upload_quota_mib: realm.upload_quota_bytes === null ? null : Number(realm.upload_quota_bytes / 1048576n),
      ...settings,
      ...Object.fromEntries(Object.entries(groupSettings).map(([name, value]) => [`realm_${name}`, value])),
      realm_uri: url,
      realm_url: url,
      realm_icon_url: `${url}/static/images/logo/zulip-icon-128x128.png`,
      realm_icon_source: 'G',
      realm_logo_url: `${url}/static/images/logo/zulip-org-logo.svg`,
      realm_logo_source: 'D',
      realm_night_logo_url: `${url}/static/images/logo/zulip-org-logo.svg`,
      realm_night_logo_source: 'D',
      realm_bot_domain: placeholderEmailDomain(realm),
      realm_authentication_methods: Object.fromEntries(
        AUTHENTICATION_METHODS.map((name) =>
          name === 'Email' ? [name, { enabled: true, available: true }] : [name, { enabled: false, available: false, unavailable_reason: 'This authentication method is not configured on this server.' }],
        ),
      ),
      realm_available_video_chat_providers: { disabled: { name: 'None', id: 0 }, jitsi_meet: { name: 'Jitsi Meet', id: 1 } },
      realm_default_external_accounts: {
        github: { name: 'GitHub', text: 'GitHub username', hint: '', url_pattern: 'https://github.com/%(username)s' },
        twitter: { name: 'Twitter', text: 'Twitter username', hint: '', url_pattern: 'https://twitter.com/%(username)s' },
      },
      realm_is_zephyr_mirror_realm: false,
      realm_email_auth_enabled: true,
      realm_password_auth_enabled: true,
      realm_push_notifications_enabled: false,
      realm_push_notifications_enabled_end_timestamp: null,
      realm_plan_type: 1,
      realm_billing: {},
      realm_user_settings_defaults: {
        ...USER_SETTING_DEFAULTS,
        default_language: realm.default_language,
        email_address_visibility: EmailVisibility.EVERYONE,
        available_notification_sounds: AVAILABLE_NOTIFICATION_SOUNDS,
        emojiset_choices: EMOJISET_CHOICES,
      },
    };
  },
};

/**
 * Event types whose features hold no data on this server (no custom emoji, allowed-domain
 * lists, scheduled messages or saved snippets can be created yet): their state is
 * empty, but present, because clients that ask for it read it unconditionally (zulip-terminal
 * reads realm_emoji at start-up).
 */
export const EMPTY_FEATURE_SECTIONS: StateSection[] = [
  { eventType: 'realm_emoji', fetch: async () => ({ realm_emoji: {} }) },
  { eventType: 'realm_domains', fetch: async () => ({ realm_domains: [] }) },
  { eventType: 'scheduled_messages', fetch: async () => ({ scheduled_messages: [] }) },
  { eventType: 'saved_snippets', fetch: async () => ({ saved_snippets: [] }) },
];
