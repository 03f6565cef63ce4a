// User statuses (Zulip's zerver/lib/user_status.py): the API form of a status, where `away` is
// the legacy inverse of the presence_enabled setting (Zulip >= 6), and the realm's statuses
// register and GET /users/{user_id}/status answer.

import type { TxClient, UserProfile, UserStatus } from '@teamchat/db';
import { userSettings } from './user-settings';
import { inaccessibleUserIds, type UserReader } from './users';

/** Zulip's status_text limit. */
export const MAX_STATUS_TEXT_LENGTH = 60;

export interface UserStatusDict {
  away?: boolean;
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
}

type StatusRow = Pick<UserStatus, 'status_text' | 'emoji_name' | 'emoji_code' | 'reaction_type'>;

/** Zulip's format_user_status: only the parts that are set. */
export function userStatusDict(row: StatusRow | null, presenceEnabled: boolean): UserStatusDict {
  const status: UserStatusDict = {};
  if (!presenceEnabled) status.away = true;
  if (row?.status_text) status.status_text = row.status_text;
  if (row?.emoji_name) {
    status.emoji_name = row.emoji_name;
    status.emoji_code = row.emoji_code;
    status.reaction_type = row.reaction_type;
  }
  return status;
}

const presenceEnabled = (
  user: Pick<UserProfile, 'settings' | 'timezone' | 'default_language' | 'email_address_visibility'>,
) => (userSettings(user).presence_enabled as boolean) !== false;

/** One user's status (GET /users/{user_id}/status): {} when nothing is set. */
export async function userStatusOf(
  db: Pick<TxClient, 'userStatus'>,
  user: Pick<UserProfile, 'id' | 'settings' | 'timezone' | 'default_language' | 'email_address_visibility'>,
): Promise<UserStatusDict> {
  const row = await db.userStatus.findUnique({ where: { user_profile_id: user.id } });
  // Zulip reads the status row; without one, nothing is set (away included).
  return row ? userStatusDict(row, presenceEnabled(user)) : {};
}

/**
 * The statuses `viewer` may see, keyed by user id (Zulip's get_all_users_status_dict): active
 * users with a status row that says something (text, emoji, or away), but not users the viewer
 * cannot access.
 */
export async function realmUserStatuses(
  db: UserReader & Pick<TxClient, 'userStatus'>,
  viewer: UserProfile,
): Promise<Record<string, UserStatusDict>> {
  const rows = await db.userStatus.findMany({
    where: { user: { realm_id: viewer.realm_id, is_active: true } },
    include: {
      user: {
        select: {
          id: true,
          is_bot: true,
          settings: true,
          timezone: true,
          default_language: true,
          email_address_visibility: true,
        },
      },
    },
    orderBy: { user_profile_id: 'asc' },
  });
  const hidden = await inaccessibleUserIds(
    db,
    viewer,
    rows.map((row) => row.user),
  );
  const statuses: Record<string, UserStatusDict> = {};
  for (const row of rows) {
    if (hidden.has(row.user_profile_id)) continue;
    const status = userStatusDict(row, presenceEnabled(row.user));
    if (Object.keys(status).length) statuses[String(row.user_profile_id)] = status;
  }
  return statuses;
}
