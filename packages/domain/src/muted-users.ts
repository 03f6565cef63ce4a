// Muted users (Zulip's zerver/lib/muted_users.py): what register's muted_users and the
// muted_users event list.
import type { TxClient } from '@teamchat/db';

export interface UserMute {
  id: number;
  /** When the user was muted, in seconds since the epoch. */
  timestamp: number;
}

/** The users `userId` muted, oldest mute first (Zulip's get_user_mutes). */
export async function userMutes(db: Pick<TxClient, 'mutedUser'>, userId: number): Promise<UserMute[]> {
  const rows = await db.mutedUser.findMany({
    where: { user_profile_id: userId },
    orderBy: { id: 'asc' },
    select: { muted_user_id: true, date_muted: true },
  });
  return rows.map((row) => ({ id: row.muted_user_id, timestamp: Math.floor(row.date_muted.getTime() / 1000) }));
}
