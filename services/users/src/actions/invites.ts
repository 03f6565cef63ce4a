// Reusable invitation links (Zulip's zerver/views/invite.py and zerver/actions/invites.py):
// who may create one and with what, listing and revoking them.

import { randomBytes } from 'node:crypto';
import { JsonableError, OrganizationOwnerRequiredError } from '@teamchat/core';
import { transaction, type MultiuseInvite, type Realm, type Stream, type Tx, type UserProfile } from '@teamchat/db';
import {
  accessStreamById,
  hasGroupPermission,
  hasRealmPermission,
  isAdministrator,
  isGuest,
  isModerator,
  isOwner,
  realmUrl,
  Role,
  type Actor,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { accessUserGroupForUpdate } from '../lib/user-groups';
import { notifyInvitesChanged } from './users';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'env'>;

/** Zulip's INVITATION_LINK_VALIDITY_MINUTES (10 days). */
export const INVITATION_LINK_VALIDITY_MINUTES = 14400;
export const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH = 8000;
export const InviteStatus = { ACTIVE: 0, REVOKED: 2 } as const;

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

/**
 * Zulip's get_streams_to_which_user_cannot_add_subscribers with allow_default_streams: the
 * realm's can_add_subscribers_group and administrators may add anyone anywhere they can see;
 * guests nowhere; others to default channels and to channels whose can_administer_channel_group
 * or can_add_subscribers_group holds them.
 */
async function streamsActorCannotAddSubscribersTo(tx: Tx, actor: UserProfile, streams: Stream[]): Promise<Stream[]> {
  if (await hasRealmPermission(tx.db, actor, 'can_add_subscribers_group')) return [];
  if (isAdministrator(actor.role)) return [];
  const refused: Stream[] = [];
  for (const stream of streams) {
    if (isGuest(actor.role)) refused.push(stream);
    else if (stream.is_default) continue;
    else if (await hasGroupPermission(tx.db, actor.id, 'stream', stream.id, 'can_administer_channel_group')) continue;
    else if (!(await hasGroupPermission(tx.db, actor.id, 'stream', stream.id, 'can_add_subscribers_group')))
      refused.push(stream);
  }
  return refused;
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
    const streams: Stream[] = [];
    for (const streamId of input.streamIds) {
      try {
        const { stream } = await accessStreamById(tx.db, actor, streamId);
        if (stream.is_archived) throw new JsonableError('Invalid channel ID');
        streams.push(stream);
      } catch (error) {
        if (!(error instanceof JsonableError)) throw error;
        throw new JsonableError(`Invalid channel ID ${streamId}. No invites were sent.`);
      }
    }
    if ((await streamsActorCannotAddSubscribersTo(tx, actor, streams)).length) {
      throw new JsonableError('You do not have permission to subscribe other users to channels.');
    }
    for (const groupId of input.groupIds)
      await accessUserGroupForUpdate(tx.db, actor, groupId, 'can_add_members_group', { allowDeactivated: false });
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

/** GET /invites: unexpired, unrevoked invitations the user controls (administrators: all of them). */
export async function listInvites(deps: Deps, { user: actor, realm }: Actor) {
  const invites = await deps.db.multiuseInvite.findMany({
    where: {
      realm_id: actor.realm_id,
      status: InviteStatus.ACTIVE,
      OR: [{ expiry_date: null }, { expiry_date: { gte: new Date() } }],
      ...(isAdministrator(actor.role) ? {} : { referred_by_id: actor.id }),
    },
    orderBy: { id: 'asc' },
  });
  return invites.map((invite) => ({
    id: invite.id,
    invited_by_user_id: invite.referred_by_id,
    invited: Math.floor(invite.date_created.getTime() / 1000),
    expiry_date: invite.expiry_date === null ? null : Math.floor(invite.expiry_date.getTime() / 1000),
    invited_as: invite.invited_as,
    link_url: inviteLink(realm, invite.confirmation_key, deps.env.EXTERNAL_SCHEME),
    is_multiuse: true,
  }));
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
