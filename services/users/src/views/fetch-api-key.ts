import { AuthenticationFailedError, param, RateLimitedError, required, type ViewContext } from '@teamchat/core';
import { doIssueApiKey } from '../actions/users';
import type { UsersDeps } from '../deps';
import { passwordMatches } from '../lib/login-throttle';

/** The client's address: the gateway puts the one it resolved in X-Forwarded-For. */
function clientAddress(req: ViewContext<UsersDeps>['req']): string {
  const forwarded = req.headers['x-forwarded-for'];
  const address = (Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '')).split(',').pop()?.trim();
  return address || req.socket.remoteAddress || 'unknown';
}

/**
 * POST /fetch_api_key: username (email) + password → a new API key for this client. Attempts
 * are throttled per account and per client address (LoginThrottle); known and unknown
 * accounts take the same time to refuse.
 */
export async function fetchApiKey({ deps, params, realmId, req }: ViewContext<UsersDeps>) {
  const { username, password } = params.parse({
    username: required(param.string()),
    password: required(param.string({ allowNullBytes: true })),
  });
  const email = username.trim().toLowerCase();
  const attempt = await deps.loginThrottle.attempt(realmId, email, clientAddress(req));
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
  const apiKey = await doIssueApiKey(deps, user.id, 'fetch_api_key');
  return { api_key: apiKey, email: user.delivery_email, user_id: user.id };
}
