// System groups and the default group-setting values of a new realm (Zulip 10).
import { Role } from './roles';

export const SystemGroup = {
  INTERNET: 'role:internet',
  EVERYONE: 'role:everyone',
  MEMBERS: 'role:members',
  FULL_MEMBERS: 'role:fullmembers',
  MODERATORS: 'role:moderators',
  ADMINISTRATORS: 'role:administrators',
  OWNERS: 'role:owners',
  NOBODY: 'role:nobody',
} as const;

export type SystemGroupName = (typeof SystemGroup)[keyof typeof SystemGroup];

/** Each system group, its description, and the system group directly below it. */
export const SYSTEM_GROUPS: { name: SystemGroupName; description: string; subgroup: SystemGroupName | null }[] = [
  { name: SystemGroup.OWNERS, description: 'Owners of this organization', subgroup: null },
  {
    name: SystemGroup.ADMINISTRATORS,
    description: 'Administrators of this organization, including owners',
    subgroup: SystemGroup.OWNERS,
  },
  {
    name: SystemGroup.MODERATORS,
    description: 'Moderators of this organization, including administrators',
    subgroup: SystemGroup.ADMINISTRATORS,
  },
  {
    name: SystemGroup.FULL_MEMBERS,
    description: 'Members of this organization, not including new accounts and guests',
    subgroup: SystemGroup.MODERATORS,
  },
  {
    name: SystemGroup.MEMBERS,
    description: 'Members of this organization, not including guests',
    subgroup: SystemGroup.FULL_MEMBERS,
  },
  {
    name: SystemGroup.EVERYONE,
    description: 'Everyone in this organization, including guests',
    subgroup: SystemGroup.MEMBERS,
  },
  { name: SystemGroup.INTERNET, description: 'Everyone on the Internet', subgroup: SystemGroup.EVERYONE },
  { name: SystemGroup.NOBODY, description: 'Nobody', subgroup: null },
];

/**
 * The system groups a user of `role` is a direct member of. Higher roles reach the lower
 * groups through the subgroup chain. Members past the waiting period are full members too.
 */
export function directSystemGroupsForRole(role: number, isFullMember: boolean): SystemGroupName[] {
  switch (role) {
    case Role.OWNER:
      return [SystemGroup.OWNERS];
    case Role.ADMINISTRATOR:
      return [SystemGroup.ADMINISTRATORS];
    case Role.MODERATOR:
      return [SystemGroup.MODERATORS];
    case Role.MEMBER:
      return isFullMember ? [SystemGroup.MEMBERS, SystemGroup.FULL_MEMBERS] : [SystemGroup.MEMBERS];
    default:
      return [SystemGroup.EVERYONE];
  }
}

/** The realm's group-setting permissions and the system group each starts with. */
export const REALM_GROUP_SETTING_DEFAULTS: Record<string, SystemGroupName> = {
  can_access_all_users_group: SystemGroup.EVERYONE,
  can_add_custom_emoji_group: SystemGroup.MEMBERS,
  can_add_subscribers_group: SystemGroup.MEMBERS,
  can_create_bots_group: SystemGroup.MEMBERS,
  can_create_groups: SystemGroup.MEMBERS,
  can_create_private_channel_group: SystemGroup.MEMBERS,
  can_create_public_channel_group: SystemGroup.MEMBERS,
  can_create_web_public_channel_group: SystemGroup.OWNERS,
  can_create_write_only_bots_group: SystemGroup.MEMBERS,
  can_delete_any_message_group: SystemGroup.ADMINISTRATORS,
  can_delete_own_message_group: SystemGroup.EVERYONE,
  can_invite_users_group: SystemGroup.MEMBERS,
  can_manage_all_groups: SystemGroup.OWNERS,
  can_manage_billing_group: SystemGroup.ADMINISTRATORS,
  can_mention_many_users_group: SystemGroup.ADMINISTRATORS,
  can_move_messages_between_channels_group: SystemGroup.MEMBERS,
  can_move_messages_between_topics_group: SystemGroup.EVERYONE,
  can_resolve_topics_group: SystemGroup.EVERYONE,
  can_set_delete_message_policy_group: SystemGroup.MODERATORS,
  can_set_topics_policy_group: SystemGroup.MODERATORS,
  can_summarize_topics_group: SystemGroup.EVERYONE,
  create_multiuse_invite_group: SystemGroup.ADMINISTRATORS,
  direct_message_initiator_group: SystemGroup.EVERYONE,
  direct_message_permission_group: SystemGroup.EVERYONE,
};

/**
 * A new channel's group-setting permissions (Zulip 10). "creator" is an anonymous group holding
 * only the channel's creator (Zulip's stream_creator_or_nobody); without a creator, role:nobody.
 */
export const STREAM_GROUP_SETTING_DEFAULTS: Record<string, SystemGroupName | 'creator'> = {
  can_add_subscribers_group: SystemGroup.NOBODY,
  can_administer_channel_group: 'creator',
  can_delete_any_message_group: SystemGroup.NOBODY,
  can_delete_own_message_group: SystemGroup.EVERYONE,
  can_move_messages_out_of_channel_group: SystemGroup.NOBODY,
  can_move_messages_within_channel_group: SystemGroup.NOBODY,
  can_remove_subscribers_group: SystemGroup.ADMINISTRATORS,
  can_resolve_topics_group: SystemGroup.NOBODY,
  can_send_message_group: SystemGroup.EVERYONE,
  can_subscribe_group: SystemGroup.NOBODY,
};

/** A new user group's group-setting permissions (Zulip 10); "creator" as above. */
export const USER_GROUP_SETTING_DEFAULTS: Record<string, SystemGroupName | 'creator'> = {
  can_add_members_group: 'creator',
  can_join_group: SystemGroup.NOBODY,
  can_leave_group: SystemGroup.EVERYONE,
  can_manage_group: 'creator',
  can_mention_group: SystemGroup.EVERYONE,
  can_remove_members_group: 'creator',
};

/** Group names users may not choose, and the longest name (Zulip's NamedUserGroup). */
export const USER_GROUP_NAME_MAX_LENGTH = 100;
export const USER_GROUP_INVALID_NAME_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];

/**
 * The permission settings of a user group and which system groups each may hold (Zulip's
 * NamedUserGroup.GROUP_PERMISSION_SETTINGS; role:owners for can_mention_group as the spec says).
 */
export const USER_GROUP_PERMISSION_SETTINGS: Record<
  string,
  { allowEveryone: boolean; allowNobody: boolean; allowOwners?: boolean }
> = {
  can_add_members_group: { allowEveryone: false, allowNobody: true },
  can_join_group: { allowEveryone: false, allowNobody: true },
  can_leave_group: { allowEveryone: true, allowNobody: true },
  can_manage_group: { allowEveryone: false, allowNobody: true },
  can_mention_group: { allowEveryone: true, allowNobody: true, allowOwners: false },
  can_remove_members_group: { allowEveryone: false, allowNobody: true },
};

/**
 * Realm permission settings that guests never hold even through role:everyone (Zulip's
 * allow_everyone_group=False): user_has_permission_for_group_setting refuses guests for them.
 */
export const REALM_SETTINGS_EXCLUDING_GUESTS = new Set([
  'can_add_custom_emoji_group',
  'can_add_subscribers_group',
  'can_create_bots_group',
  'can_create_groups',
  'can_create_private_channel_group',
  'can_create_public_channel_group',
  'can_create_web_public_channel_group',
  'can_create_write_only_bots_group',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
  'can_move_messages_between_channels_group',
  'create_multiuse_invite_group',
]);
