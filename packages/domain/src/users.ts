// Users as the API shows them (Zulip's zerver/lib/users.py): who may see a user's real email,
// which users a guest may see at all (can_access_all_users_group), and the user objects of
// GET /users, realm_user events and register's realm_users. Names, personal settings, custom
// profile fields and presence have their own modules (user-names, user-settings, profile-fields,
// presence).
import { Prisma, type TxClient, type UserProfile } from '@teamchat/db';
import { isUserInGroup, realmSettingGroup } from './group-settings';
import { SystemGroup } from './groups';
import { clientComputesAvatar, generatedImageUrl } from './gravatar';
import { placeholderEmailDomain } from './realms';
import { Role, isAdministrator, isGuest } from './roles';
import { activeSubscription } from './streams';
import { uploadedAvatarUrl } from './uploaded-images';

/** What reading users and their access needs of a client (a transaction's or the pool's). */
export type UserReader = Pick<
  TxClient,
  '$queryRaw' | 'userGroup' | 'groupSetting' | 'userGroupMembership' | 'groupGroupMembership' | 'userProfile'
>;

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
  [Role.ADMINISTRATOR]: [
    EmailVisibility.EVERYONE,
    EmailVisibility.MEMBERS,
    EmailVisibility.ADMINS,
    EmailVisibility.MODERATORS,
  ],
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
export function canAccessDeliveryEmail(
  viewer: UserViewer,
  target: Pick<UserProfile, 'id' | 'email_address_visibility'>,
): boolean {
  if (viewer.id === target.id) return true;
  return (ACCESSIBLE_EMAIL_VISIBILITIES[viewer.role] ?? []).includes(target.email_address_visibility);
}

/** Zulip's avatar_url; `medium`: the 500 px one. */
export function avatarUrl(
  user: Pick<UserProfile, 'avatar_source' | 'avatar_key' | 'delivery_email' | 'avatar_version' | 'realm_id' | 'id'>,
  options: { medium?: boolean } = {},
): string {
  if (user.avatar_source === 'U' && user.avatar_key)
    return uploadedAvatarUrl(user.realm_id, user.avatar_key, user.avatar_version, options.medium);
  return generatedImageUrl(user.delivery_email, { version: user.avatar_version, medium: options.medium });
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
  | 'id'
  | 'realm_id'
  | 'email'
  | 'delivery_email'
  | 'full_name'
  | 'role'
  | 'is_bot'
  | 'is_active'
  | 'timezone'
  | 'date_joined'
  | 'avatar_source'
  | 'avatar_key'
  | 'avatar_version'
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
  | 'avatar_key'
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
           timezone, date_joined, avatar_source, avatar_key, avatar_version, email_address_visibility
      FROM user_profile WHERE realm_id = ${realmId} ORDER BY id`;
}

/**
 * A user as `viewer` may see them (Zulip's format_user_row): the real email only when the
 * user's email visibility allows it; with client_gravatar, a null avatar_url for external
 * avatars of users whose email everyone may see (the client can compute those).
 */
export function apiUserDict(user: ApiUserSource, viewer: UserViewer, options: ApiUserOptions = {}): ApiUser {
  const nullAvatar = clientComputesAvatar(
    options.clientGravatar ?? false,
    user.avatar_source,
    user.email_address_visibility === EmailVisibility.EVERYONE,
  );
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
    avatar_url: nullAvatar ? null : avatarUrl(user),
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

const realmAccessGroup = (db: UserReader, realmId: number) =>
  realmSettingGroup(db, realmId, 'can_access_all_users_group');

/** Whether everyone in the realm may see every user (the setting is role:everyone). */
export async function allUsersAccessibleInRealm(db: UserReader, realmId: number): Promise<boolean> {
  const group = await realmAccessGroup(db, realmId);
  return !group || group.name === SystemGroup.EVERYONE;
}

/** Zulip's check_user_can_access_all_users: non-guests always; guests through the realm setting. */
export async function canAccessAllUsers(db: UserReader, viewer: UserViewer & { realm_id: number }): Promise<boolean> {
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
    WHERE mine.user_profile_id = ${userId} AND mine.active AND ${activeSubscription('other')}`;
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
async function sharedConversationUserIds(
  db: UserReader,
  viewerId: number,
  realmId: number,
  throughChannels = true,
): Promise<Set<number>> {
  const query = throughChannels
    ? Prisma.sql`${channelPeersQuery(viewerId)} UNION ${dmPartnersQuery(viewerId, realmId)}`
    : dmPartnersQuery(viewerId, realmId);
  const rows = await db.$queryRaw<{ id: number }[]>(query);
  const ids = new Set(rows.map((row) => row.id));
  ids.add(viewerId);
  return ids;
}

/** The users `viewer` may see besides bots (Zulip's restricted user access), or null: everyone. */
export async function accessibleUserIds(
  db: UserReader,
  viewer: UserViewer & { realm_id: number },
): Promise<Set<number> | null> {
  if (await canAccessAllUsers(db, viewer)) return null;
  return sharedConversationUserIds(db, viewer.id, viewer.realm_id);
}

/** Ids among `targets` that `viewer` may not see (bots are always visible); empty when unrestricted. */
export async function inaccessibleUserIds(
  db: UserReader,
  viewer: UserViewer & { realm_id: number },
  targets: Pick<UserProfile, 'id' | 'is_bot'>[],
): Promise<Set<number>> {
  const visible = await accessibleUserIds(db, viewer);
  return visible ? inaccessibleAmong(visible, targets) : new Set();
}

/** Ids among `targets` not in `visible` (bots are always visible). */
export function inaccessibleAmong(visible: Set<number>, targets: Pick<UserProfile, 'id' | 'is_bot'>[]): Set<number> {
  return new Set(targets.filter((target) => !target.is_bot && !visible.has(target.id)).map((target) => target.id));
}

/** Zulip's check_can_access_user. */
export async function canAccessUser(
  db: UserReader,
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
  db: UserReader,
  target: Pick<UserProfile, 'id' | 'realm_id' | 'is_bot'>,
  options: { throughChannels?: boolean } = {},
): Promise<number[]> {
  return (await usersWhoCanAccessUser(db, target, options)).map((user) => user.id);
}

/** userIdsWhoCanAccessUser with each user's role (one read, where a second would list every id). */
export async function usersWhoCanAccessUser(
  db: UserReader,
  target: Pick<UserProfile, 'id' | 'realm_id' | 'is_bot'>,
  { throughChannels = true }: { throughChannels?: boolean } = {},
): Promise<{ id: number; role: number }[]> {
  const active = await db.userProfile.findMany({
    where: { realm_id: target.realm_id, is_active: true },
    select: { id: true, role: true },
  });
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
