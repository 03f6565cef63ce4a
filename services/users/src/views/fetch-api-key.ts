import { AuthenticationFailedError, param, required, type ViewContext } from '@teamchat/core';
import { verifyPassword } from '@teamchat/domain';
import { doIssueApiKey } from '../actions/users';
import type { UsersDeps } from '../deps';

/** POST /fetch_api_key: username (email) + password → a new API key for this client. */
export async function fetchApiKey({ deps, params, realmId }: ViewContext<UsersDeps>) {
  const { username, password } = params.parse({
    username: required(param.string()),
    password: required(param.string({ allowNullBytes: true })),
  });
  const user = await deps.db.userProfile.findFirst({
    where: { realm_id: realmId, delivery_email: username.trim().toLowerCase(), is_bot: false },
    include: { realm: true },
  });
  if (!user || !(await verifyPassword(password, user.password_hash))) throw new AuthenticationFailedError();
  if (!user.is_active) throw new AuthenticationFailedError('Account is deactivated', 'USER_DEACTIVATED');
  if (user.realm.deactivated) throw new AuthenticationFailedError('This organization has been deactivated', 'REALM_DEACTIVATED');
  const apiKey = await doIssueApiKey(deps, user.id, 'fetch_api_key');
  return { api_key: apiKey, email: user.delivery_email, user_id: user.id };
}
