// Setting a new password from a reset link (Zulip's PasswordResetConfirmView with its
// LoggingSetPasswordForm). The web service shows the form; the write is here, where user_profile
// is written, with the link checked again under the user's row lock: two uses of one link
// cannot both succeed (the first changes the hash the token is bound to).
import { SessionStore } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { transaction } from '@teamchat/db';
import { hashPassword, isPasswordTooWeak, passwordResetTokenValid } from '@teamchat/domain';
import type { UsersDeps } from '../deps';
import { lockUser } from '../lib/locks';

/** Zulip's reset_confirm.html for a link that does not work (any more). */
export const INVALID_RESET_LINK = 'Sorry, the link you provided is invalid or has already been used.';

export async function doResetPassword(
  deps: Pick<UsersDeps, 'db' | 'redis' | 'env'>,
  input: { userId: number; token: string; password: string; maxAgeSeconds: number },
): Promise<void> {
  if (isPasswordTooWeak(input.password)) throw new JsonableError('The password is too weak.');
  // Slow: computed before the row is locked.
  const passwordHash = await hashPassword(input.password);
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, input.userId);
    const user = await tx.db.userProfile.findUnique({
      where: { id: input.userId },
      select: { id: true, password_hash: true, delivery_email: true, is_active: true, is_bot: true },
    });
    const secret = deps.env.INTERNAL_JWT_SECRET;
    if (!user || user.is_bot || !passwordResetTokenValid(secret, user, input.token, input.maxAgeSeconds)) {
      throw new JsonableError(INVALID_RESET_LINK);
    }
    await tx.db.userProfile.update({ where: { id: user.id }, data: { password_hash: passwordHash } });
    // Every browser session of theirs ends (Django's password reset logs the user out everywhere).
    tx.onCommit(() => new SessionStore(deps.redis, deps.env.REDIS_PREFIX).revokeUser(user.id));
  });
}
