// Password-reset links (Zulip's, through Django's PasswordResetTokenGenerator): a link names the
// user (uidb64) and carries a token that is an HMAC of the user's current password hash and the
// time it was made. No state is kept: the link stops working once the password changes (single
// use) or after PASSWORD_RESET_TIMEOUT_SECONDS (Django's PASSWORD_RESET_TIMEOUT, 3 days). The
// worker makes links (the email), the web service checks them for its form, the users service
// checks them again when it writes the new password.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { env } from '@teamchat/core';

/** Django's PASSWORD_RESET_TIMEOUT, which Zulip keeps: three days. */
export const DEFAULT_PASSWORD_RESET_TIMEOUT_SECONDS = 3 * 24 * 60 * 60;

export const passwordResetEnvSpec = {
  PASSWORD_RESET_TIMEOUT_SECONDS: env.int(
    "how long a password-reset link works (Django's PASSWORD_RESET_TIMEOUT, three days)",
    DEFAULT_PASSWORD_RESET_TIMEOUT_SECONDS,
  ),
};

/** What a reset token is bound to: a change to any of them voids the links made before. */
export interface ResettableUser {
  id: number;
  password_hash: string | null;
  delivery_email: string;
  is_active: boolean;
}

/** The path of a reset link (Zulip's password_reset_confirm URL), under the organisation's URL. */
export function passwordResetPath(userId: number, token: string): string {
  return `/accounts/password/reset/${Buffer.from(String(userId)).toString('base64url')}/${token}/`;
}

/** The user id a link's uidb64 names, or null. */
export function userIdOfUidb64(uidb64: string): number | null {
  const decoded = Buffer.from(uidb64, 'base64url').toString('utf8');
  return /^[1-9][0-9]{0,9}$/.test(decoded) ? Number(decoded) : null;
}

function signature(secret: string, user: ResettableUser, madeAt: number): string {
  // A key of its own, derived from the deployment's secret: a token is no internal token.
  const key = createHmac('sha256', secret).update('teamchat password reset').digest();
  return createHmac('sha256', key)
    .update([user.id, user.password_hash ?? '', user.delivery_email, user.is_active, madeAt].join('\0'))
    .digest('base64url')
    .slice(0, 32);
}

/** A token for the user's reset link, made now. */
export function makePasswordResetToken(secret: string, user: ResettableUser, now = Date.now()): string {
  const madeAt = Math.floor(now / 1000);
  return `${madeAt.toString(36)}-${signature(secret, user, madeAt)}`;
}

/** Whether `token` is a live reset token of the user as they are now. */
export function passwordResetTokenValid(
  secret: string,
  user: ResettableUser,
  token: string,
  timeoutSeconds: number,
  now = Date.now(),
): boolean {
  const match = /^([0-9a-z]{1,10})-([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match || !user.is_active) return false;
  const madeAt = parseInt(match[1], 36);
  if (now / 1000 - madeAt > timeoutSeconds) return false;
  const expected = Buffer.from(signature(secret, user, madeAt));
  return timingSafeEqual(expected, Buffer.from(match[2]));
}
