// Creating users, their credentials, and the changes that follow them around the realm:
// role (with the system groups that mirror it), name, deactivation.

import { invalidateAuthCache, SessionStore, userAuthCacheKey } from '@teamchat/bus';
import { CannotDeactivateLastUserError, JsonableError, OrganizationOwnerRequiredError } from '@teamchat/core';
import { Prisma, transaction, type Realm, type Tx, type UserProfile } from '@teamchat/db';
import {
  apiUserDict,
  canAccessDeliveryEmail,
  channelPeerIds,
  directSystemGroupsForRole,
  EmailVisibility,
  generateApiKey,
  getSystemBot,
  hashApiKey,
  hashPassword,
  INACCESSIBLE_USER_NAME,
  metadataAccessUserIds,
  newUserSettings,
  openBotSecret,
  placeholderEmail,
  realmAdministratorIds,
  realmSettings,
  Role,
  ROLE_VALUES,
  sealBotSecret,
  silentMentionSyntax,
  streamSettingGroups,
  userIdsWhoCanAccessUser,
  usersWhoCanAccessUser,
  lockRealm,
  writeInternalMessage,
  type InternalMessageInput,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { botOwnerUserIds } from '../lib/bots';
import { activeUserIds, hasWaitedFullMemberPeriod } from '../lib/users';
import { setProfileData, type ProfileDataUpdate } from './profile-fields';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'redis' | 'env'>;

export interface CreateUserInput {
  email: string;
  fullName: string;
  role?: number;
  password?: string;
  /** Set for bots: 1 generic, 2 incoming webhook, 3 outgoing webhook, 4 embedded. */
  botType?: number;
  botOwnerId?: number;
  emailAddressVisibility?: number;
  timezone?: string;
  /** Named user groups the new user joins besides the system groups of their role. */
  groupIds?: number[];
  /** Who made this account (recorded on the invitation's behalf; unused otherwise). */
  description?: string;
  /** Bots: their default channels (ids) and whether they register for every public channel. */
  defaultSendingStreamId?: number | null;
  defaultEventsRegisterStreamId?: number | null;
  defaultAllPublicStreams?: boolean;
  /** The inviter of an email invitation that asked to be told when the person joins (notify_referrer_on_join). */
  notifyReferrerId?: number;
}

export interface CreatedUser {
  user: UserProfile;
  /** Shown once: only its hash is stored. */
  apiKey: string;
}

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+$/;

/** Creates an account in `realm`, with its system-group memberships and a first API key. */
export async function doCreateUser(deps: Deps, realm: Realm, input: CreateUserInput): Promise<CreatedUser> {
  if (!EMAIL_PATTERN.test(input.email.trim())) throw new JsonableError(`Invalid email '${input.email}'`);
  if (!ROLE_VALUES.includes(input.role ?? Role.MEMBER)) throw new JsonableError('Invalid role');
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  return transaction(deps.db, (tx) => createUserInTransaction(deps, tx, realm, input, passwordHash));
}

/** doCreateUser within the caller's transaction (a bot's creation adds its service to it). */
export async function createUserInTransaction(
  deps: Deps,
  tx: Tx,
  realm: Realm,
  input: CreateUserInput,
  passwordHash: string | null,
): Promise<CreatedUser> {
  const deliveryEmail = input.email.trim().toLowerCase();
  const role = input.role ?? Role.MEMBER;
  if (await tx.db.userProfile.findFirst({ where: { realm_id: realm.id, delivery_email: deliveryEmail } })) {
    throw new JsonableError(`Email '${deliveryEmail}' already in use`);
  }
  // New accounts start with the organisation's defaults (Zulip's copy_default_settings), read
  // here rather than from the caller's realm row, which may predate a change.
  const defaults = newUserSettings(
    await tx.db.realm.findUniqueOrThrow({ where: { id: realm.id }, select: { user_settings_defaults: true } }),
  );
  // Bots' addresses are visible to everyone: nothing private about them (Zulip's create_user).
  const visibility =
    input.botType !== undefined
      ? EmailVisibility.EVERYONE
      : (input.emailAddressVisibility ?? defaults.emailAddressVisibility ?? EmailVisibility.EVERYONE);
  let user = await tx.db.userProfile.create({
    data: {
      realm_id: realm.id,
      email: deliveryEmail,
      delivery_email: deliveryEmail,
      full_name: input.fullName,
      role,
      is_bot: input.botType !== undefined,
      bot_type: input.botType ?? null,
      bot_owner_id: input.botOwnerId ?? null,
      default_sending_stream_id: input.defaultSendingStreamId ?? null,
      default_events_register_stream_id: input.defaultEventsRegisterStreamId ?? null,
      default_all_public_streams: input.defaultAllPublicStreams ?? false,
      password_hash: passwordHash,
      email_address_visibility: visibility,
      timezone: input.timezone ?? '',
      settings: defaults.settings as Prisma.InputJsonObject,
    },
  });
  if (visibility !== EmailVisibility.EVERYONE) {
    user = await tx.db.userProfile.update({
      where: { id: user.id },
      data: { email: placeholderEmail(user.id, realm) },
    });
  }
  const systemGroups = await tx.db.userGroup.findMany({
    where: {
      realm_id: realm.id,
      is_system_group: true,
      name: { in: directSystemGroupsForRole(role, hasWaitedFullMemberPeriod(realm, user.date_joined)) },
    },
    select: { id: true },
  });
  const extraGroups = input.groupIds?.length
    ? await tx.db.userGroup.findMany({
        where: { realm_id: realm.id, id: { in: input.groupIds }, named: true, deactivated: false },
        select: { id: true },
      })
    : [];
  const groups = [...systemGroups, ...extraGroups];
  await tx.db.userGroupMembership.createMany({
    data: groups.map((group) => ({ user_group_id: group.id, user_profile_id: user.id })),
  });
  const apiKey = await issueApiKey(deps, tx, user, input.description ?? 'signup');
  // The email invitations this account answers are used up, whichever way it signed up
  // (Zulip's process_new_human_user), and leave their inviters' and administrators' lists.
  if (input.botType === undefined) {
    const used = await tx.db.preregistrationUser.updateMany({
      where: { realm_id: realm.id, email: deliveryEmail, status: InviteStatus.ACTIVE },
      data: { status: InviteStatus.USED },
    });
    if (used.count > 0) await notifyInvitesChanged(deps, tx, realm.id, null);
  }

  await notifyCreatedUser(deps, tx, user);
  if (input.botType === undefined) await sendNewUserNotifications(deps, tx, realm, user, input.notifyReferrerId);
  const audience = await activeUserIds(tx.db, realm.id);
  for (const group of groups) {
    await deps.bus.sendEventOnCommit(
      tx,
      realm.id,
      { type: 'user_group', op: 'add_members', group_id: group.id, user_ids: [user.id] },
      audience,
    );
  }
  return { user, apiKey };
}

/**
 * What the notification bot says of a new person, in the creation's transaction (Zulip's
 * process_new_human_user and notify_new_user): to the inviter who asked, "accepted your
 * invitation"; in the organisation's signup announcements channel, when it has one and this is
 * not its first person, "joined this organization." in the topic "signups".
 */
async function sendNewUserNotifications(
  deps: Deps,
  tx: Tx,
  realm: Realm,
  user: UserProfile,
  referrerId: number | undefined,
): Promise<void> {
  const db = tx.db;
  const bot = await getSystemBot(db);
  const send = async (to: InternalMessageInput['to'], content: string) => {
    const written = await writeInternalMessage(db, { realm, sender: bot, to, content });
    for (const { event, users } of written.events) await deps.bus.sendEventOnCommit(tx, realm.id, event, users);
  };
  const mention = silentMentionSyntax(user);
  if (referrerId !== undefined) {
    const referrer = await db.userProfile.findUnique({ where: { id: referrerId } });
    if (referrer?.is_active && referrer.realm_id === realm.id)
      await send({ userIds: [referrer.id] }, `${mention} accepted your invitation to join Zulip!`);
  }
  const humans = await db.userProfile.count({ where: { realm_id: realm.id, is_active: true, is_bot: false } });
  if (humans <= 1) return;
  const current = await db.realm.findUniqueOrThrow({ where: { id: realm.id } });
  const channelId = realmSettings(current).realm_signup_announcements_stream_id;
  if (typeof channelId !== 'number' || channelId < 0) return;
  const stream = await db.stream.findFirst({ where: { id: channelId, realm_id: realm.id, is_archived: false } });
  if (stream) await send({ stream, topic: 'signups' }, `${mention} joined this organization.`);
}

/**
 * realm_user add, to those who may see the new user (Zulip's notify_created_user): one copy
 * with the real email for those allowed to see it, one without for the others.
 */
async function notifyCreatedUser(deps: Deps, tx: Tx, user: UserProfile): Promise<void> {
  const audience = await usersWhoCanAccessUser(tx.db, user);
  const seeing = audience.filter((viewer) => canAccessDeliveryEmail(viewer, user));
  const notSeeing = audience.filter((viewer) => !canAccessDeliveryEmail(viewer, user));
  const profileData = user.is_bot ? undefined : {};
  for (const group of [seeing, notSeeing]) {
    if (group.length === 0) continue;
    const person = apiUserDict(user, group[0], { profileData });
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      { type: 'realm_user', op: 'add', person },
      group.map((viewer) => viewer.id),
    );
  }
}

/** A new key: only its hash is kept, and for a bot also the key sealed, to show its owner again (docs/adr/0007). */
async function issueApiKey(
  deps: Deps,
  tx: Tx,
  user: Pick<UserProfile, 'id' | 'is_bot'>,
  description: string,
): Promise<string> {
  const apiKey = generateApiKey();
  const sealed = user.is_bot ? sealBotSecret(apiKey, user.id, deps.env.INTERNAL_JWT_SECRET) : null;
  await tx.db.apiKey.create({
    data: { user_profile_id: user.id, key_hash: hashApiKey(apiKey), sealed_key: sealed, description },
  });
  return apiKey;
}

/**
 * A new API key for another client of the same user (each login gets its own). A bot has one
 * key, kept sealed: its clients get that key while it can be opened.
 */
export async function doIssueApiKey(deps: Deps, userId: number, description: string): Promise<string> {
  return transaction(deps.db, async (tx) => {
    const user = await tx.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
    if (user.is_bot) {
      const kept = await tx.db.apiKey.findFirst({
        where: { user_profile_id: userId, sealed_key: { not: null } },
        orderBy: { id: 'desc' },
      });
      const key = kept?.sealed_key ? openBotSecret(kept.sealed_key, userId, deps.env.INTERNAL_JWT_SECRET) : null;
      if (key !== null) return key;
    }
    return issueApiKey(deps, tx, user, description);
  });
}

/**
 * Revokes every API key of the user and issues one new key (Zulip's do_regenerate_api_key):
 * for a bot, realm_bot update with the new key to those who administer it.
 */
export async function doRegenerateApiKey(deps: Deps, userId: number): Promise<string> {
  return transaction(deps.db, async (tx) => {
    const user = await tx.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
    const old = await tx.db.apiKey.findMany({ where: { user_profile_id: userId }, select: { key_hash: true } });
    await tx.db.apiKey.deleteMany({ where: { user_profile_id: userId } });
    const apiKey = await issueApiKey(deps, tx, user, 'regenerated');
    if (user.is_bot) await sendBotUpdate(deps, tx, user, { api_key: apiKey });
    tx.onCommit(() =>
      invalidateAuthCache(
        deps.redis,
        deps.env,
        old.map((row) => row.key_hash),
      ),
    );
    return apiKey;
  });
}

/** Sets a user's password (an operator's command, a password reset): every browser session of theirs ends. */
export async function doSetPassword(deps: Deps, userId: number, password: string): Promise<void> {
  await deps.db.userProfile.update({ where: { id: userId }, data: { password_hash: await hashPassword(password) } });
  await new SessionStore(deps.redis, deps.env.REDIS_PREFIX).revokeUser(userId);
}

/**
 * After commit, the gateway forgets what it cached about these users' keys and sessions (role,
 * activity).
 */
async function invalidateKeysAfterCommit(deps: Deps, tx: Tx, userIds: number[]): Promise<void> {
  const keys = await tx.db.apiKey.findMany({ where: { user_profile_id: { in: userIds } }, select: { key_hash: true } });
  tx.onCommit(() =>
    invalidateAuthCache(deps.redis, deps.env, [
      ...keys.map((key) => key.key_hash),
      ...userIds.map((id) => userAuthCacheKey(id)),
    ]),
  );
}

/** realm_user update about `target`, to everyone who can access them. */
export async function sendPersonUpdate(
  deps: Deps,
  tx: Tx,
  target: UserProfile,
  person: Record<string, unknown>,
): Promise<void> {
  const audience = await userIdsWhoCanAccessUser(tx.db, target);
  await deps.bus.sendEventOnCommit(
    tx,
    target.realm_id,
    { type: 'realm_user', op: 'update', person: { user_id: target.id, ...person } },
    audience,
  );
}

/**
 * Changes a user's role and keeps the system groups in step (Zulip's do_change_user_role):
 * the user leaves the system groups of the old role and joins those of the new one.
 */
async function changeUserRole(deps: Deps, tx: Tx, targetId: number, role: number): Promise<void> {
  const before = await tx.db.userProfile.findUniqueOrThrow({ where: { id: targetId }, include: { realm: true } });
  await lockRealm(tx.db, before.realm_id);
  if (before.role === Role.OWNER && role !== Role.OWNER && !before.is_bot) {
    const owners = await tx.db.userProfile.count({
      where: { realm_id: before.realm_id, role: Role.OWNER, is_active: true, is_bot: false },
    });
    if (owners <= 1)
      throw new JsonableError('The owner permission cannot be removed from the only organization owner.');
  }
  const target = await tx.db.userProfile.update({ where: { id: targetId }, data: { role } });
  const wanted = await tx.db.userGroup.findMany({
    where: {
      realm_id: target.realm_id,
      is_system_group: true,
      name: { in: directSystemGroupsForRole(role, hasWaitedFullMemberPeriod(before.realm, target.date_joined)) },
    },
    select: { id: true },
  });
  const current = await tx.db.userGroupMembership.findMany({
    where: { user_profile_id: target.id, user_group: { is_system_group: true } },
    select: { user_group_id: true },
  });
  const wantedIds = new Set(wanted.map((group) => group.id));
  const currentIds = new Set(current.map((row) => row.user_group_id));
  const leaving = [...currentIds].filter((id) => !wantedIds.has(id));
  const joining = [...wantedIds].filter((id) => !currentIds.has(id));
  await tx.db.userGroupMembership.deleteMany({ where: { user_profile_id: target.id, user_group_id: { in: leaving } } });
  await tx.db.userGroupMembership.createMany({
    data: joining.map((groupId) => ({ user_group_id: groupId, user_profile_id: target.id })),
  });

  // Bots' role is in realm_user only: realm_bot has no role (Zulip's do_change_user_role).
  await sendPersonUpdate(deps, tx, target, { role });
  const everyone = await activeUserIds(tx.db, target.realm_id);
  for (const groupId of leaving) {
    await deps.bus.sendEventOnCommit(
      tx,
      target.realm_id,
      { type: 'user_group', op: 'remove_members', group_id: groupId, user_ids: [target.id] },
      everyone,
    );
  }
  for (const groupId of joining) {
    await deps.bus.sendEventOnCommit(
      tx,
      target.realm_id,
      { type: 'user_group', op: 'add_members', group_id: groupId, user_ids: [target.id] },
      everyone,
    );
  }
  await invalidateKeysAfterCommit(deps, tx, [target.id]);
}

/** Renames a user: realm_user update to those who can access them, realm_bot update for a bot. Returns the updated row. */
export async function changeFullName(deps: Deps, tx: Tx, targetId: number, fullName: string): Promise<UserProfile> {
  const target = await tx.db.userProfile.update({ where: { id: targetId }, data: { full_name: fullName } });
  await sendPersonUpdate(deps, tx, target, { full_name: fullName });
  if (target.is_bot) await sendBotUpdate(deps, tx, target, { full_name: fullName });
  return target;
}

export interface UserUpdate {
  role?: number;
  fullName?: string;
  profileData?: ProfileDataUpdate[];
}

/** An administrator's changes to one user (PATCH /users/{id}), all or nothing. */
export async function doUpdateUser(
  deps: Deps,
  actor: UserProfile,
  targetId: number,
  update: UserUpdate,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    if (update.role !== undefined) await changeUserRole(deps, tx, targetId, update.role);
    if (update.fullName !== undefined) await changeFullName(deps, tx, targetId, update.fullName);
    if (update.profileData !== undefined) await setProfileData(deps, tx, actor, targetId, update.profileData);
  });
}

/** Changes one user's role (the manage command and tests use it; the API goes through doUpdateUser). */
export async function doChangeUserRole(deps: Deps, targetId: number, role: number): Promise<void> {
  await transaction(deps.db, (tx) => changeUserRole(deps, tx, targetId, role));
}

/** realm_bot update about `bot`, to those who administer it (Zulip's bot_owner_user_ids). */
export async function sendBotUpdate(
  deps: Pick<Deps, 'bus'>,
  tx: Tx,
  bot: UserProfile,
  fields: Record<string, unknown>,
): Promise<void> {
  await deps.bus.sendEventOnCommit(
    tx,
    bot.realm_id,
    { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, ...fields } },
    await botOwnerUserIds(tx.db, bot),
  );
}

/**
 * Zulip's deactivate_user_own_backend rules, checked under a realm lock: not the only active
 * user, and not the only human owner.
 */
export async function doDeactivateOwnUser(deps: Deps, userId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const user = await tx.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
    await lockRealm(tx.db, user.realm_id);
    const activeUsers = await tx.db.userProfile.count({ where: { realm_id: user.realm_id, is_active: true } });
    if (activeUsers === 1) throw new CannotDeactivateLastUserError(false);
    if (user.role === Role.OWNER && !user.is_bot && (await activeHumanOwnerCount(tx, user.realm_id)) === 1)
      throw new CannotDeactivateLastUserError(true);
    await deactivateInTransaction(deps, tx, user);
  });
}

/**
 * An administrator deactivates another user (Zulip's deactivate_user_backend; the caller has
 * checked access): owners only by owners, never the only human owner. Re-checked under the
 * realm lock, so two concurrent requests cannot deactivate the last two owners.
 */
export async function doDeactivateUser(
  deps: Deps,
  actor: Pick<UserProfile, 'role' | 'realm_id'>,
  targetId: number,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    // The caller found the target in the actor's realm.
    await lockRealm(tx.db, actor.realm_id);
    const target = await tx.db.userProfile.findUniqueOrThrow({ where: { id: targetId } });
    if (!target.is_active) throw new JsonableError('User is deactivated');
    if (target.role === Role.OWNER && actor.role !== Role.OWNER) throw new OrganizationOwnerRequiredError();
    if (target.role === Role.OWNER && !target.is_bot && (await activeHumanOwnerCount(tx, target.realm_id)) === 1) {
      throw new JsonableError('Cannot deactivate the only organization owner');
    }
    await deactivateInTransaction(deps, tx, target);
  });
}

async function activeHumanOwnerCount(tx: Tx, realmId: number): Promise<number> {
  return tx.db.userProfile.count({ where: { realm_id: realmId, role: Role.OWNER, is_active: true, is_bot: false } });
}

/**
 * Deactivates a user and, for a human, the bots they own (Zulip's do_deactivate_user and
 * send_events_for_user_deactivation): peer_remove for the channels they were subscribed to;
 * realm_user update to those who still see them; in a realm restricting who sees whom, guests
 * who saw them only through a channel (channels show active users only) get realm_user remove,
 * and everyone who no longer sees them sees them leave their groups; their reusable
 * invitations stop working, and the gateway forgets their keys.
 */
export async function deactivateInTransaction(deps: Deps, tx: Tx, user: UserProfile): Promise<void> {
  const bots = user.is_bot
    ? []
    : await tx.db.userProfile.findMany({ where: { bot_owner_id: user.id, is_active: true, is_bot: true } });
  const deactivated = [user, ...bots];
  await tx.db.userProfile.updateMany({
    where: { id: { in: deactivated.map((u) => u.id) } },
    data: { is_active: false },
  });
  const revoked = await tx.db.multiuseInvite.updateMany({
    where: { referred_by_id: user.id, status: 0, OR: [{ expiry_date: null }, { expiry_date: { gt: new Date() } }] },
    data: { expiry_date: new Date() },
  });
  const everyone = await activeUserIds(tx.db, user.realm_id);
  for (const target of deactivated) {
    const updated = { ...target, is_active: false };
    await sendPeerEvents(deps, tx, updated, 'peer_remove');
    const audience = await userIdsWhoCanAccessUser(tx.db, updated, { throughChannels: false });
    await deps.bus.sendEventOnCommit(
      tx,
      target.realm_id,
      { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: false } },
      audience,
    );
    const hears = new Set(audience);
    const unaware = everyone.filter((id) => !hears.has(id));
    if (unaware.length) {
      // Of those, the ones a shared channel showed them to lose them altogether.
      const peers = await channelPeerIds(tx.db, target.id);
      const losingAccess = unaware.filter((id) => peers.has(id));
      if (losingAccess.length) {
        const person = { user_id: target.id, full_name: INACCESSIBLE_USER_NAME };
        await deps.bus.sendEventOnCommit(
          tx,
          target.realm_id,
          { type: 'realm_user', op: 'remove', person },
          losingAccess,
        );
      }
      const memberships = await tx.db.userGroupMembership.findMany({
        where: { user_profile_id: target.id, user_group: { named: true } },
        select: { user_group_id: true },
        orderBy: { user_group_id: 'asc' },
      });
      for (const { user_group_id } of memberships) {
        await deps.bus.sendEventOnCommit(
          tx,
          target.realm_id,
          { type: 'user_group', op: 'remove_members', group_id: user_group_id, user_ids: [target.id] },
          unaware,
        );
      }
    }
    if (target.is_bot) await sendBotUpdate(deps, tx, updated, { is_active: false });
  }
  if (revoked.count > 0) await notifyInvitesChanged(deps, tx, user.realm_id, null);
  await invalidateKeysAfterCommit(
    deps,
    tx,
    deactivated.map((u) => u.id),
  );
  // Their browser sessions end too (a reactivated user logs in again).
  const sessions = new SessionStore(deps.redis, deps.env.REDIS_PREFIX);
  tx.onCommit(() => Promise.all(deactivated.map((u) => sessions.revokeUser(u.id))).then(() => undefined));
}

/**
 * An administrator (or a bot's owner) reactivates a user (Zulip's do_reactivate_user): a bot
 * whose owner is deactivated passes to the one reactivating it; realm_user update to those
 * who can access the user, realm_bot update for a bot, peer_add for their channels, and
 * add_members for their groups (clients dropped them from every group on deactivation).
 * Reactivating an active user changes nothing.
 */
export async function doReactivateUser(
  deps: Deps,
  actor: Pick<UserProfile, 'id' | 'realm_id'>,
  targetId: number,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    // The caller found the target in the actor's realm.
    await lockRealm(tx.db, actor.realm_id);
    const before = await tx.db.userProfile.findUniqueOrThrow({ where: { id: targetId }, include: { bot_owner: true } });
    if (before.is_active) return;
    const newOwner =
      before.is_bot && before.bot_owner !== null && !before.bot_owner.is_active && before.bot_owner_id !== actor.id
        ? actor.id
        : null;
    const target = await tx.db.userProfile.update({
      where: { id: targetId },
      data: { is_active: true, ...(newOwner !== null ? { bot_owner_id: newOwner } : {}) },
    });

    const audience = await userIdsWhoCanAccessUser(tx.db, target);
    await deps.bus.sendEventOnCommit(
      tx,
      target.realm_id,
      { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: true } },
      audience,
    );
    if (target.is_bot) {
      await sendBotUpdate(deps, tx, target, { is_active: true });
      if (newOwner !== null) {
        await sendBotUpdate(deps, tx, target, { owner_id: newOwner });
        await sendPersonUpdate(deps, tx, target, { bot_owner_id: newOwner });
      }
    }
    await sendPeerEvents(deps, tx, target, 'peer_add');
    const everyone = await activeUserIds(tx.db, target.realm_id);
    const memberships = await tx.db.userGroupMembership.findMany({
      where: { user_profile_id: target.id, user_group: { named: true } },
      select: { user_group_id: true },
      orderBy: { user_group_id: 'asc' },
    });
    for (const { user_group_id } of memberships) {
      await deps.bus.sendEventOnCommit(
        tx,
        target.realm_id,
        { type: 'user_group', op: 'add_members', group_id: user_group_id, user_ids: [target.id] },
        everyone,
      );
    }
    await invalidateKeysAfterCommit(deps, tx, [target.id]);
  });
}

/**
 * peer_remove / peer_add for every channel the user is subscribed to, to those who track its
 * subscriber list (computed with the user's new activity: a deactivated user is nobody's peer).
 */
async function sendPeerEvents(
  deps: Deps,
  tx: Tx,
  user: Pick<UserProfile, 'id' | 'realm_id'>,
  op: 'peer_add' | 'peer_remove',
): Promise<void> {
  const streams = await tx.db.stream.findMany({
    where: {
      realm_id: user.realm_id,
      is_archived: false,
      subscriptions: { some: { user_profile_id: user.id, active: true } },
    },
    select: { id: true, realm_id: true, invite_only: true, is_web_public: true },
    orderBy: { id: 'asc' },
  });
  if (streams.length === 0) return;
  const settings = await streamSettingGroups(
    tx.db,
    streams.map((stream) => stream.id),
  );
  for (const stream of streams) {
    const audience = (await metadataAccessUserIds(tx.db, stream, settings.get(stream.id) ?? {})).filter(
      (id) => id !== user.id,
    );
    if (audience.length === 0) continue;
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      { type: 'subscription', op, stream_ids: [stream.id], user_ids: [user.id] },
      audience,
    );
  }
}

/** An invitation's status (Zulip's values): usable, used by its account (email invitations), revoked. */
export const InviteStatus = { ACTIVE: 0, USED: 1, REVOKED: 2 } as const;

/** invites_changed to the realm's administrators and the inviter (Zulip's notify_invites_changed). */
export async function notifyInvitesChanged(
  deps: Pick<Deps, 'bus'>,
  tx: Tx,
  realmId: number,
  inviterId: number | null,
): Promise<void> {
  const audience = new Set(await realmAdministratorIds(tx.db, realmId));
  if (inviterId !== null) {
    const inviter = await tx.db.userProfile.findUnique({ where: { id: inviterId }, select: { is_active: true } });
    if (inviter?.is_active) audience.add(inviterId);
  }
  await deps.bus.sendEventOnCommit(tx, realmId, { type: 'invites_changed' }, [...audience]);
}
