// A password login (Zulip's authenticate with EmailAuthBackend, behind its login throttle): one
// rule for both entries, POST /fetch_api_key (API clients) and the web service's login form
// (through POST /internal/password_login).

import { AuthenticationFailedError, RateLimitedError } from '@teamchat/core';
import type { UsersDeps } from '../deps';
import { passwordMatches } from '../lib/login-throttle';

/**
 * The active user of `realmId` with this email and password. Attempts are throttled per account
 * and per client address (LoginThrottle); known and unknown accounts take the same time to refuse.
 * Refusals: AuthenticationFailedError (AUTHENTICATION_FAILED, USER_DEACTIVATED, REALM_DEACTIVATED)
 * or RateLimitedError.
 */
export async function checkPasswordLogin(
  deps: Pick<UsersDeps, 'db' | 'loginThrottle'>,
  realmId: number,
  username: string,
  password: string,
  clientAddress: string,
) {
  const email = username.trim().toLowerCase();
  const attempt = await deps.loginThrottle.attempt(realmId, email, clientAddress);
  if (attempt && 'retryAfterSeconds' in attempt) throw new RateLimitedError(attempt.retryAfterSeconds);
  const user = await deps.db.userProfile.findFirst({
    where: { realm_id: realmId, delivery_email: email, is_bot: false },
    include: { realm: true },
  });
  if (!(await passwordMatches(password, user?.password_hash)) || !user) throw new AuthenticationFailedError();
  if (!user.is_active) throw new AuthenticationFailedError('Account is deactivated', 'USER_DEACTIVATED');
  if (user.realm.deactivated)
    throw new AuthenticationFailedError('This organization has been deactivated', 'REALM_DEACTIVATED');
  await attempt?.succeeded();
  return user;
}
