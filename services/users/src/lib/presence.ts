import { queryRows, type Db } from '@teamchat/db';
import { requireActiveAccount } from '@teamchat/domain';

export interface StoredPresence {
  last_connected_time: Date | null;
  last_active_time: Date | null;
}

/** What a presence ping needs of its user: who they are, and their presence as stored. */
export interface PresenceActor {
  id: number;
  realm_id: number;
  email: string;
  role: number;
  is_bot: boolean;
  last_active_at: Date | null;
  presence: StoredPresence | null;
}

/**
 * The pinging user and their stored presence in one named statement (pings are a third of a
 * client's requests; see sqlPool for why not through Prisma). Refuses a deactivated account as
 * loadActor does.
 */
export async function readPresenceActor(db: Db, userId: number): Promise<PresenceActor> {
  const [row] = await queryRows<
    Omit<PresenceActor, 'presence'> & StoredPresence & { is_active: boolean; has_presence: boolean }
  >(
    db,
    'presence-actor',
    `SELECT u.id, u.realm_id, u.email, u.role, u.is_bot, u.is_active, u.last_active_at,
            p.user_profile_id IS NOT NULL AS has_presence, p.last_connected_time, p.last_active_time
       FROM user_profile u LEFT JOIN user_presence p ON p.user_profile_id = u.id
      WHERE u.id = $1`,
    [userId],
  );
  requireActiveAccount(row);
  const { last_connected_time, last_active_time, has_presence, is_active: _active, ...actor } = row;
  return { ...actor, presence: has_presence ? { last_connected_time, last_active_time } : null };
}
