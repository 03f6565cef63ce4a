import { lockForChange, type Realm, type TxClient } from '@teamchat/db';
import { generatedImageUrl, isGravatarEnabled } from './gravatar';
import { realmImageKeys } from './uploaded-images';

/** The realm's canonical URL, e.g. "https://chat.example.com". */
export function realmUrl(realm: Pick<Realm, 'host'>, scheme: string): string {
  return `${scheme}://${realm.host}`;
}

/** The realm's icon (Zulip's get_realm_icon_url): the uploaded one (icon_source "U") or a generated one. */
export function realmIconUrl(realm: Pick<Realm, 'id' | 'string_id' | 'icon_source' | 'icon_version'>): string {
  if (realm.icon_source === 'U') return `/${realmImageKeys(realm.id, 'icon').resized}?version=${realm.icon_version}`;
  // Zulip: Gravatar's image unversioned; the default avatar at version 0.
  return generatedImageUrl(realm.string_id, isGravatarEnabled() ? {} : { version: 0 });
}

/** Domain of placeholder API emails (user{id}@{domain}): the realm's host without its port. */
export function placeholderEmailDomain(realm: Pick<Realm, 'host'>): string {
  return realm.host.split(':')[0] || 'teamchat.invalid';
}

export function placeholderEmail(userId: number, realm: Pick<Realm, 'host'>): string {
  return `user${userId}@${placeholderEmailDomain(realm)}`;
}

/**
 * Where the server's unicode emoji table is served (register's `server_emoji_data_url`, under
 * the realm's URL): Zulip's path for it, `{"code_to_names": {code: [names...]}}`.
 */
export const EMOJI_DATA_PATH = '/static/generated/emoji/emoji_api.json';

/** Server-wide limits and defaults that register and server_settings report. */
export const SERVER_LIMITS = {
  max_stream_name_length: 60,
  max_stream_description_length: 1024,
  max_topic_length: 60,
  max_message_length: 10000,
  max_file_upload_size_mib: 100,
  event_queue_longpoll_timeout_seconds: 90,
  server_typing_started_wait_period_milliseconds: 30000,
  server_typing_stopped_wait_period_milliseconds: 12000,
  server_typing_started_expiry_period_milliseconds: 45000,
  realm_empty_topic_display_name: 'general chat',
} as const;

/**
 * The realm settings kept in realm.settings (JSON), under their register names, with Zulip 10's
 * defaults. Register reports them all; the messages service acts on the editing, deletion and
 * move limits.
 */
export const REALM_SETTING_DEFAULTS = {
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

export type RealmSettings = { -readonly [K in keyof typeof REALM_SETTING_DEFAULTS]: unknown };

/** Every setting of REALM_SETTING_DEFAULTS: the stored value, or the default. */
export function realmSettings(realm: Pick<Realm, 'settings'>): RealmSettings {
  const stored =
    realm.settings && typeof realm.settings === 'object' && !Array.isArray(realm.settings)
      ? (realm.settings as Record<string, unknown>)
      : {};
  return Object.fromEntries(
    Object.entries(REALM_SETTING_DEFAULTS).map(([key, value]) => [key, key in stored ? stored[key] : value]),
  ) as RealmSettings;
}

/** Serialises an organisation's changes that count or list its rows (owners, active users, linkifiers, invitations, exports). */
export function lockRealm(db: Pick<TxClient, '$queryRaw'>, realmId: number): Promise<void> {
  return lockForChange(db, 'realm', realmId);
}
