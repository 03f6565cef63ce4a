import { param, required, type ViewContext } from '@teamchat/core';
import { clientAddressFromGateway } from '@teamchat/runtime';
import { checkPasswordLogin } from '../actions/password-login';
import { doResetPassword } from '../actions/password-reset';
import { doIssueApiKey } from '../actions/users';
import type { UsersDeps } from '../deps';

/**
 * POST /fetch_api_key: username (email) + password → a new API key for this client, after the
 * password login's checks and throttle (checkPasswordLogin).
 */
export async function fetchApiKey({ deps, params, realmId, req }: ViewContext<UsersDeps>) {
  const { username, password } = params.parse({
    username: required(param.string()),
    password: required(param.string({ allowNullBytes: true })),
  });
  const user = await checkPasswordLogin(deps, realmId, username, password, clientAddressFromGateway(req));
  const apiKey = await doIssueApiKey(deps, user.id, 'fetch_api_key');
  return { api_key: apiKey, email: user.delivery_email, user_id: user.id };
}

/**
 * POST /internal/password_login (the web service's login form; the gateway routes no /internal
 * path, so only services reach it): the same checks and throttle as fetch_api_key, for the client
 * address the web service was given. Answers the user's id; the web service makes the session.
 */
export async function internalPasswordLogin({ deps, params, realmId }: ViewContext<UsersDeps>) {
  const { username, password, client_address } = params.parse({
    username: required(param.string()),
    password: required(param.string({ allowNullBytes: true })),
    client_address: required(param.string()),
  });
  const user = await checkPasswordLogin(deps, realmId, username, password, client_address);
  return { user_id: user.id, realm_id: user.realm_id };
}

/**
 * POST /internal/password_reset (the web service's reset form, like /internal/password_login
 * reachable by services only): a new password for the user a live reset link names; the link's
 * age limit is the web service's setting (PASSWORD_RESET_TIMEOUT_SECONDS).
 */
export async function internalPasswordReset({ deps, params }: ViewContext<UsersDeps>) {
  const { user_id, token, new_password, max_age_seconds } = params.parse({
    user_id: required(param.int()),
    token: required(param.string()),
    new_password: required(param.string({ allowNullBytes: true })),
    max_age_seconds: required(param.int()),
  });
  await doResetPassword(deps, { userId: user_id, token, password: new_password, maxAgeSeconds: max_age_seconds });
  return {};
}
