// Password reset by email (Zulip's password_reset and PasswordResetConfirmView): the request
// becomes the worker's email job whatever the address (the worker tells an address without an
// active account so: the form gives nothing away), and the new password is the users service's
// write, which checks the link again.
import { createHash, randomUUID } from 'node:crypto';
import { callService } from '@teamchat/core';
import { passwordResetTokenValid, userIdOfUidb64 } from '@teamchat/domain';
import type { WebDeps } from '../deps';

/** Zulip's RATE_LIMITING_RULES["password_reset_form_by_email"]: emails per address per window. */
const RESET_EMAILS_PER_ADDRESS = [
  { seconds: 3600, emails: 2 },
  { seconds: 86400, emails: 5 },
];

/**
 * Whether another reset email may go to this address now (fixed windows in Redis, shared by the
 * web replicas). Past the limit Zulip sends nothing and answers as usual, and so do we.
 */
async function mayEmail(deps: WebDeps, realmId: number, email: string): Promise<boolean> {
  const digest = createHash('sha256').update(`${realmId}:${email}`).digest('hex').slice(0, 32);
  for (const { seconds, emails } of RESET_EMAILS_PER_ADDRESS) {
    const key = `${deps.env.REDIS_PREFIX}password-reset:${seconds}:${digest}`;
    const [[, count]] = (await deps.redis.multi().incr(key).expire(key, seconds, 'NX').exec()) as [[null, number]];
    if (count > emails) return false;
  }
  return true;
}

/** Sends the reset email for `email` on the realm (the worker decides what it says). */
export async function requestPasswordReset(deps: WebDeps, realmId: number, address: string): Promise<void> {
  const email = address.trim().toLowerCase();
  if (!(await mayEmail(deps, realmId, email))) {
    deps.logger.info({ realm_id: realmId }, 'password reset emails to this address over the limit; not sent');
    return;
  }
  await deps.jobs.queue('email').add(
    'email',
    { kind: 'password-reset', realmId, email },
    {
      jobId: `password-reset-${randomUUID()}`,
      attempts: 10,
      backoff: { type: 'exponential', delay: 2000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    },
  );
}

/** The user a reset link is for, if the link works now (for the form; the write checks again). */
export async function resetLinkUser(deps: WebDeps, realmId: number, uidb64: string, token: string) {
  const userId = userIdOfUidb64(uidb64);
  if (userId === null) return null;
  const user = await deps.db.userProfile.findFirst({
    where: { id: userId, realm_id: realmId, is_bot: false },
    select: { id: true, password_hash: true, delivery_email: true, is_active: true },
  });
  const valid =
    user &&
    passwordResetTokenValid(deps.env.INTERNAL_JWT_SECRET, user, token, deps.config.PASSWORD_RESET_TIMEOUT_SECONDS);
  return valid ? user : null;
}

/** Sets the new password through the users service (which ends the user's sessions). */
export async function resetPassword(
  deps: WebDeps,
  input: { realmId: number; userId: number; token: string; password: string; requestId?: string },
): Promise<void> {
  await callService(deps.config.USERS_URL, deps.env.INTERNAL_JWT_SECRET, {
    method: 'POST',
    path: '/internal/password_reset',
    actingAs: null,
    realmId: input.realmId,
    params: {
      user_id: input.userId,
      token: input.token,
      new_password: input.password,
      max_age_seconds: deps.config.PASSWORD_RESET_TIMEOUT_SECONDS,
    },
    requestId: input.requestId,
  });
}
