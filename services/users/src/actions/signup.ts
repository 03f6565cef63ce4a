// Joining through an invitation link — a reusable one (multiuse_invite) or the one an email
// invitation carries (preregistration_user, for its address only): the account gets the
// invitation's role and groups here, in the users service's own transaction (which also uses up
// the address's email invitations); its channels are subscribed by the channels service (which
// owns subscriptions), called as the inviter once the account exists.

import { callService, JsonableError, type Logger } from '@teamchat/core';
import type { Realm } from '@teamchat/db';
import { checkFullName, isPasswordTooWeak, realmEmailValidator, type RealmEmailProblem } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { doCreateUser, type CreatedUser } from './users';
import { isUsable } from './invites';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'redis' | 'env'>;

export const LINK_NOT_FOUND = "Whoops. We couldn't find your confirmation link in the system.";
export const LINK_EXPIRED = 'The confirmation link has expired or been deactivated.';
const EMAIL_PATTERN = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/;

/** What an invitation link promises, whichever kind it is. */
export interface Invitation {
  id: number;
  realm: Realm;
  invited_as: number;
  referred_by_id: number;
  stream_ids: number[];
  group_ids: number[];
  include_realm_default_subscriptions: boolean;
  /** An email invitation's address: the only one it may sign up (null: a reusable link). */
  email: string | null;
  /** An email invitation's: tell the inviter when the person joins (reusable links never do, as in Zulip). */
  notify_referrer_on_join: boolean;
}

/** The invitation behind a link key, if it belongs to this realm and can still be used. */
export async function usableInvite(deps: Pick<Deps, 'db'>, realmId: number, key: string): Promise<Invitation> {
  // No key holds characters PostgreSQL text cannot (NUL): such a link is simply unknown.
  if (key.includes('\u0000')) throw new JsonableError(LINK_NOT_FOUND, { status: 404 });
  const where = { confirmation_key: key };
  const invite =
    (await deps.db.multiuseInvite.findUnique({ where, include: { realm: true } })) ??
    (await deps.db.preregistrationUser.findUnique({ where, include: { realm: true } }));
  if (!invite || invite.realm_id !== realmId || invite.realm.deactivated)
    throw new JsonableError(LINK_NOT_FOUND, { status: 404 });
  if (!isUsable(invite)) throw new JsonableError(LINK_EXPIRED);
  return {
    ...invite,
    email: 'email' in invite ? invite.email : null,
    notify_referrer_on_join: 'notify_referrer_on_join' in invite && invite.notify_referrer_on_join,
  };
}

export interface Signup {
  key: string;
  /** May be left out for an email invitation (its address). */
  email?: string;
  fullName: string;
  password: string;
}

export interface SignupServices {
  channelsUrl: string;
  logger: Logger;
}

/** Zulip's registration form wording (zerver/forms.py). */
const SIGNUP_EMAIL_PROBLEMS: Record<RealmEmailProblem, (email: string) => string> = {
  outside_domains: (email) =>
    `Your email address, ${email}, is not in one of the domains that are allowed to register for accounts in this organization.`,
  contains_plus: () => 'Email addresses containing + are not allowed in this organization.',
};

/**
 * Creates the account an invitation link promises: role, groups (those still active),
 * the invitation's channels and, if it says so, the realm's default channels.
 */
export async function doAcceptInvite(
  deps: Deps,
  services: SignupServices,
  realmId: number,
  signup: Signup,
): Promise<CreatedUser> {
  const invite = await usableInvite(deps, realmId, signup.key);
  // An email invitation signs up its own address (Zulip's form shows it fixed).
  const email = signup.email?.trim() || (invite.email ?? '');
  if (!EMAIL_PATTERN.test(email)) throw new JsonableError('Enter a valid email address.');
  if (invite.email !== null && email.toLowerCase() !== invite.email)
    throw new JsonableError('This invitation is for another email address.');
  const problem = (await realmEmailValidator(deps.db, invite.realm))(email);
  if (problem) throw new JsonableError(SIGNUP_EMAIL_PROBLEMS[problem](email));
  const fullName = checkFullName(signup.fullName);
  if (isPasswordTooWeak(signup.password)) throw new JsonableError('The password is too weak.');

  const created = await doCreateUser(deps, invite.realm, {
    email,
    fullName,
    password: signup.password,
    role: invite.invited_as,
    groupIds: invite.group_ids,
    description: 'invitation link',
    notifyReferrerId: invite.notify_referrer_on_join ? invite.referred_by_id : undefined,
  });

  const streams = await deps.db.stream.findMany({
    where: {
      realm_id: invite.realm.id,
      is_archived: false,
      OR: [
        { id: { in: invite.stream_ids } },
        ...(invite.include_realm_default_subscriptions ? [{ is_default: true }] : []),
      ],
    },
    orderBy: { id: 'asc' },
  });
  if (streams.length) {
    const inviter = await deps.db.userProfile.findUniqueOrThrow({ where: { id: invite.referred_by_id } });
    try {
      await callService(services.channelsUrl, deps.env.INTERNAL_JWT_SECRET, {
        method: 'POST',
        path: '/api/v1/users/me/subscriptions',
        actingAs: {
          userId: inviter.id,
          realmId: inviter.realm_id,
          role: inviter.role,
          email: inviter.email,
          isBot: inviter.is_bot,
        },
        params: { subscriptions: streams.map((stream) => ({ name: stream.name })), principals: [created.user.id] },
      });
    } catch (error) {
      // The account exists and works; only its first subscriptions are missing. Say so in the
      // log rather than failing a signup the person cannot repeat (their email is now taken).
      services.logger.error(
        { err: error, user_id: created.user.id, invite_id: invite.id },
        'subscribing a new user to the invitation channels failed',
      );
    }
  }
  return created;
}
