// Users as the API shows them (Zulip's zerver/lib/users.py): who may see a user's real email,
// which users a guest may see at all (can_access_all_users_group), and the user objects of
// GET /users, realm_user events and register's realm_users.
import { JsonableError } from '@teamchat/core';
import { Prisma, queryRows, type CustomProfileField, type TxClient, type UserProfile } from '@teamchat/db';
import { isUserInGroup, realmSettingGroup } from './group-settings';
import { SystemGroup } from './groups';
import { gravatarUrl, placeholderEmailDomain } from './realms';
import { Role, isAdministrator, isGuest } from './roles';

type Reader = Pick<TxClient, '$queryRaw' | 'userGroup' | 'groupSetting' | 'userGroupMembership' | 'groupGroupMembership' | 'userProfile'>;

/** Email visibility values (Zulip's UserProfile.EMAIL_ADDRESS_VISIBILITY_*). */
export const EmailVisibility = {
  EVERYONE: 1,
  MEMBERS: 2,
  ADMINS: 3,
  NOBODY: 4,
  MODERATORS: 5,
} as const;

/** Which email_address_visibility values let a user of each role see the real email. */
export const ACCESSIBLE_EMAIL_VISIBILITIES: Record<number, readonly number[]> = {
  [Role.OWNER]: [EmailVisibility.EVERYONE, EmailVisibility.MEMBERS, EmailVisibility.ADMINS, EmailVisibility.MODERATORS],
  [Role.ADMINISTRATOR]: [EmailVisibility.EVERYONE, EmailVisibility.MEMBERS, EmailVisibility.ADMINS, EmailVisibility.MODERATORS],
  [Role.MODERATOR]: [EmailVisibility.EVERYONE, EmailVisibility.MEMBERS, EmailVisibility.MODERATORS],
  [Role.MEMBER]: [EmailVisibility.EVERYONE, EmailVisibility.MEMBERS],
  [Role.GUEST]: [EmailVisibility.EVERYONE],
};

/** Someone looking at users: their id and role are all that decide what they see. */
export interface UserViewer {
  id: number;
  role: number;
}

/** Zulip's can_access_delivery_email: oneself always; others by their visibility setting. */
export function canAccessDeliveryEmail(viewer: UserViewer, target: Pick<UserProfile, 'id' | 'email_address_visibility'>): boolean {
  if (viewer.id === target.id) return true;
  return (ACCESSIBLE_EMAIL_VISIBILITIES[viewer.role] ?? []).includes(target.email_address_visibility);
}

/** Avatar of a user whose avatar comes from the external provider (avatar_source "G"). */
export function externalAvatarUrl(email: string, version: number): string {
  return `${gravatarUrl(email)}&version=${version}`;
}

export function avatarUrl(user: Pick<UserProfile, 'avatar_source' | 'delivery_email' | 'avatar_version' | 'realm_id' | 'id'>): string {
  if (user.avatar_source === 'U') return `/user_avatars/${user.realm_id}/${user.id}.png?version=${user.avatar_version}`;
  return externalAvatarUrl(user.delivery_email, user.avatar_version);
}

/** Fields every API user object shares, derived from the role. */
export function roleFlags(role: number) {
  return {
    role,
    is_owner: role === Role.OWNER,
    is_admin: isAdministrator(role),
    is_guest: isGuest(role),
  };
}

export type ProfileData = Record<string, { value: string; rendered_value?: string }>;

/** The body of GET /users/me (Zulip's get-own-user). */
/** The columns GET /users/me answers with. */
export type OwnUserRow = Pick<
  UserProfile,
  'id' | 'realm_id' | 'email' | 'delivery_email' | 'full_name' | 'role' | 'is_bot' | 'is_active' | 'timezone' | 'date_joined' | 'avatar_source' | 'avatar_version'
>;

export function ownUserDict(user: OwnUserRow, maxMessageId: number, profileData: ProfileData) {
  return {
    user_id: user.id,
    email: user.email,
    delivery_email: user.delivery_email,
    full_name: user.full_name,
    ...roleFlags(user.role),
    is_bot: user.is_bot,
    is_active: user.is_active,
    timezone: user.timezone,
    date_joined: user.date_joined.toISOString(),
    avatar_url: avatarUrl(user),
    avatar_version: user.avatar_version,
    max_message_id: maxMessageId,
    ...(user.is_bot ? {} : { profile_data: profileData }),
  };
}

export interface ApiUserOptions {
  /** The client computes external-provider avatars itself: avatar_url null for those it may. */
  clientGravatar?: boolean;
  /** Custom profile field values; omitted from the object when not given (and always for bots). */
  profileData?: ProfileData;
}

export interface ApiUser {
  user_id: number;
  email: string;
  delivery_email: string | null;
  full_name: string;
  role: number;
  is_owner: boolean;
  is_admin: boolean;
  is_guest: boolean;
  is_bot: boolean;
  is_active: boolean;
  timezone: string;
  date_joined: string;
  avatar_url: string | null;
  avatar_version: number;
  bot_type?: number | null;
  bot_owner_id?: number | null;
  profile_data?: ProfileData;
}

/** The columns a user object is made of. */
export type ApiUserSource = Pick<
  UserProfile,
  | 'id'
  | 'realm_id'
  | 'email'
  | 'delivery_email'
  | 'full_name'
  | 'role'
  | 'is_bot'
  | 'bot_type'
  | 'bot_owner_id'
  | 'is_active'
  | 'timezone'
  | 'date_joined'
  | 'avatar_source'
  | 'avatar_version'
  | 'email_address_visibility'
>;

/**
 * Every user of the realm, by id, as user objects are made (register's realm_users, GET
 * /users). Only those columns, in one raw read: at every register in a realm of thousands,
 * Prisma's whole-row mapping cost over twice the CPU of this (4,000 users: ~60 ms vs ~25).
 */
export async function realmUsersForApi(db: Pick<TxClient, '$queryRaw'>, realmId: number): Promise<ApiUserSource[]> {
  return db.$queryRaw<ApiUserSource[]>`
    SELECT id, realm_id, email, delivery_email, full_name, role, is_bot, bot_type, bot_owner_id, is_active,
           timezone, date_joined, avatar_source, avatar_version, email_address_visibility
      FROM user_profile WHERE realm_id = ${realmId} ORDER BY id`;
}

/**
 * A user as `viewer` may see them (Zulip's format_user_row): the real email only when the
 * user's email visibility allows it; with client_gravatar, a null avatar_url for external
 * avatars of users whose email everyone may see (the client can compute those).
 */
export function apiUserDict(user: ApiUserSource, viewer: UserViewer, options: ApiUserOptions = {}): ApiUser {
  const clientComputesAvatar =
    (options.clientGravatar ?? false) && user.avatar_source === 'G' && user.email_address_visibility === EmailVisibility.EVERYONE;
  const dict: ApiUser = {
    email: user.email,
    user_id: user.id,
    avatar_version: user.avatar_version,
    ...roleFlags(user.role),
    is_bot: user.is_bot,
    full_name: user.full_name,
    timezone: user.timezone,
    is_active: user.is_active,
    date_joined: user.date_joined.toISOString(),
    delivery_email: canAccessDeliveryEmail(viewer, user) ? user.delivery_email : null,
    avatar_url: clientComputesAvatar ? null : avatarUrl(user),
  };
  if (user.is_bot) {
    dict.bot_type = user.bot_type;
    dict.bot_owner_id = user.bot_owner_id;
  } else if (options.profileData) {
    dict.profile_data = options.profileData;
  }
  return dict;
}

/** The name clients show for a user they cannot access (Zulip's INACCESSIBLE_USER_NAME). */
export const INACCESSIBLE_USER_NAME = 'Unknown user';

/** What a guest who may not see a user sees in its place (Zulip's get_data_for_inaccessible_user). */
export function inaccessibleUserDict(userId: number, realm: { host: string }): ApiUser {
  return {
    email: `user${userId}@${placeholderEmailDomain(realm)}`,
    user_id: userId,
    avatar_version: 1,
    ...roleFlags(Role.MEMBER),
    is_bot: false,
    full_name: INACCESSIBLE_USER_NAME,
    timezone: '',
    is_active: true,
    date_joined: new Date(0).toISOString(),
    delivery_email: null,
    avatar_url: '/static/images/unknown-user-avatar.png',
    profile_data: {},
  };
}

// ---------------------------------------------------------------- can_access_all_users_group

const realmAccessGroup = (db: Reader, realmId: number) => realmSettingGroup(db, realmId, 'can_access_all_users_group');

/** Whether everyone in the realm may see every user (the setting is role:everyone). */
export async function allUsersAccessibleInRealm(db: Reader, realmId: number): Promise<boolean> {
  const group = await realmAccessGroup(db, realmId);
  return !group || group.name === SystemGroup.EVERYONE;
}

/** Zulip's check_user_can_access_all_users: non-guests always; guests through the realm setting. */
export async function canAccessAllUsers(db: Reader, viewer: UserViewer & { realm_id: number }): Promise<boolean> {
  if (!isGuest(viewer.role)) return true;
  const group = await realmAccessGroup(db, viewer.realm_id);
  if (!group || group.name === SystemGroup.EVERYONE) return true;
  return isUserInGroup(db, viewer.id, group.id);
}

/** Active users subscribed to a channel `userId` is subscribed to (themselves included). */
function channelPeersQuery(userId: number): Prisma.Sql {
  return Prisma.sql`
    SELECT other.user_profile_id AS id
    FROM subscription mine JOIN subscription other ON other.stream_id = mine.stream_id
    JOIN user_profile other_user ON other_user.id = other.user_profile_id
    WHERE mine.user_profile_id = ${userId} AND mine.active AND other.active AND other_user.is_active`;
}

/** The users who share an active channel subscription with `userId` (themselves included). */
export async function channelPeerIds(db: Pick<TxClient, '$queryRaw'>, userId: number): Promise<Set<number>> {
  const rows = await db.$queryRaw<{ id: number }[]>(channelPeersQuery(userId));
  return new Set(rows.map((row) => row.id));
}

/** Users who have exchanged direct messages with `userId` (group conversations included). */
function dmPartnersQuery(userId: number, realmId: number): Prisma.Sql {
  return Prisma.sql`
    SELECT DISTINCT unnest(string_to_array(m.dm_key, ',')::int[]) AS id
    FROM message m
    WHERE m.realm_id = ${realmId} AND m.dm_key IS NOT NULL
      AND ${userId} = ANY (string_to_array(m.dm_key, ',')::int[])`;
}

/**
 * The users a restricted viewer may see: themselves, everyone they have exchanged direct
 * messages with, and (unless `throughChannels` is false) everyone sharing an active channel
 * subscription with them.
 */
async function sharedConversationUserIds(db: Reader, viewerId: number, realmId: number, throughChannels = true): Promise<Set<number>> {
  const query = throughChannels ? Prisma.sql`${channelPeersQuery(viewerId)} UNION ${dmPartnersQuery(viewerId, realmId)}` : dmPartnersQuery(viewerId, realmId);
  const rows = await db.$queryRaw<{ id: number }[]>(query);
  const ids = new Set(rows.map((row) => row.id));
  ids.add(viewerId);
  return ids;
}

/** The users `viewer` may see besides bots (Zulip's restricted user access), or null: everyone. */
async function accessibleUserIds(db: Reader, viewer: UserViewer & { realm_id: number }): Promise<Set<number> | null> {
  if (await canAccessAllUsers(db, viewer)) return null;
  return sharedConversationUserIds(db, viewer.id, viewer.realm_id);
}

/** Ids among `targets` that `viewer` may not see (bots are always visible); empty when unrestricted. */
export async function inaccessibleUserIds(
  db: Reader,
  viewer: UserViewer & { realm_id: number },
  targets: Pick<UserProfile, 'id' | 'is_bot'>[],
): Promise<Set<number>> {
  const visible = await accessibleUserIds(db, viewer);
  if (!visible) return new Set();
  return new Set(targets.filter((target) => !target.is_bot && !visible.has(target.id)).map((target) => target.id));
}

/** Zulip's check_can_access_user. */
export async function canAccessUser(
  db: Reader,
  viewer: UserViewer & { realm_id: number },
  target: Pick<UserProfile, 'id' | 'is_bot'>,
): Promise<boolean> {
  return !(await inaccessibleUserIds(db, viewer, [target])).has(target.id);
}

/**
 * Active users who may see `target` (the audience of realm_user events about them, Zulip's
 * get_user_ids_who_can_access_user): everyone when the realm is unrestricted or the target
 * is a bot; otherwise the non-guests, guests in the access group, and those sharing a
 * direct message conversation or (unless `throughChannels` is false: a user being
 * deactivated, whom channels no longer show to guests) a channel with the target.
 */
export async function userIdsWhoCanAccessUser(
  db: Reader,
  target: Pick<UserProfile, 'id' | 'realm_id' | 'is_bot'>,
  options: { throughChannels?: boolean } = {},
): Promise<number[]> {
  return (await usersWhoCanAccessUser(db, target, options)).map((user) => user.id);
}

/** userIdsWhoCanAccessUser with each user's role (one read, where a second would list every id). */
export async function usersWhoCanAccessUser(
  db: Reader,
  target: Pick<UserProfile, 'id' | 'realm_id' | 'is_bot'>,
  { throughChannels = true }: { throughChannels?: boolean } = {},
): Promise<{ id: number; role: number }[]> {
  const active = await db.userProfile.findMany({ where: { realm_id: target.realm_id, is_active: true }, select: { id: true, role: true } });
  const group = await realmAccessGroup(db, target.realm_id);
  if (target.is_bot || !group || group.name === SystemGroup.EVERYONE) return active;
  const [sharing, groupMembers] = await Promise.all([
    sharedConversationUserIds(db, target.id, target.realm_id, throughChannels),
    db.$queryRaw<{ id: number }[]>`
      WITH RECURSIVE groups(id) AS (
        SELECT ${group.id}::int
        UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
      )
      SELECT DISTINCT m.user_profile_id AS id FROM user_group_membership m JOIN groups ON m.user_group_id = groups.id`,
  ]);
  const inGroup = new Set(groupMembers.map((row) => row.id));
  return active.filter((user) => !isGuest(user.role) || sharing.has(user.id) || inGroup.has(user.id));
}

// ---------------------------------------------------------------- names

export const MAX_FULL_NAME_LENGTH = 100;
export const MIN_FULL_NAME_LENGTH = 2;
const NAME_INVALID_CHARACTERS = ['*', '`', '\\', '>', '"', '@'];

/** Zulip's check_full_name: the stripped name, or Zulip's error. */
export function checkFullName(raw: string): string {
  const name = raw.trim();
  if ([...name].length > MAX_FULL_NAME_LENGTH) throw new JsonableError('Name too long!');
  if ([...name].length < MIN_FULL_NAME_LENGTH) throw new JsonableError('Name too short!');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name) || NAME_INVALID_CHARACTERS.some((character) => name.includes(character))) {
    throw new JsonableError('Invalid characters in name!');
  }
  // "Name|15" would read as a mention of user 15.
  if (/\|\d+$/.test(raw)) throw new JsonableError('Invalid format!');
  return name;
}

// ---------------------------------------------------------------- personal settings

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
export function userSettings(user: Pick<UserProfile, 'settings' | 'timezone' | 'default_language' | 'email_address_visibility'>) {
  const stored = user.settings && typeof user.settings === 'object' && !Array.isArray(user.settings) ? (user.settings as Record<string, unknown>) : {};
  const known = Object.fromEntries(Object.keys(USER_SETTING_DEFAULTS).filter((name) => name in stored).map((name) => [name, stored[name]]));
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

// ---------------------------------------------------------------- custom profile fields

/** Zulip's custom profile field types, by their API keyword. */
export const PROFILE_FIELD_TYPES: { id: number; keyword: string; name: string }[] = [
  { id: 1, keyword: 'SHORT_TEXT', name: 'Text (short)' },
  { id: 2, keyword: 'LONG_TEXT', name: 'Text (long)' },
  { id: 3, keyword: 'SELECT', name: 'List of options' },
  { id: 4, keyword: 'DATE', name: 'Date' },
  { id: 5, keyword: 'URL', name: 'Link' },
  { id: 6, keyword: 'USER', name: 'Users' },
  { id: 7, keyword: 'EXTERNAL_ACCOUNT', name: 'External account' },
  { id: 8, keyword: 'PRONOUNS', name: 'Pronouns' },
];

/** A field as GET /realm/profile_fields, register and the custom_profile_fields event show it. */
export function profileFieldDict(field: Pick<CustomProfileField, 'id' | 'field_type' | 'order' | 'name' | 'hint' | 'field_data' | 'required' | 'editable_by_user' | 'display_in_profile_summary'>) {
  return {
    id: field.id,
    type: field.field_type,
    order: field.order,
    name: field.name,
    hint: field.hint,
    field_data: field.field_data,
    required: field.required,
    editable_by_user: field.editable_by_user,
    ...(field.display_in_profile_summary ? { display_in_profile_summary: true } : {}),
  };
}

// ---------------------------------------------------------------- presence

/** Zulip's OFFLINE_THRESHOLD_SECS. */
export const PRESENCE_OFFLINE_THRESHOLD_SECONDS = 140;
const DEFAULT_PRESENCE_HISTORY_DAYS = 14;

/**
 * The realm's presence as `viewer` may see it (Zulip's get_presence_response): the modern
 * {user_id: {active_timestamp, idle_timestamp}} form, or the legacy per-email form; only users
 * connected within the history window and, with lastUpdateId, changed since then.
 */
export async function realmPresence(
  db: Reader & Pick<TxClient, '$queryRawUnsafe'>,
  viewer: UserViewer & { realm_id: number },
  options: { slim: boolean; lastUpdateId?: number; historyDays?: number | null; now?: Date },
) {
  const now = options.now ?? new Date();
  const since = new Date(now.getTime() - (options.historyDays ?? DEFAULT_PRESENCE_HISTORY_DAYS) * 86_400_000);
  // Every connected user of a big realm comes back on each ping (all changed since the caller's
  // previous one), so the rows come as one JSON array of [id, active ms, connected ms, email]
  // from a named statement: for 2,000 rows, pg's per-field row parsing (and before it Prisma's
  // decoding and Dates) cost several times what JSON.parse does. A row's update id: its later
  // time, in whole milliseconds.
  const visibleTo = await accessibleUserIds(db, viewer);
  const [result] = await queryRows<{ rows: [number, number | null, number | null, string][]; last_update_id: number | null }>(
    db,
    'realm-presence',
    `SELECT coalesce(json_agg(json_build_array(user_profile_id, active_ms, connected_ms, email) ORDER BY user_profile_id), '[]') AS rows,
            max(update_id) AS last_update_id
       FROM (
         SELECT p.user_profile_id, u.email,
                floor(extract(epoch FROM p.last_active_time) * 1000)::float8 AS active_ms,
                floor(extract(epoch FROM p.last_connected_time) * 1000)::float8 AS connected_ms,
                floor(extract(epoch FROM greatest(p.last_connected_time, p.last_active_time)) * 1000)::float8 AS update_id
           FROM user_presence p JOIN user_profile u ON u.id = p.user_profile_id
          WHERE u.realm_id = $1 AND u.is_active AND p.last_connected_time >= $2::timestamptz
            AND ($4::int[] IS NULL OR u.is_bot OR u.id = ANY($4::int[]))
       ) presence
      WHERE update_id > $3::float8`,
    [viewer.realm_id, since, options.lastUpdateId ?? -1, visibleTo && [...visibleTo]],
  );
  const presences = Object.fromEntries(
    result.rows.map(([userId, activeMs, connectedMs, email]) => {
      if (options.slim) return [String(userId), { active_timestamp: wholeSeconds(activeMs), idle_timestamp: wholeSeconds(connectedMs) }];
      const legacy = legacyPresence(activeMs, connectedMs, now);
      return [email, { aggregated: { client: 'website', ...legacy }, website: { client: 'website', ...legacy, pushable: false } }];
    }),
  );
  return {
    presences,
    server_timestamp: now.getTime() / 1000,
    presence_last_update_id: Math.max(options.lastUpdateId ?? -1, result.last_update_id ?? -1),
  };
}

const wholeSeconds = (ms: number | null) => (ms === null ? 0 : Math.floor(ms / 1000));

/**
 * A user's presence in Zulip's legacy form (times in ms since the epoch): "active" with the
 * last active time while that is within the offline threshold, else "idle" with the last
 * connected time.
 */
export function legacyPresence(activeMs: number | null, connectedMs: number | null, now: Date): { status: 'active' | 'idle'; timestamp: number } {
  const activeRecently = activeMs !== null && now.getTime() - activeMs < PRESENCE_OFFLINE_THRESHOLD_SECONDS * 1000;
  return { status: activeRecently ? 'active' : 'idle', timestamp: wholeSeconds(activeRecently ? activeMs : connectedMs) };
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
