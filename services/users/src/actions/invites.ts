// Reusable invitation links (Zulip's zerver/views/invite.py and zerver/actions/invites.py):
// who may create one and with what, listing and revoking them.

import { randomBytes } from 'node:crypto';
import { JsonableError, OrganizationOwnerRequiredError } from '@teamchat/core';
import { transaction, type MultiuseInvite, type Realm, type Stream, type Tx, type UserProfile } from '@teamchat/db';
import {
  accessStreamById,
  channelsUserCannotAddSubscribersTo,
  hasRealmPermission,
  isAdministrator,
  isModerator,
  isOwner,
  realmEmailValidator,
  realmUrl,
  Role,
  type Actor,
  type RealmEmailProblem,
  lockRealm,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { accessUserGroupForUpdate } from '../lib/user-groups';
import { InviteStatus, notifyInvitesChanged } from './users';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'env' | 'jobs'>;

/**
 * The invitation email goes out from the worker's email job (packages/notifications), once
 * per job id: one per invitation, and one per resend.
 */
async function enqueueInvitationEmail(deps: Deps, invite: { id: number; realm_id: number }, resend: boolean) {
  const jobId = resend ? `invitation-${invite.id}-resend-${Date.now()}` : `invitation-${invite.id}`;
  await deps.jobs.queue('email').add(
    'email',
    { kind: 'invitation', realmId: invite.realm_id, preregistrationId: invite.id, resend },
    {
      jobId,
      attempts: 10,
      backoff: { type: 'exponential', delay: 2000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    },
  );
}

/** Zulip's INVITATION_LINK_VALIDITY_MINUTES (10 days). */
export const INVITATION_LINK_VALIDITY_MINUTES = 14400;
export const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH = 8000;

/** 24 characters of base32, as Zulip's confirmation keys. */
function generateConfirmationKey(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = randomBytes(24);
  return [...bytes].map((byte) => alphabet[byte % 32]).join('');
}

export function inviteLink(realm: Pick<Realm, 'host'>, key: string, scheme: string): string {
  return `${realmUrl(realm, scheme)}/join/${key}/`;
}

/**
 * Zulip's check_role_based_permissions, with the spec's rule for invite_as: "a user can invite
 * only to roles equal or more restricted than their own" — so moderators may invite moderators
 * (Zulip itself asks for an administrator there; the spec wins).
 */
function checkRoleBasedPermissions(invitedAs: number, actor: UserProfile): void {
  if (invitedAs === Role.OWNER && !isOwner(actor.role)) throw new OrganizationOwnerRequiredError();
  if (invitedAs === Role.ADMINISTRATOR && !isAdministrator(actor.role))
    throw new JsonableError('Must be an organization administrator');
  if (invitedAs === Role.MODERATOR && !isModerator(actor.role))
    throw new JsonableError('Must be an organization administrator');
}

/** Zulip's access_streams_for_invite: channels the actor sees, and may subscribe others to. */
async function accessStreamsForInvite(tx: Tx, actor: UserProfile, streamIds: number[]): Promise<Stream[]> {
  const streams: Stream[] = [];
  for (const streamId of streamIds) {
    try {
      const { stream } = await accessStreamById(tx.db, actor, streamId);
      if (stream.is_archived) throw new JsonableError('Invalid channel ID');
      streams.push(stream);
    } catch (error) {
      if (!(error instanceof JsonableError)) throw error;
      throw new JsonableError(`Invalid channel ID ${streamId}. No invites were sent.`);
    }
  }
  if ((await channelsUserCannotAddSubscribersTo(tx.db, actor, streams, { allowDefaultStreams: true })).length) {
    throw new JsonableError('You do not have permission to subscribe other users to channels.');
  }
  return streams;
}

/** Zulip's access_user_groups_for_invite: groups the actor may add members to. */
async function accessUserGroupsForInvite(tx: Tx, actor: UserProfile, groupIds: number[]): Promise<void> {
  for (const groupId of groupIds)
    await accessUserGroupForUpdate(tx.db, actor, groupId, 'can_add_members_group', { allowDeactivated: false });
}

export interface NewMultiuseInvite {
  inviteAs: number;
  /** null: never expires. */
  expiresInMinutes: number | null;
  streamIds: number[];
  groupIds: number[];
  includeRealmDefaultSubscriptions: boolean;
  welcomeMessageCustomText: string | null;
}

/** POST /invites/multiuse: the checks of generate_multiuse_invite_backend, in Zulip's order. */
export async function doCreateMultiuseInvite(
  deps: Deps,
  { user: actor, realm }: Actor,
  input: NewMultiuseInvite,
): Promise<string> {
  return transaction(deps.db, async (tx) => {
    if (!(await hasRealmPermission(tx.db, actor, 'create_multiuse_invite_group')))
      throw new JsonableError('Insufficient permission');
    checkRoleBasedPermissions(input.inviteAs, actor);
    const streams = await accessStreamsForInvite(tx, actor, input.streamIds);
    await accessUserGroupsForInvite(tx, actor, input.groupIds);
    if (input.welcomeMessageCustomText !== null && !isAdministrator(actor.role))
      throw new JsonableError('Must be an organization administrator');

    const invite = await tx.db.multiuseInvite.create({
      data: {
        realm_id: actor.realm_id,
        referred_by_id: actor.id,
        confirmation_key: generateConfirmationKey(),
        invited_as: input.inviteAs,
        expiry_date: input.expiresInMinutes === null ? null : new Date(Date.now() + input.expiresInMinutes * 60_000),
        include_realm_default_subscriptions: input.includeRealmDefaultSubscriptions,
        welcome_message_custom_text: input.welcomeMessageCustomText,
        stream_ids: [...new Set(streams.map((stream) => stream.id))],
        group_ids: [...new Set(input.groupIds)],
      },
    });
    await notifyInvitesChanged(deps, tx, actor.realm_id, actor.id);
    return inviteLink(realm, invite.confirmation_key, deps.env.EXTERNAL_SCHEME);
  });
}

/** Whether the invitation can still be used. */
export function isUsable(invite: Pick<MultiuseInvite, 'status' | 'expiry_date'>, now = new Date()): boolean {
  return invite.status === InviteStatus.ACTIVE && (invite.expiry_date === null || invite.expiry_date > now);
}

/**
 * GET /invites: unexpired, unrevoked invitations the user controls (administrators: all of
 * them), email invitations first, as Zulip's do_get_invites_controlled_by_user.
 */
export async function listInvites(deps: Deps, { user: actor, realm }: Actor) {
  const emailInvites = await deps.db.preregistrationUser.findMany({
    where: {
      realm_id: actor.realm_id,
      status: InviteStatus.ACTIVE,
      OR: [{ expiry_date: null }, { expiry_date: { gte: new Date() } }],
      ...(isAdministrator(actor.role) ? {} : { referred_by_id: actor.id }),
    },
    orderBy: { id: 'asc' },
  });
  const invites = await deps.db.multiuseInvite.findMany({
    where: {
      realm_id: actor.realm_id,
      status: InviteStatus.ACTIVE,
      OR: [{ expiry_date: null }, { expiry_date: { gte: new Date() } }],
      ...(isAdministrator(actor.role) ? {} : { referred_by_id: actor.id }),
    },
    orderBy: { id: 'asc' },
  });
  return [
    ...emailInvites.map((invite) => ({
      id: invite.id,
      email: invite.email,
      invited_by_user_id: invite.referred_by_id,
      invited: Math.floor(invite.invited_at.getTime() / 1000),
      expiry_date: invite.expiry_date === null ? null : Math.floor(invite.expiry_date.getTime() / 1000),
      invited_as: invite.invited_as,
      is_multiuse: false,
      notify_referrer_on_join: invite.notify_referrer_on_join,
    })),
    ...invites.map((invite) => ({
      id: invite.id,
      invited_by_user_id: invite.referred_by_id,
      invited: Math.floor(invite.date_created.getTime() / 1000),
      expiry_date: invite.expiry_date === null ? null : Math.floor(invite.expiry_date.getTime() / 1000),
      invited_as: invite.invited_as,
      link_url: inviteLink(realm, invite.confirmation_key, deps.env.EXTERNAL_SCHEME),
      is_multiuse: true,
    })),
  ];
}

/** DELETE /invites/multiuse/{id} (Zulip's access_multiuse_invite_by_id + do_revoke_multi_use_invite). */
export async function doRevokeMultiuseInvite(deps: Deps, actor: UserProfile, inviteId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const [row] = await tx.db.$queryRaw<
      { id: number }[]
    >`SELECT id FROM multiuse_invite WHERE id = ${inviteId} FOR UPDATE`;
    const invite = row ? await tx.db.multiuseInvite.findUnique({ where: { id: row.id } }) : null;
    if (!invite || invite.realm_id !== actor.realm_id) throw new JsonableError('No such invitation');
    if (invite.referred_by_id !== actor.id) {
      // Someone else's invitation: administrators only (owners for owner invitations).
      if (invite.invited_as === Role.OWNER && !isOwner(actor.role)) throw new OrganizationOwnerRequiredError();
      if (!isAdministrator(actor.role)) throw new JsonableError('Must be an organization administrator');
    }
    if (invite.status === InviteStatus.REVOKED) throw new JsonableError('Invitation has already been revoked');
    await tx.db.multiuseInvite.update({ where: { id: invite.id }, data: { status: InviteStatus.REVOKED } });
    await notifyInvitesChanged(deps, tx, actor.realm_id, invite.referred_by_id);
  });
}

// ---------------------------------------------------------------- email invitations
// Recorded as preregistration_user rows (Zulip's PreregistrationUser); sending the email is
// the notifications work's.

/** Zulip's INVITES_DEFAULT_REALM_DAILY_MAX: invitations an organisation may send in a day. */
export const INVITES_DAILY_MAX = 100;

export interface NewEmailInvites extends NewMultiuseInvite {
  /** The invitee_emails text: addresses separated by commas or newlines, "Name <address>" allowed. */
  inviteeEmails: string;
  notifyReferrerOnJoin: boolean;
}

/** An invitee that was not invited: [email, reason, deactivated] (Zulip's InvitationError.errors). */
type InviteeError = [string, string, boolean];

function invitationError(
  msg: string,
  errors: InviteeError[],
  options: { sentInvitations: boolean; dailyLimitReached?: boolean },
): JsonableError {
  return new JsonableError(msg, {
    code: 'INVITATION_FAILED',
    data: {
      errors,
      sent_invitations: options.sentInvitations,
      license_limit_reached: false,
      daily_limit_reached: options.dailyLimitReached ?? false,
    },
  });
}

/** Zulip's get_invitee_emails_set. */
export function inviteeEmailSet(raw: string): string[] {
  const emails = new Set<string>();
  for (const part of raw.split(/[,\n]/)) {
    const named = /<(.*)>/.exec(part);
    emails.add((named ? named[1] : part).trim());
  }
  return [...emails];
}

const EMAIL_LOCAL = /^[-!#$%&'*+/=?^_`{}|~0-9a-z]+(\.[-!#$%&'*+/=?^_`{}|~0-9a-z]+)*$/i;
const EMAIL_DOMAIN = /^((?=[a-z0-9-]{1,63}\.)[a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z0-9-]{2,63}$/i;

/** Django's validate_email, as far as Zulip's invitations use it. */
function isValidEmail(email: string): boolean {
  if (email.length > 254) return false;
  const at = email.lastIndexOf('@');
  if (at <= 0) return false;
  const domain = email.slice(at + 1);
  return EMAIL_LOCAL.test(email.slice(0, at)) && EMAIL_DOMAIN.test(domain) && !domain.endsWith('-');
}

/**
 * The daily cap (Zulip's check_invite_limit over its invites_sent::day count): `count` more
 * invitation emails must fit with the last 24 hours' (invitations and resends alike). Callers
 * hold the organisation's lock, so concurrent batches see each other's count.
 */
async function checkInviteLimit(tx: Tx, realmId: number, count: number): Promise<void> {
  const since = new Date(Date.now() - 24 * 3600 * 1000);
  const recent = await tx.db.invitationEmailSent.aggregate({
    where: { realm_id: realmId, sent_at: { gte: since } },
    _sum: { count: true },
  });
  if ((recent._sum.count ?? 0) + count > INVITES_DAILY_MAX) {
    throw invitationError(
      'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      [],
      { sentInvitations: false, dailyLimitReached: true },
    );
  }
}

/**
 * The one way an invitation email leaves (Zulip's do_send_user_invite_email): within the daily
 * cap, counted as sent in this transaction, and enqueued once it commits. The caller holds the
 * organisation's lock.
 */
async function sendInvitationEmails(
  deps: Deps,
  tx: Tx,
  realmId: number,
  invites: { id: number; realm_id: number }[],
  options: { resend: boolean },
): Promise<void> {
  if (!invites.length) return;
  await checkInviteLimit(tx, realmId, invites.length);
  await tx.db.invitationEmailSent.create({ data: { realm_id: realmId, count: invites.length } });
  for (const invite of invites) tx.onCommit(() => enqueueInvitationEmail(deps, invite, options.resend));
}

/** Zulip's validate_email_is_valid wording. */
const INVITEE_EMAIL_PROBLEMS: Record<RealmEmailProblem | 'invalid', string> = {
  invalid: 'Invalid address.',
  outside_domains: 'Outside your domain.',
  contains_plus: 'Email addresses containing + are not allowed.',
};

/** POST /invites (Zulip's invite_users_backend + do_invite_users), checks in Zulip's order. */
export async function doInviteUsers(deps: Deps, { user: actor }: Actor, input: NewEmailInvites): Promise<void> {
  const skipped = await transaction(deps.db, async (tx) => {
    if (!(await hasRealmPermission(tx.db, actor, 'can_invite_users_group')))
      throw new JsonableError('Insufficient permission');
    checkRoleBasedPermissions(input.inviteAs, actor);
    if (!input.inviteeEmails) throw new JsonableError('You must specify at least one email address.');
    const invitees = inviteeEmailSet(input.inviteeEmails);
    const streams = await accessStreamsForInvite(tx, actor, input.streamIds);
    await accessUserGroupsForInvite(tx, actor, input.groupIds);
    if (input.welcomeMessageCustomText !== null && !isAdministrator(actor.role))
      throw new JsonableError('Must be an organization administrator');

    // One invitation batch at a time per organisation: the daily count must see the others.
    await lockRealm(tx.db, actor.realm_id);
    await checkInviteLimit(tx, actor.realm_id, invitees.length);

    const errors: InviteeError[] = [];
    const good: string[] = [];
    const realm = await tx.db.realm.findUniqueOrThrow({ where: { id: actor.realm_id } });
    const emailProblem = await realmEmailValidator(tx.db, realm);
    for (const email of invitees) {
      if (email === '') continue;
      const problem = isValidEmail(email) ? emailProblem(email) : 'invalid';
      if (problem === null) good.push(email);
      else errors.push([email, INVITEE_EMAIL_PROBLEMS[problem], false]);
    }
    // Zulip's get_existing_user_errors: an account with the address (any case) already exists.
    const existing = good.length
      ? await tx.db.userProfile.findMany({
          where: {
            realm_id: actor.realm_id,
            OR: good.map((email) => ({ delivery_email: { equals: email, mode: 'insensitive' as const } })),
          },
          select: { delivery_email: true, is_active: true },
        })
      : [];
    const skipped: InviteeError[] = [];
    const toInvite: string[] = [];
    for (const email of good) {
      const account = existing.find((user) => user.delivery_email.toLowerCase() === email.toLowerCase());
      if (!account) toInvite.push(email);
      else if (account.is_active) skipped.push([email, 'Already has an account.', false]);
      else skipped.push([email, 'Account has been deactivated.', true]);
    }
    if (errors.length) {
      throw invitationError(
        "Some emails did not validate, so we didn't send any invitations.",
        [...errors, ...skipped],
        {
          sentInvitations: false,
        },
      );
    }
    if (skipped.length && skipped.length === invitees.length) {
      throw invitationError("We weren't able to invite anyone.", skipped, { sentInvitations: false });
    }
    const now = new Date();
    const expiry = input.expiresInMinutes === null ? null : new Date(now.getTime() + input.expiresInMinutes * 60_000);
    const invites: { id: number; realm_id: number }[] = [];
    for (const email of toInvite) {
      const invite = await tx.db.preregistrationUser.create({
        data: {
          realm_id: actor.realm_id,
          referred_by_id: actor.id,
          email: email.toLowerCase(),
          invited_as: input.inviteAs,
          invited_at: now,
          expiry_date: expiry,
          include_realm_default_subscriptions: input.includeRealmDefaultSubscriptions,
          notify_referrer_on_join: input.notifyReferrerOnJoin,
          welcome_message_custom_text: input.welcomeMessageCustomText,
          stream_ids: [...new Set(streams.map((stream) => stream.id))],
          group_ids: [...new Set(input.groupIds)],
          confirmation_key: generateConfirmationKey(),
        },
      });
      invites.push(invite);
    }
    await sendInvitationEmails(deps, tx, actor.realm_id, invites, { resend: false });
    await notifyInvitesChanged(deps, tx, actor.realm_id, actor.id);
    return skipped;
  });
  if (skipped.length) {
    throw invitationError(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      skipped,
      { sentInvitations: true },
    );
  }
}

/**
 * Zulip's access_invite_by_id: an active invitation of the actor's organisation; someone
 * else's needs an administrator (an owner for an owner's invitation).
 */
async function accessEmailInvite(tx: Tx, actor: UserProfile, inviteId: number) {
  const [row] = await tx.db.$queryRaw<
    { id: number }[]
  >`SELECT id FROM preregistration_user WHERE id = ${inviteId} FOR UPDATE`;
  const invite = row ? await tx.db.preregistrationUser.findUnique({ where: { id: row.id } }) : null;
  // Revoked or used invitations are gone in Zulip (it deletes them).
  if (!invite || invite.realm_id !== actor.realm_id || invite.status !== InviteStatus.ACTIVE)
    throw new JsonableError('No such invitation');
  if (invite.referred_by_id !== actor.id) {
    if (invite.invited_as === Role.OWNER && !isOwner(actor.role)) throw new OrganizationOwnerRequiredError();
    if (!isAdministrator(actor.role)) throw new JsonableError('Must be an organization administrator');
  }
  return invite;
}

/** DELETE /invites/{invite_id} (Zulip's revoke_user_invite). */
export async function doRevokeUserInvite(deps: Deps, actor: UserProfile, inviteId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const invite = await accessEmailInvite(tx, actor, inviteId);
    await tx.db.preregistrationUser.update({ where: { id: invite.id }, data: { status: InviteStatus.REVOKED } });
    await notifyInvitesChanged(deps, tx, actor.realm_id, invite.referred_by_id);
  });
}

/**
 * POST /invites/{invite_id}/resend (Zulip's resend_user_invite_email): the invitation must still
 * be there, and the organisation within its daily cap, which the resend counts against as one
 * invitation. Nothing about the invitation changes
 * (Zulip sends no event); the email itself is the notifications work's.
 */
export async function doResendUserInvite(deps: Deps, actor: UserProfile, inviteId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const invite = await accessEmailInvite(tx, actor, inviteId);
    await lockRealm(tx.db, actor.realm_id);
    await sendInvitationEmails(deps, tx, actor.realm_id, [invite], { resend: true });
  });
}
