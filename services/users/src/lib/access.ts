// The checks Zulip's view decorators and access_* helpers make (zerver/decorator.py,
// zerver/lib/users.py). Views load the acting user with @teamchat/domain's loadActor.

import { JsonableError, OrganizationAdministratorRequiredError, OrganizationOwnerRequiredError } from '@teamchat/core';
import type { TxClient, UserProfile } from '@teamchat/db';
import {
  ACCESSIBLE_EMAIL_VISIBILITIES,
  canAccessUser,
  isAdministrator,
  isGuest,
  isOwner,
  placeholderEmailDomain,
  type Actor,
} from '@teamchat/domain';

type Reader = Pick<
  TxClient,
  '$queryRaw' | 'userProfile' | 'userGroup' | 'groupSetting' | 'userGroupMembership' | 'groupGroupMembership' | 'realm'
>;

/** Zulip's @require_member_or_admin. */
export function requireMemberOrAdmin(actor: Pick<UserProfile, 'role' | 'is_bot'>): void {
  if (isGuest(actor.role)) throw new JsonableError('Not allowed for guest users');
  if (actor.is_bot) throw new JsonableError('This endpoint does not accept bot requests.');
}

/** Zulip's @human_users_only. */
export function requireHuman(actor: Pick<UserProfile, 'is_bot'>): void {
  if (actor.is_bot) throw new JsonableError('This endpoint does not accept bot requests.');
}

/** Zulip's @require_realm_admin. */
export function requireAdministrator(actor: Pick<UserProfile, 'role'>): void {
  if (!isAdministrator(actor.role)) throw new OrganizationAdministratorRequiredError();
}

/** Zulip's @require_realm_owner. */
export function requireOwner(actor: Pick<UserProfile, 'role'>): void {
  if (!isOwner(actor.role)) throw new OrganizationOwnerRequiredError();
}

/** Zulip's UserProfile.can_admin_user: administrators, and owners of bots for their bots. */
export function canAdministerUser(
  actor: Pick<UserProfile, 'id' | 'role' | 'realm_id'>,
  target: Pick<UserProfile, 'bot_owner_id' | 'realm_id'>,
): boolean {
  if (target.bot_owner_id === actor.id) return true;
  return isAdministrator(actor.role) && actor.realm_id === target.realm_id;
}

export interface UserAccessOptions {
  allowDeactivated?: boolean;
  allowBots?: boolean;
  /** Administrative access (changing the user), not just reading them. */
  forAdmin: boolean;
}

/** Zulip's access_user_common. */
async function accessUserCommon(
  db: Reader,
  actor: UserProfile,
  target: UserProfile,
  options: UserAccessOptions,
): Promise<UserProfile> {
  if (target.is_bot && !options.allowBots) throw new JsonableError('No such user');
  if (!target.is_active && !options.allowDeactivated) throw new JsonableError('User is deactivated');
  if (!options.forAdmin) {
    if (!(await canAccessUser(db, actor, target))) throw new JsonableError('Insufficient permission');
    return target;
  }
  if (!canAdministerUser(actor, target)) throw new JsonableError('Insufficient permission');
  return target;
}

export async function accessUserById(
  db: Reader,
  actor: UserProfile,
  userId: number,
  options: UserAccessOptions,
): Promise<UserProfile> {
  const target = await db.userProfile.findFirst({ where: { id: userId, realm_id: actor.realm_id } });
  if (!target) throw new JsonableError('No such user');
  return accessUserCommon(db, actor, target, options);
}

/**
 * Zulip's access_user_by_email: the placeholder address user{id}@{realm host} works for
 * everyone; a real email only finds users whose email visibility lets the actor see it, in
 * one query, so a hidden address answers exactly like one that does not exist.
 */
export async function accessUserByEmail(
  db: Reader,
  { user: actor, realm }: Actor,
  email: string,
  options: UserAccessOptions,
): Promise<UserProfile> {
  const domain = placeholderEmailDomain(realm).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const placeholder = new RegExp(`^user(\\d+)@${domain}$`, 'i').exec(email.trim());
  if (placeholder) return accessUserById(db, actor, Number(placeholder[1]), options);
  // No email holds a NUL (PostgreSQL text cannot): no such user, rather than a failed query.
  if (email.includes('\u0000')) throw new JsonableError('No such user');
  const target = await db.userProfile.findFirst({
    where: {
      realm_id: actor.realm_id,
      delivery_email: email.trim().toLowerCase(),
      email_address_visibility: { in: [...(ACCESSIBLE_EMAIL_VISIBILITIES[actor.role] ?? [])] },
    },
  });
  if (!target) throw new JsonableError('No such user');
  return accessUserCommon(db, actor, target, options);
}

/** A user named in a path by id or by email (GET /users/{user_id_or_email}...). */
export async function accessUserByIdOrEmail(
  db: Reader,
  actor: Actor,
  key: string,
  options: UserAccessOptions,
): Promise<UserProfile> {
  if (!/^[0-9]+$/.test(key)) return accessUserByEmail(db, actor, key, options);
  if (Number(key) > 2 ** 31 - 1) throw new JsonableError('No such user');
  return accessUserById(db, actor.user, Number(key), options);
}

/** Zulip's user_ids_to_users: every id must be a (by default active) user of the realm. */
export async function usersByIds(
  db: Reader,
  realmId: number,
  userIds: number[],
  options: { allowDeactivated: boolean },
): Promise<UserProfile[]> {
  const users = await db.userProfile.findMany({
    where: { id: { in: userIds }, realm_id: realmId, ...(options.allowDeactivated ? {} : { is_active: true }) },
  });
  const found = new Set(users.map((user) => user.id));
  for (const id of userIds) {
    if (!found.has(id)) throw new JsonableError(`Invalid user ID: ${id}`);
  }
  return users;
}
