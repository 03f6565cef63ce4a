// One's own settings (Zulip's json_change_settings → check_change_full_name, do_change_password,
// do_change_user_setting): each changed setting is stored and announced to the user's clients
// as a user_settings event, plus the legacy update_display_settings / update_global_notifications
// form (the event tier drops those for clients with user_settings_object); a new time zone
// or name goes to everyone who can access the user as a realm_user update.

import { SessionStore } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { transaction, type Tx, type UserProfile } from '@teamchat/db';
import {
  DISPLAY_SETTINGS_LEGACY,
  hashPassword,
  NOTIFICATION_SETTINGS_LEGACY,
  isPasswordTooWeak,
  userSettings,
  verifyPassword,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { languageName, type SettingValue } from '../lib/settings';
import { lockUser } from '../lib/locks';
import { changeFullName, sendPersonUpdate } from './users';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'redis' | 'env'>;

export interface SettingsChange {
  fullName?: string;
  /** A new password ends the user's other browser sessions: all but `keepSession` (a session's hash), if given. */
  password?: { old: string | undefined; new: string; keepSession?: string };
  /** Settings in the order the request named them; default_language and timezone included. */
  settings: [string, SettingValue][];
}

export async function doChangeSettings(deps: Deps, userId: number, change: SettingsChange): Promise<void> {
  // The password hash is slow: computed before the transaction holds the row lock.
  let passwordHash: string | undefined;
  if (change.password) {
    const current = await deps.db.userProfile.findUniqueOrThrow({
      where: { id: userId },
      select: { password_hash: true },
    });
    if (!(await verifyPassword(change.password.old ?? '', current.password_hash)))
      throw new JsonableError('Wrong password!');
    if (isPasswordTooWeak(change.password.new)) throw new JsonableError('New password is too weak!');
    passwordHash = await hashPassword(change.password.new);
  }

  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, userId);
    let user = await tx.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
    if (passwordHash !== undefined) {
      await tx.db.userProfile.update({ where: { id: userId }, data: { password_hash: passwordHash } });
      // As Django's update_session_auth_hash: the session that changed it stays logged in.
      const keep = change.password?.keepSession;
      tx.onCommit(() => new SessionStore(deps.redis, deps.env.REDIS_PREFIX).revokeUser(userId, keep));
    }

    // The view lets only humans here: no realm_bot update.
    if (change.fullName !== undefined && change.fullName !== user.full_name)
      user = await changeFullName(deps, tx, userId, change.fullName);

    const current = userSettings(user) as Record<string, unknown>;
    const changed = change.settings.filter(([name, value]) => current[name] !== value);
    // Zulip changes the time zone last.
    changed.sort(([a], [b]) => Number(a === 'timezone') - Number(b === 'timezone'));
    if (changed.length === 0) return;

    const stored = Object.fromEntries(changed.filter(([name]) => name !== 'timezone' && name !== 'default_language'));
    const columns: { timezone?: string; default_language?: string } = {};
    for (const [name, value] of changed)
      if (name === 'timezone' || name === 'default_language') columns[name] = String(value);
    if (Object.keys(stored).length) {
      await tx.db
        .$executeRaw`UPDATE user_profile SET settings = settings || ${JSON.stringify(stored)}::jsonb WHERE id = ${userId}`;
    }
    if (Object.keys(columns).length) user = await tx.db.userProfile.update({ where: { id: userId }, data: columns });

    for (const [name, value] of changed) await announceSetting(deps, tx, user, name, value);
  });
}

async function announceSetting(
  deps: Deps,
  tx: Tx,
  user: UserProfile,
  name: string,
  value: SettingValue,
): Promise<void> {
  const language = name === 'default_language' ? { language_name: languageName(String(value)) } : {};
  const own = [user.id];
  await deps.bus.sendEventOnCommit(
    tx,
    user.realm_id,
    { type: 'user_settings', op: 'update', property: name, value, ...language },
    own,
  );
  if (NOTIFICATION_SETTINGS_LEGACY.has(name)) {
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      { type: 'update_global_notifications', user: user.email, notification_name: name, setting: value },
      own,
    );
  }
  if (DISPLAY_SETTINGS_LEGACY.has(name)) {
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      { type: 'update_display_settings', user: user.email, setting_name: name, setting: value, ...language },
      own,
    );
  }
  if (name === 'timezone') await sendPersonUpdate(deps, tx, user, { email: user.email, timezone: value });
}
