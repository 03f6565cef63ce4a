// A browser session's beginning and end (Zulip's login_page / logout_view): the password check
// and its throttle belong to the users service (one rule with fetch_api_key), the session to the
// shared store every public entry resolves it from (@teamchat/bus's SessionStore).
import { SessionStore, SESSION_COOKIE_NAME } from '@teamchat/bus';
import { callService, JsonableError, type Requester } from '@teamchat/core';
import type { WebDeps } from '../deps';

/** The text of Zulip's login form for a refused login (zerver/forms.py, OurAuthenticationForm). */
export function loginRefusal(error: JsonableError, username: string): string {
  switch (error.code) {
    case 'RATE_LIMIT_HIT':
      return (
        "You're making too many attempts to sign in." +
        ` Try again in ${Math.ceil(Number(error.data['retry-after'] ?? 1))} seconds or contact your organization administrator` +
        ' for help.'
      );
    case 'USER_DEACTIVATED':
      return `Your account ${username} has been deactivated. Please contact your organization administrator to reactivate it.`;
    case 'REALM_DEACTIVATED':
      return 'This organization has been deactivated.';
    default:
      return 'Incorrect email or password.';
  }
}

function sessions(deps: WebDeps): SessionStore {
  return new SessionStore(deps.redis, deps.env.REDIS_PREFIX);
}

/**
 * Logs a person in by email and password on the realm the request is for: the users service
 * checks (and throttles) the attempt; a new session is made, and the one the browser had (if
 * any) ends, as Django cycles the session key at login. Returns the cookie to set; a refusal is
 * the users service's JsonableError.
 */
export async function logIn(
  deps: WebDeps,
  input: { realmId: number; username: string; password: string; clientAddress: string; requestId?: string },
  previous: { hash: string; userId: number } | undefined,
): Promise<string> {
  const { user_id, realm_id } = await callService<{ user_id: number; realm_id: number }>(
    deps.config.USERS_URL,
    deps.env.INTERNAL_JWT_SECRET,
    {
      method: 'POST',
      path: '/internal/password_login',
      actingAs: null,
      realmId: input.realmId,
      params: { username: input.username, password: input.password, client_address: input.clientAddress },
      requestId: input.requestId,
    },
  );
  const store = sessions(deps);
  if (previous) await store.revoke(previous);
  const ageSeconds = deps.config.SESSION_COOKIE_AGE_SECONDS;
  const { id } = await store.create({ userId: user_id, realmId: realm_id }, ageSeconds);
  return sessionCookie(id, ageSeconds, deps.env.EXTERNAL_SCHEME === 'https');
}

/** Ends the request's session (logout); the cookie that clears it in the browser. */
export async function logOut(deps: WebDeps, requester: Requester | null, sessionHash: string | undefined) {
  if (requester && sessionHash) await sessions(deps).revoke({ hash: sessionHash, userId: requester.userId });
  return expiredSessionCookie(deps.env.EXTERNAL_SCHEME === 'https');
}

function sessionCookie(id: string, ageSeconds: number, secure: boolean): string {
  const expires = new Date(Date.now() + ageSeconds * 1000).toUTCString();
  return `${SESSION_COOKIE_NAME}=${id}; expires=${expires}; HttpOnly; Max-Age=${ageSeconds}; Path=/; SameSite=Lax${secure ? '; Secure' : ''}`;
}

function expiredSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE_NAME}=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; SameSite=Lax${secure ? '; Secure' : ''}`;
}
