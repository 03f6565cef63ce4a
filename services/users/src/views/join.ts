// An invitation link itself (a reusable one, or an email invitation's): {realm_url}/join/{key}/
// shows a sign-up form (GET) and creates the account (POST); POST /api/v1/invites/multiuse/accept
// does the same for API clients.
// None of these need credentials: the link's key is the credential.

import {
  asJsonableError,
  MissingArgumentError,
  optional,
  RESPONDED,
  required,
  param,
  type AuthedContext,
  type ViewContext,
  type ViewResult,
} from '@teamchat/core';
import { escapeHtml } from '@teamchat/domain';
import type { Response } from 'express';
import { doAcceptInvite, usableInvite } from '../actions/signup';
import type { UsersDeps } from '../deps';

function sendPage(res: Response, status: number, title: string, body: string): typeof RESPONDED {
  res
    .status(status)
    .type('html')
    .send(
      `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    );
  return RESPONDED;
}

const wantsHtml = (ctx: ViewContext<UsersDeps>) => ctx.req.accepts(['json', 'html']) === 'html';

async function accept(ctx: ViewContext<UsersDeps>, key: string) {
  const { email } = ctx.params.parse({ email: optional(param.string()) });
  // An email invitation's address is known; a reusable link needs one.
  if (email === undefined && (await usableInvite(ctx.deps, ctx.realmId, key)).email === null)
    throw new MissingArgumentError('email');
  const { full_name, password } = ctx.params.parse({
    full_name: required(param.string()),
    password: required(param.string({ allowNullBytes: true })),
  });
  const { user, apiKey } = await doAcceptInvite(
    ctx.deps,
    { channelsUrl: ctx.deps.serviceUrls.channels, logger: ctx.log },
    ctx.realmId,
    { key, email, fullName: full_name, password },
  );
  return { user_id: user.id, email: user.delivery_email, api_key: apiKey };
}

/** POST /api/v1/invites/multiuse/accept: key, email, full_name, password → the new account's API key. */
export async function acceptMultiuseInvite(ctx: AuthedContext<UsersDeps>) {
  const { key } = ctx.params.parse({ key: required(param.string()) });
  return accept(ctx, key);
}

/** GET /join/{key}/: the sign-up form, or why the link no longer works. */
export async function showJoinPage(ctx: AuthedContext<UsersDeps>): Promise<ViewResult> {
  const key = String(ctx.req.params.key);
  try {
    const invite = await usableInvite(ctx.deps, ctx.realmId, key);
    return sendPage(
      ctx.res,
      200,
      `Join ${invite.realm.name}`,
      `<form method="post">` +
        (invite.email === null
          ? `<p><label>Email <input name="email" type="email" required></label></p>`
          : `<p>Email: ${escapeHtml(invite.email)}</p>`) +
        `<p><label>Full name <input name="full_name" required></label></p>` +
        `<p><label>Password <input name="password" type="password" required></label></p>` +
        `<p><button type="submit">Sign up</button></p></form>`,
    );
  } catch (error) {
    const jsonable = asJsonableError(error);
    return sendPage(ctx.res, jsonable.status, 'Invitation link', `<p>${escapeHtml(jsonable.message)}</p>`);
  }
}

/** POST /join/{key}/: creates the account; JSON for API clients, a page for browsers. */
export async function submitJoinForm(ctx: AuthedContext<UsersDeps>): Promise<ViewResult> {
  const key = String(ctx.req.params.key);
  if (!wantsHtml(ctx)) return accept(ctx, key);
  try {
    const result = await accept(ctx, key);
    return sendPage(
      ctx.res,
      200,
      'Welcome!',
      `<p>Your account ${escapeHtml(result.email)} is ready. Log in with your email and password.</p>`,
    );
  } catch (error) {
    const jsonable = asJsonableError(error);
    return sendPage(ctx.res, jsonable.status, 'Sign-up failed', `<p>${escapeHtml(jsonable.message)}</p>`);
  }
}
