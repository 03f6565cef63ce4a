// Which groups each permission setting of an organisation, a channel or a user group may be set
// to, and its default: register's server_supported_permission_settings (Zulip's
// get_server_supported_permission_settings, from Realm.REALM_PERMISSION_GROUP_SETTINGS,
// Stream.stream_permission_group_settings and NamedUserGroup.GROUP_PERMISSION_SETTINGS). The web
// app looks every setting it shows up here by name ("Invalid setting: ..." when one is missing),
// so the three tables list exactly the settings this server stores.
import type { SettingConstraints } from './group-settings';
import { SystemGroup, type SystemGroupName } from './groups';

/** One setting's configuration, in the API's form (Zulip's GroupPermissionSetting). */
export interface PermissionSettingConfig {
  /** Only a system group may hold it (no user-defined or anonymous group). */
  require_system_group: boolean;
  allow_internet_group: boolean;
  allow_nobody_group: boolean;
  /** false: guests never exercise it, even through role:everyone. */
  allow_everyone_group: boolean;
  /** A system group's name, or "stream_creator_or_nobody" / "group_creator". */
  default_group_name: string;
  /** The default for a system group's own setting (user-group settings only). */
  default_for_system_groups: string | null;
  /** When not empty, the only system groups it may be set to. */
  allowed_system_groups: string[];
}

/**
 * Most settings: any group but role:internet, role:nobody allowed, role:everyone when guests may
 * hold it. The rest are written out against this.
 */
function setting(
  default_group_name: string,
  allow_everyone_group: boolean,
  overrides: Partial<PermissionSettingConfig> = {},
): PermissionSettingConfig {
  return {
    require_system_group: false,
    allow_internet_group: false,
    allow_nobody_group: true,
    allow_everyone_group,
    default_group_name,
    default_for_system_groups: null,
    allowed_system_groups: [],
    ...overrides,
  };
}

const { EVERYONE, MEMBERS, MODERATORS, ADMINISTRATORS, OWNERS, NOBODY } = SystemGroup;
const GUESTS_INCLUDED = true;
const GUESTS_EXCLUDED = false;

/**
 * The organisation's settings: Zulip 10.2's 22, then the two of later feature levels this server
 * has (can_set_topics_policy_group, 392; can_set_delete_message_policy_group, 407).
 */
export const REALM_PERMISSION_SETTINGS: Readonly<Record<string, PermissionSettingConfig>> = {
  create_multiuse_invite_group: setting(ADMINISTRATORS, GUESTS_EXCLUDED),
  can_access_all_users_group: setting(EVERYONE, GUESTS_INCLUDED, {
    require_system_group: true,
    allow_nobody_group: false,
    allowed_system_groups: [EVERYONE, MEMBERS],
  }),
  can_add_subscribers_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_add_custom_emoji_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_create_bots_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_create_groups: setting(MEMBERS, GUESTS_EXCLUDED),
  can_create_public_channel_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_create_private_channel_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_create_web_public_channel_group: setting(OWNERS, GUESTS_EXCLUDED, {
    require_system_group: true,
    allowed_system_groups: [MODERATORS, ADMINISTRATORS, OWNERS, NOBODY],
  }),
  can_create_write_only_bots_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_delete_any_message_group: setting(ADMINISTRATORS, GUESTS_EXCLUDED),
  can_delete_own_message_group: setting(EVERYONE, GUESTS_INCLUDED),
  can_invite_users_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_manage_all_groups: setting(OWNERS, GUESTS_EXCLUDED, { allow_nobody_group: false }),
  can_manage_billing_group: setting(ADMINISTRATORS, GUESTS_EXCLUDED, { allow_nobody_group: false }),
  can_mention_many_users_group: setting(ADMINISTRATORS, GUESTS_INCLUDED),
  can_move_messages_between_channels_group: setting(MEMBERS, GUESTS_EXCLUDED),
  can_move_messages_between_topics_group: setting(EVERYONE, GUESTS_INCLUDED),
  can_resolve_topics_group: setting(EVERYONE, GUESTS_INCLUDED),
  can_summarize_topics_group: setting(EVERYONE, GUESTS_INCLUDED),
  direct_message_initiator_group: setting(EVERYONE, GUESTS_INCLUDED),
  direct_message_permission_group: setting(EVERYONE, GUESTS_INCLUDED),
  can_set_topics_policy_group: setting(MODERATORS, GUESTS_EXCLUDED),
  can_set_delete_message_policy_group: setting(MODERATORS, GUESTS_EXCLUDED),
};

/**
 * A channel's settings: Zulip 10.2's 5, then the channel-level delete (feature level 407), move
 * and resolve permissions this server has. Settings that show the channel to their holders
 * exclude guests (Zulip's stream_permission_group_settings_granting_metadata_access).
 */
export const STREAM_PERMISSION_SETTINGS: Readonly<Record<string, PermissionSettingConfig>> = {
  can_add_subscribers_group: setting(NOBODY, GUESTS_EXCLUDED),
  can_administer_channel_group: setting('stream_creator_or_nobody', GUESTS_EXCLUDED),
  can_remove_subscribers_group: setting(ADMINISTRATORS, GUESTS_INCLUDED),
  can_send_message_group: setting(EVERYONE, GUESTS_INCLUDED),
  can_subscribe_group: setting(NOBODY, GUESTS_EXCLUDED),
  can_delete_any_message_group: setting(NOBODY, GUESTS_INCLUDED),
  can_delete_own_message_group: setting(EVERYONE, GUESTS_INCLUDED),
  can_move_messages_out_of_channel_group: setting(NOBODY, GUESTS_INCLUDED),
  can_move_messages_within_channel_group: setting(NOBODY, GUESTS_INCLUDED),
  can_resolve_topics_group: setting(NOBODY, GUESTS_INCLUDED),
};

/** A user group's settings (Zulip 10.2's 6); a system group's own settings default to role:nobody. */
const groupSetting = (defaultGroup: string, allowEveryone: boolean) =>
  setting(defaultGroup, allowEveryone, { default_for_system_groups: NOBODY });

export const USER_GROUP_PERMISSION_SETTING_CONFIGS: Readonly<Record<string, PermissionSettingConfig>> = {
  can_add_members_group: groupSetting('group_creator', GUESTS_EXCLUDED),
  can_join_group: groupSetting(NOBODY, GUESTS_EXCLUDED),
  can_leave_group: groupSetting(EVERYONE, GUESTS_INCLUDED),
  can_manage_group: groupSetting('group_creator', GUESTS_EXCLUDED),
  can_mention_group: groupSetting(EVERYONE, GUESTS_INCLUDED),
  can_remove_members_group: groupSetting(NOBODY, GUESTS_EXCLUDED),
};

/**
 * The settings above that Zulip 10.2 does not have. The API takes them (feature levels 392 and
 * 407), but register's table leaves them out: the web app this server serves is Zulip 10.2's,
 * which parses the table's names with an enum of its own settings and stops at any other
 * (web/src/group_permission_settings.ts, check_group_permission_settings_data).
 */
export const PERMISSION_SETTINGS_NEWER_THAN_WEB_APP = {
  realm: ['can_set_topics_policy_group', 'can_set_delete_message_policy_group'],
  stream: [
    'can_delete_any_message_group',
    'can_delete_own_message_group',
    'can_move_messages_out_of_channel_group',
    'can_move_messages_within_channel_group',
    'can_resolve_topics_group',
  ],
  group: [],
} as const satisfies Record<'realm' | 'stream' | 'group', readonly string[]>;

const without = (
  table: Readonly<Record<string, PermissionSettingConfig>>,
  names: readonly string[],
): Record<string, PermissionSettingConfig> =>
  Object.fromEntries(Object.entries(table).filter(([name]) => !names.includes(name)));

/** register's server_supported_permission_settings: the settings Zulip 10.2's web app knows. */
export function serverSupportedPermissionSettings() {
  return {
    realm: without(REALM_PERMISSION_SETTINGS, PERMISSION_SETTINGS_NEWER_THAN_WEB_APP.realm),
    stream: without(STREAM_PERMISSION_SETTINGS, PERMISSION_SETTINGS_NEWER_THAN_WEB_APP.stream),
    group: without(USER_GROUP_PERMISSION_SETTING_CONFIGS, PERMISSION_SETTINGS_NEWER_THAN_WEB_APP.group),
  };
}

/** What groupForSettingValue checks for a setting of this configuration. */
export function settingConstraints(config: PermissionSettingConfig): SettingConstraints {
  return {
    requireSystemGroup: config.require_system_group,
    allowInternet: config.allow_internet_group,
    allowNobody: config.allow_nobody_group,
    allowEveryone: config.allow_everyone_group,
    ...(config.allowed_system_groups.length > 0
      ? { allowedSystemGroups: config.allowed_system_groups as SystemGroupName[] }
      : {}),
  };
}
