// The accounts pages (Zulip's zerver/views/auth.py login_page and logout_view, and the password
// reset views): plain forms of our own markup, styled by the installed app's portico bundle
// when there is one.
import type { ServerResponse } from 'node:http';
import { csrfTokenMatches } from '@teamchat/bus';
import {
  CSRF_COOKIE_NAME,
  JsonableError,
  requestCookie,
  RESPONDED,
  SESSION_ID_HEADER,
  type ViewContext,
  type ViewResult,
} from '@teamchat/core';
import { clientAddressFromGateway } from '@teamchat/runtime';
import { requestPasswordReset, resetLinkUser, resetPassword } from '../actions/password-reset';
import { logIn, loginRefusal, logOut } from '../actions/sessions';
import type { WebDeps } from '../deps';
import { cspNonce } from '../lib/csp';
import { loginCsrfPasses, loginCsrfToken } from '../lib/cookies';
import { sendCsrfFailurePage } from '../lib/error-pages';
import { csrfInput, escapeHtml, sendPage } from '../lib/html';
import { LOGIN_PAGE } from '../lib/page-params';
import { sessionCsrfToken } from '../lib/session';

type Ctx = ViewContext<WebDeps>;

/** The installed app's stylesheets for the pages outside it (the "signup" entry of Zulip's portico pages). */
function porticoStyles(deps: WebDeps): string {
  try {
    const urls = deps.webApp?.entryUrls('signup') ?? [];
    return urls
      .filter((url) => url.endsWith('.css'))
      .map((url) => `<link rel="stylesheet" href="${escapeHtml(url)}">`)
      .join('');
  } catch {
    return '';
  }
}

/** The icons base.html links (without them a browser asks for /favicon.ico, which Zulip does not serve). */
const FAVICON_LINKS =
  '<link id="favicon" rel="icon" href="/static/images/favicon.svg?v=4">' +
  '<link rel="alternate icon" href="/static/images/favicon.png?v=4">';

/** One accounts page around `body` (trusted markup: every value in it is escaped by the caller). */
export function sendAccountsPage(deps: WebDeps, res: ServerResponse, title: string, body: string, status = 200) {
  const html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} | Zulip</title>${FAVICON_LINKS}${porticoStyles(deps)}</head>
<body><div class="portico-container"><div class="portico-wrap"><div class="app portico-page">
<div class="app login-page split-view new-style flex full-page"><div class="inline-block">
<div class="lead"><h1 class="get-started">${escapeHtml(title)}</h1></div>
<div class="app-main login-page-container white-box inline-block"><div class="right-side">${body}</div></div>
</div></div></div></div></div></body></html>`;
  sendPage(res, html, cspNonce(), status);
}

export function redirect(res: ServerResponse, location: string, cookie?: string): typeof RESPONDED {
  res.writeHead(302, { Location: location, 'Cache-Control': 'no-store', ...(cookie ? { 'Set-Cookie': cookie } : {}) });
  res.end();
  return RESPONDED;
}

/** Where to go after logging in: a path of this site (never another origin), else the app. */
function nextPath(raw: string | undefined): string {
  return raw && raw.startsWith('/') && !raw.startsWith('//') && !raw.startsWith('/\\') ? raw : '/';
}

function field(ctx: Ctx, name: string): string | undefined {
  return ctx.params.raw.get(name);
}

function csrfField(ctx: Ctx): string {
  return String(csrfInput(sessionCsrfToken(ctx.req)));
}

function loginForm(input: { csrfToken: string; username?: string; error?: string; next?: string }): string {
  const next = input.next ? `<input type="hidden" name="next" value="${escapeHtml(input.next)}">` : '';
  const error = input.error ? `<div class="alert alert-error" role="alert">${escapeHtml(input.error)}</div>` : '';
  return `${error}<form name="login_form" id="login_form" method="post" class="login-form" action="/accounts/login/">
${String(csrfInput(input.csrfToken))}${next}
<div class="input-box">
<input type="email" name="username" id="id_username" class="required" autocomplete="username" value="${escapeHtml(input.username ?? '')}" required autofocus>
<label for="id_username">Email</label></div>
<div class="input-box password-div">
<input type="password" name="password" id="id_password" class="required" autocomplete="current-password" required>
<label for="id_password">Password</label></div>
<p><button type="submit" name="button" class="full-width">Log in</button></p>
</form>
<p class="bottom-text"><a href="/accounts/password/reset/">Forgot your password?</a></p>`;
}

/** GET /login/ (and /accounts/login/): the form; someone logged in already goes to the app. */
export function loginPage(ctx: Ctx): ViewResult {
  const next = field(ctx, 'next');
  if (ctx.requester) return redirect(ctx.res, nextPath(next));
  const csrf = loginCsrfToken(ctx.req, ctx.deps.env.EXTERNAL_SCHEME === 'https');
  if (csrf.setCookie) ctx.res.setHeader('Set-Cookie', csrf.setCookie);
  sendAccountsPage(ctx.deps, ctx.res, 'Log in to Zulip', loginForm({ next, csrfToken: csrf.token }));
  return RESPONDED;
}

/**
 * POST /accounts/login/: a session and the app, or the form again with Zulip's error text. As
 * Django's CSRF middleware checks any form POST first, a form without the CSRF cookie's token
 * is refused with Zulip's 403 page.
 */
export async function loginSubmit(ctx: Ctx): Promise<ViewResult> {
  if (!loginCsrfPasses(ctx.req, field(ctx, 'csrfmiddlewaretoken'))) {
    sendCsrfFailurePage(ctx.res, ctx.deps.webApp);
    return RESPONDED;
  }
  const csrfToken = requestCookie(ctx.req, CSRF_COOKIE_NAME)!;
  const username = field(ctx, 'username') ?? '';
  const password = field(ctx, 'password') ?? '';
  const next = field(ctx, 'next');
  const { requester } = ctx;
  if (!username || !password) {
    sendAccountsPage(
      ctx.deps,
      ctx.res,
      'Log in to Zulip',
      loginForm({ csrfToken, username, next, error: 'This field is required.' }),
    );
    return RESPONDED;
  }
  const sessionHash = ctx.req.get(SESSION_ID_HEADER);
  try {
    const cookie = await logIn(
      ctx.deps,
      {
        realmId: ctx.realmId,
        username,
        password,
        clientAddress: clientAddressFromGateway(ctx.req),
        requestId: ctx.requestId,
      },
      requester && sessionHash ? { hash: sessionHash, userId: requester.userId } : undefined,
    );
    return redirect(ctx.res, nextPath(next), cookie);
  } catch (error) {
    if (!(error instanceof JsonableError) || error.status >= 500) throw error;
    sendAccountsPage(
      ctx.deps,
      ctx.res,
      'Log in to Zulip',
      loginForm({ csrfToken, username, next, error: loginRefusal(error, username) }),
    );
    return RESPONDED;
  }
}

/**
 * GET or POST /accounts/logout/ (Zulip's logout_view takes both; Django checks a POST's CSRF
 * token): the session ends, and the browser goes to the login page.
 */
export async function logout(ctx: Ctx): Promise<ViewResult> {
  const { requester } = ctx;
  if (ctx.req.method === 'POST' && requester) {
    const expected = sessionCsrfToken(ctx.req);
    const given = field(ctx, 'csrfmiddlewaretoken') ?? ctx.req.get('x-csrftoken');
    if (!csrfTokenMatches({ csrfToken: expected }, given)) {
      sendAccountsPage(
        ctx.deps,
        ctx.res,
        'Forbidden',
        '<p>CSRF verification failed. Reload the page and try again.</p>',
        403,
      );
      return RESPONDED;
    }
  }
  const cookie = await logOut(ctx.deps, requester, ctx.req.get(SESSION_ID_HEADER));
  return redirect(ctx.res, LOGIN_PAGE, cookie);
}

/** GET /accounts/password/reset/: the form asking for one's email address. */
export function passwordResetPage(ctx: Ctx): ViewResult {
  sendAccountsPage(ctx.deps, ctx.res, 'Reset your password', passwordResetForm(ctx));
  return RESPONDED;
}

function passwordResetForm(ctx: Ctx, error?: string): string {
  return `${error ? `<div class="alert alert-error" role="alert">${escapeHtml(error)}</div>` : ''}
<p>Forgot your password? No problem, it happens.</p>
<form name="email_form" id="password_reset" method="post" action="/accounts/password/reset/">${csrfField(ctx)}
<div class="input-box">
<input type="email" name="email" id="id_email" maxlength="254" autocomplete="email" required autofocus>
<label for="id_email">Email</label></div>
<p><button type="submit" class="full-width">Send reset link</button></p></form>
<p class="bottom-text"><a href="${LOGIN_PAGE}">Back to login</a></p>`;
}

/**
 * POST /accounts/password/reset/: the email goes out (from the worker) whatever the address, and
 * every address gets the same answer.
 */
export async function passwordResetSubmit(ctx: Ctx): Promise<ViewResult> {
  const email = (field(ctx, 'email') ?? '').trim();
  if (!email) {
    sendAccountsPage(ctx.deps, ctx.res, 'Reset your password', passwordResetForm(ctx, 'This field is required.'));
    return RESPONDED;
  }
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) {
    sendAccountsPage(ctx.deps, ctx.res, 'Reset your password', passwordResetForm(ctx, 'Enter a valid email address.'));
    return RESPONDED;
  }
  await requestPasswordReset(ctx.deps, ctx.realmId, email);
  return redirect(ctx.res, '/accounts/password/reset/done/');
}

/** GET /accounts/password/reset/done/ (Zulip's reset_emailed.html). */
export function passwordResetSent(ctx: Ctx): ViewResult {
  sendAccountsPage(
    ctx.deps,
    ctx.res,
    'Password reset sent!',
    `<p>Check your email in a few minutes to finish the process.</p><p><a href="${LOGIN_PAGE}">Back to login</a></p>`,
  );
  return RESPONDED;
}

function setPasswordForm(ctx: Ctx, email: string, error?: string): string {
  return `<form method="post" id="password_reset" autocomplete="off">${csrfField(ctx)}
<div class="input-box"><input type="text" name="name" placeholder="${escapeHtml(email)}" disabled><label>Email</label></div>
<div class="input-box password-div">
<input id="id_new_password1" class="required" type="password" name="new_password1" autocomplete="new-password" autofocus required>
<label for="id_new_password1">Password</label>
${error ? `<div class="alert alert-error">${escapeHtml(error)}</div>` : ''}</div>
<div class="input-box password-div">
<input id="id_new_password2" class="required" type="password" name="new_password2" autocomplete="off" maxlength="100" required>
<label for="id_new_password2">Confirm password</label></div>
<p><button type="submit" value="Submit">Submit</button></p></form>`;
}

const INVALID_LINK_PAGE = '<p>Sorry, the link you provided is invalid or has already been used.</p>';

/** GET /accounts/password/reset/<uidb64>/<token>/ (Zulip's reset_confirm.html): the new password's form. */
export async function setPasswordPage(ctx: Ctx): Promise<ViewResult> {
  const { uidb64, token } = ctx.req.params as { uidb64: string; token: string };
  const user = await resetLinkUser(ctx.deps, ctx.realmId, uidb64, token);
  const body = user ? setPasswordForm(ctx, user.delivery_email) : INVALID_LINK_PAGE;
  sendAccountsPage(ctx.deps, ctx.res, 'Set a new password.', body);
  return RESPONDED;
}

/** POST /accounts/password/reset/<uidb64>/<token>/: the new password, then the login page. */
export async function setPasswordSubmit(ctx: Ctx): Promise<ViewResult> {
  const { uidb64, token } = ctx.req.params as { uidb64: string; token: string };
  const user = await resetLinkUser(ctx.deps, ctx.realmId, uidb64, token);
  if (!user) {
    sendAccountsPage(ctx.deps, ctx.res, 'Set a new password.', INVALID_LINK_PAGE);
    return RESPONDED;
  }
  const password = field(ctx, 'new_password1') ?? '';
  const again = field(ctx, 'new_password2') ?? '';
  // Django's SetPasswordForm wording.
  const mismatch = password !== again ? 'The two password fields didn\u2019t match.' : undefined;
  if (mismatch || !password) {
    const error = mismatch ?? 'This field is required.';
    sendAccountsPage(ctx.deps, ctx.res, 'Set a new password.', setPasswordForm(ctx, user.delivery_email, error));
    return RESPONDED;
  }
  try {
    await resetPassword(ctx.deps, { realmId: ctx.realmId, userId: user.id, token, password, requestId: ctx.requestId });
  } catch (error) {
    if (!(error instanceof JsonableError) || error.status >= 500) throw error;
    sendAccountsPage(
      ctx.deps,
      ctx.res,
      'Set a new password.',
      setPasswordForm(ctx, user.delivery_email, error.message),
    );
    return RESPONDED;
  }
  return redirect(ctx.res, '/accounts/password/done/');
}

/** GET /accounts/password/done/ (Zulip's reset_done.html). */
export function passwordResetDone(ctx: Ctx): ViewResult {
  sendAccountsPage(
    ctx.deps,
    ctx.res,
    "You've set a new password!",
    `<p>Please <a href="${LOGIN_PAGE}">log in</a> with your new password.</p>`,
  );
  return RESPONDED;
}
