import { optional, param, pathInt, required, v, type AuthedContext } from '@teamchat/core';
import { loadActor, ROLE_VALUES } from '@teamchat/domain';
import {
  doCreateMultiuseInvite,
  doInviteUsers,
  doResendUserInvite,
  doRevokeMultiuseInvite,
  doRevokeUserInvite,
  INVITATION_LINK_VALIDITY_MINUTES,
  listInvites,
  MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH,
} from '../actions/invites';
import type { UsersDeps } from '../deps';
import { requireMemberOrAdmin } from '../lib/access';

/** POST /invites/multiuse */
export async function createMultiuseInvite({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const input = params.parse({
    invite_expires_in_minutes: optional(
      param.json(v.nullable(v.int({ min: 0, max: 2 ** 31 - 1 }))),
      INVITATION_LINK_VALIDITY_MINUTES as number | null,
    ),
    invite_as: optional(param.json(v.literal(...(ROLE_VALUES as number[]))), 400),
    stream_ids: optional(param.json(v.list(v.id())), []),
    group_ids: optional(param.json(v.list(v.id())), []),
    include_realm_default_subscriptions: optional(param.bool(), false),
    welcome_message_custom_text: optional(param.string({ maxLength: MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH })),
  });
  const actor = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor.user);
  const link = await doCreateMultiuseInvite(deps, actor, {
    inviteAs: input.invite_as,
    expiresInMinutes: input.invite_expires_in_minutes,
    streamIds: input.stream_ids,
    groupIds: input.group_ids,
    includeRealmDefaultSubscriptions: input.include_realm_default_subscriptions,
    welcomeMessageCustomText: input.welcome_message_custom_text ?? null,
  });
  return { invite_link: link };
}

/** GET /invites */
export async function getInvites({ deps, requester }: AuthedContext<UsersDeps>) {
  const actor = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor.user);
  return { invites: await listInvites(deps, actor) };
}

/** DELETE /invites/multiuse/{invite_id} */
export async function revokeMultiuseInvite({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const inviteId = pathInt(req, 'invite_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  await doRevokeMultiuseInvite(deps, actor, inviteId);
  return {};
}

/** POST /invites */
export async function sendInvites({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const input = params.parse({
    invitee_emails: required(param.string()),
    invite_expires_in_minutes: optional(
      param.json(v.nullable(v.int({ min: 0, max: 2 ** 31 - 1 }))),
      INVITATION_LINK_VALIDITY_MINUTES as number | null,
    ),
    invite_as: optional(param.json(v.literal(...(ROLE_VALUES as number[]))), 400),
    stream_ids: required(param.json(v.list(v.id()))),
    group_ids: optional(param.json(v.list(v.id())), []),
    include_realm_default_subscriptions: optional(param.bool(), false),
    notify_referrer_on_join: optional(param.bool(), true),
    welcome_message_custom_text: optional(param.string({ maxLength: MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH })),
  });
  const actor = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor.user);
  await doInviteUsers(deps, actor, {
    inviteeEmails: input.invitee_emails,
    inviteAs: input.invite_as,
    expiresInMinutes: input.invite_expires_in_minutes,
    streamIds: input.stream_ids,
    groupIds: input.group_ids,
    includeRealmDefaultSubscriptions: input.include_realm_default_subscriptions,
    notifyReferrerOnJoin: input.notify_referrer_on_join,
    welcomeMessageCustomText: input.welcome_message_custom_text ?? null,
  });
  return {};
}

/** DELETE /invites/{invite_id} */
export async function revokeUserInvite({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const inviteId = pathInt(req, 'invite_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  await doRevokeUserInvite(deps, actor, inviteId);
  return {};
}

/** POST /invites/{invite_id}/resend */
export async function resendUserInvite({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const inviteId = pathInt(req, 'invite_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  await doResendUserInvite(deps, actor, inviteId);
  return {};
}
