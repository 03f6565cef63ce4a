// The organisation settings PATCH /realm changes (Zulip's update_realm, Realm.property_types and
// Realm.REALM_PERMISSION_GROUP_SETTINGS): how each is parsed, who may change it, where it is
// stored and which event announces it.

import { InvalidArgumentError, JsonableError, param, v, type ParamType } from '@teamchat/core';
import type { Realm } from '@teamchat/db';
import { LANGUAGE_CODES } from './settings';

export type RealmSettingValue = boolean | number | string | null;

type RealmColumn =
  | 'name'
  | 'description'
  | 'invite_required'
  | 'waiting_period_threshold'
  | 'enable_spectator_access'
  | 'message_retention_days'
  | 'default_language'
  | 'topics_policy';

export interface RealmPropertySpec {
  type: ParamType<RealmSettingValue>;
  /** Where it lives: a column of `realm`, or a key (its register name) of realm.settings. */
  storage: { column: RealmColumn } | { json: string };
  /** Only owners may change it (Zulip raises OrganizationOwnerRequiredError). */
  ownerOnly?: boolean;
  /** Announced as realm/update_dict {property: "default"} rather than realm/update (Zulip's history). */
  updateDict?: boolean;
}

/** A value clients send JSON-encoded or as plain text (python-zulip-api sends strings as they are). */
function jsonOrText(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function badValue(varName: string, value: unknown, raw: string): JsonableError {
  return new JsonableError(`Bad value for '${varName}': ${typeof value === 'string' ? value : raw}`, {
    code: 'REQUEST_VARIABLE_INVALID',
  });
}

/**
 * Zulip's parse_message_time_limit_setting: a positive number of seconds, or "unlimited" (null).
 * Stored in an integer column in Zulip, so at most 2^31 - 1.
 */
const timeLimitParam: ParamType<number | null> = {
  decode(raw, varName) {
    const value = jsonOrText(raw);
    if (value === 'unlimited') return null;
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= 2 ** 31 - 1) return value;
    throw badValue(varName, value, raw);
  },
};

/** Zulip's parse_message_retention_days: a positive number of days, or "unlimited" (-1). */
const retentionDaysParam: ParamType<number> = {
  decode(raw, varName) {
    const value = jsonOrText(raw);
    if (value === 'unlimited') return -1;
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= 2 ** 31 - 1) return value;
    throw badValue(varName, value, raw);
  },
};

/** An integer from a fixed set: Zulip's own message ("Invalid video_chat_provider 7") or "Invalid X". */
function intChoice(choices: readonly number[], message?: (value: number) => string): ParamType<number> {
  return param.json(
    v.refine(v.int(), (value, varName) => {
      if (!choices.includes(value)) throw new InvalidArgumentError(message?.(value) ?? `Invalid ${varName}`);
    }),
  );
}

/** A string from a fixed set, JSON-encoded or not: "Invalid X" otherwise. */
function stringChoice(choices: readonly string[]): ParamType<string> {
  return {
    decode(raw, varName) {
      const value = jsonOrText(raw);
      if (typeof value !== 'string' || !choices.includes(value)) throw new InvalidArgumentError(`Invalid ${varName}`);
      return value;
    },
  };
}

const JITSI_SERVER_URL_MAX_LENGTH = 200;

const jitsiUrlText = param.json(v.str());

/** Zulip's check_jitsi_url: "default" (the server's Jitsi, stored as null) or an http(s) URL. */
const jitsiServerUrlParam: ParamType<string | null> = {
  decode(raw, varName) {
    const value = jitsiUrlText.decode(raw, varName);
    if (value === 'default') return null;
    let protocol: string;
    try {
      protocol = new URL(value).protocol;
    } catch {
      protocol = '';
    }
    if (value.length > JITSI_SERVER_URL_MAX_LENGTH || !['http:', 'https:'].includes(protocol)) {
      throw new InvalidArgumentError(`${varName} is not an allowed_type`);
    }
    return value;
  },
};

/** The video call providers this server offers (register's realm_available_video_chat_providers). */
export const VIDEO_CHAT_PROVIDER_IDS = [0, 1];
/** Zulip's GIPHY_RATING_OPTIONS ids. */
const GIPHY_RATING_IDS = [0, 1, 2, 3, 4, 5];
/** Zulip's OrgTypeEnum. */
const ORG_TYPE_IDS = [0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000];
/** Zulip's MessageEditHistoryVisibilityPolicyEnum, by name as the API and register give it. */
const EDIT_HISTORY_POLICIES = ['all', 'moves', 'none'];
/** The organisation-level topics policies (feature level 392; "inherit" is for channels only). */
export const REALM_TOPICS_POLICIES = ['allow_empty_topic', 'disable_empty_topic'];
const MAX_REALM_NAME_LENGTH = 40;
const MAX_REALM_DESCRIPTION_LENGTH = 1000;

const bool = (json: string, options: { ownerOnly?: boolean } = {}): RealmPropertySpec => ({
  type: param.bool(),
  storage: { json },
  ...options,
});

/** Every plain (not group-valued, not channel-valued) setting PATCH /realm takes, by parameter name. */
export const REALM_PROPERTIES: Record<string, RealmPropertySpec> = {
  name: { type: param.string({ maxLength: MAX_REALM_NAME_LENGTH }), storage: { column: 'name' } },
  description: {
    type: param.string({ maxLength: MAX_REALM_DESCRIPTION_LENGTH }),
    storage: { column: 'description' },
  },
  invite_required: { type: param.bool(), storage: { column: 'invite_required' }, ownerOnly: true },
  waiting_period_threshold: {
    type: param.json(v.int({ min: 0, max: 2 ** 31 - 1 })),
    storage: { column: 'waiting_period_threshold' },
    ownerOnly: true,
  },
  enable_spectator_access: { type: param.bool(), storage: { column: 'enable_spectator_access' } },
  message_retention_days: {
    type: retentionDaysParam,
    storage: { column: 'message_retention_days' },
    ownerOnly: true,
  },
  default_language: {
    type: {
      decode(raw) {
        if (!(LANGUAGE_CODES as readonly string[]).includes(raw)) throw new JsonableError(`Invalid language '${raw}'`);
        return raw;
      },
    },
    storage: { column: 'default_language' },
  },
  topics_policy: { type: stringChoice(REALM_TOPICS_POLICIES), storage: { column: 'topics_policy' } },
  emails_restricted_to_domains: bool('realm_emails_restricted_to_domains', { ownerOnly: true }),
  disallow_disposable_email_addresses: bool('realm_disallow_disposable_email_addresses', { ownerOnly: true }),
  require_unique_names: bool('realm_require_unique_names'),
  name_changes_disabled: bool('realm_name_changes_disabled'),
  email_changes_disabled: bool('realm_email_changes_disabled'),
  avatar_changes_disabled: bool('realm_avatar_changes_disabled'),
  inline_image_preview: bool('realm_inline_image_preview'),
  inline_url_embed_preview: bool('realm_inline_url_embed_preview'),
  allow_message_editing: { ...bool('realm_allow_message_editing'), updateDict: true },
  mandatory_topics: bool('realm_mandatory_topics'),
  message_content_edit_limit_seconds: {
    type: timeLimitParam,
    storage: { json: 'realm_message_content_edit_limit_seconds' },
    updateDict: true,
  },
  message_content_delete_limit_seconds: {
    type: timeLimitParam,
    storage: { json: 'realm_message_content_delete_limit_seconds' },
  },
  move_messages_within_stream_limit_seconds: {
    type: timeLimitParam,
    storage: { json: 'realm_move_messages_within_stream_limit_seconds' },
  },
  move_messages_between_streams_limit_seconds: {
    type: timeLimitParam,
    storage: { json: 'realm_move_messages_between_streams_limit_seconds' },
  },
  message_edit_history_visibility_policy: {
    type: param.enumString(...EDIT_HISTORY_POLICIES),
    storage: { json: 'realm_message_edit_history_visibility_policy' },
  },
  send_welcome_emails: bool('realm_send_welcome_emails'),
  digest_emails_enabled: bool('realm_digest_emails_enabled'),
  message_content_allowed_in_email_notifications: bool('realm_message_content_allowed_in_email_notifications'),
  video_chat_provider: {
    type: intChoice(VIDEO_CHAT_PROVIDER_IDS, (value) => `Invalid video_chat_provider ${value}`),
    storage: { json: 'realm_video_chat_provider' },
  },
  jitsi_server_url: { type: jitsiServerUrlParam, storage: { json: 'realm_jitsi_server_url' } },
  giphy_rating: {
    type: intChoice(GIPHY_RATING_IDS, (value) => `Invalid giphy_rating ${value}`),
    storage: { json: 'realm_giphy_rating' },
  },
  default_code_block_language: { type: param.string(), storage: { json: 'realm_default_code_block_language' } },
  digest_weekday: { type: intChoice([0, 1, 2, 3, 4, 5, 6]), storage: { json: 'realm_digest_weekday' } },
  org_type: { type: intChoice(ORG_TYPE_IDS), storage: { json: 'realm_org_type' } },
  want_advertise_in_communities_directory: bool('realm_want_advertise_in_communities_directory'),
  enable_read_receipts: bool('realm_enable_read_receipts'),
  enable_guest_user_dm_warning: bool('realm_enable_guest_user_dm_warning'),
  enable_guest_user_indicator: bool('realm_enable_guest_user_indicator'),
};

/** Channel-valued settings (Zulip's do_set_realm_stream): a channel id, or a negative number for none. */
export const REALM_CHANNEL_SETTINGS = [
  'moderation_request_channel_id',
  'new_stream_announcements_stream_id',
  'signup_announcements_stream_id',
  'zulip_update_announcements_stream_id',
] as const;
export type RealmChannelSetting = (typeof REALM_CHANNEL_SETTINGS)[number];

/**
 * The realm permissions only owners may change (update_realm's checks); which groups each may
 * name is REALM_PERMISSION_SETTINGS's (@teamchat/domain, as register reports it).
 */
export const OWNER_ONLY_GROUP_SETTINGS = new Set([
  'create_multiuse_invite_group',
  'can_create_groups',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
]);

/** The current value of a plain setting; `settings` is the realm's realmSettings (defaults filled in). */
export function currentRealmProperty(
  realm: Realm,
  spec: RealmPropertySpec,
  settings: Record<string, unknown>,
): RealmSettingValue {
  if ('json' in spec.storage) return settings[spec.storage.json] as RealmSettingValue;
  return realm[spec.storage.column];
}
