// Server-level keys of POST /register (Zulip sends them with the `realm` event type): limits,
// protocol timings and server capabilities. They do not depend on the user; the two topic
// keys are the ones the event tier's empty-topic rewrite relies on, so they are here too (the
// realm section may send the same values).

import {
  SERVER_LIMITS,
  serverSupportedPermissionSettings,
  THUMBNAIL_OUTPUT_FORMATS,
  thumbnailFormatName,
} from '@teamchat/domain';
import type { StateSection } from '../registry';

/** Changes on every server start, as Zulip's settings.SERVER_GENERATION does. */
const SERVER_GENERATION = Math.floor(Date.now() / 1000);

/**
 * The thumbnail formats image previews come in: Zulip's THUMBNAIL_OUTPUT_FORMATS, the ones the
 * worker makes of every image (packages/domain/src/image-previews.ts), named as the files are.
 * The web app picks its preferred ones from this list at boot and fails on an empty one.
 */
const THUMBNAIL_FORMATS = THUMBNAIL_OUTPUT_FORMATS.map((format) => ({
  name: thumbnailFormatName(format),
  max_width: format.maxWidth,
  max_height: format.maxHeight,
  format: format.extension,
  animated: format.animated,
}));

/** The maximum ratings an organisation may choose for GIFs (Zulip's Realm.GIPHY_RATING_OPTIONS). */
const GIPHY_RATING_OPTIONS = {
  disabled: { name: 'GIPHY integration disabled', id: 0 },
  y: { name: 'Allow GIFs rated Y (Very young audience)', id: 1 },
  g: { name: 'Allow GIFs rated G (General audience)', id: 2 },
  pg: { name: 'Allow GIFs rated PG (Parental guidance)', id: 3 },
  'pg-13': { name: 'Allow GIFs rated PG-13 (Parental guidance - under 13)', id: 4 },
  r: { name: 'Allow GIFs rated R (Restricted)', id: 5 },
};

export const serverSection: StateSection = {
  eventType: 'realm',
  async fetch({ realm, webPublicStreamsEnabled = true }) {
    return {
      max_stream_name_length: SERVER_LIMITS.max_stream_name_length,
      max_stream_description_length: SERVER_LIMITS.max_stream_description_length,
      max_topic_length: SERVER_LIMITS.max_topic_length,
      max_message_length: SERVER_LIMITS.max_message_length,
      max_file_upload_size_mib: SERVER_LIMITS.max_file_upload_size_mib,
      max_avatar_file_size_mib: 5,
      max_icon_file_size_mib: 5,
      max_logo_file_size_mib: 5,
      event_queue_longpoll_timeout_seconds: SERVER_LIMITS.event_queue_longpoll_timeout_seconds,
      server_typing_started_wait_period_milliseconds: SERVER_LIMITS.server_typing_started_wait_period_milliseconds,
      server_typing_stopped_wait_period_milliseconds: SERVER_LIMITS.server_typing_stopped_wait_period_milliseconds,
      server_typing_started_expiry_period_milliseconds: SERVER_LIMITS.server_typing_started_expiry_period_milliseconds,
      server_presence_ping_interval_seconds: 60,
      server_presence_offline_threshold_seconds: 140,
      server_generation: SERVER_GENERATION,
      server_inline_image_preview: true,
      server_inline_url_embed_preview: false,
      server_avatar_changes_disabled: false,
      server_name_changes_disabled: false,
      server_needs_upgrade: false,
      server_web_public_streams_enabled: webPublicStreamsEnabled,
      server_can_summarize_topics: false,
      server_thumbnail_formats: THUMBNAIL_FORMATS,
      server_supported_permission_settings: serverSupportedPermissionSettings(),
      giphy_rating_options: GIPHY_RATING_OPTIONS,
      server_jitsi_server_url: null,
      server_min_deactivated_realm_deletion_days: 0,
      server_max_deactivated_realm_deletion_days: null,
      development_environment: false,
      password_min_length: 6,
      password_max_length: 100,
      password_min_guesses: 10000,
      settings_send_digest_emails: false,
      zulip_plan_is_not_limited: true,
      upgrade_text_for_wide_organization_logo: '',
      realm_empty_topic_display_name: SERVER_LIMITS.realm_empty_topic_display_name,
      realm_topics_policy: realm.topics_policy,
    };
  },
};
