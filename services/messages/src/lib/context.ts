// Reads about the acting user and their realm that most actions need.
import type { Realm, TxClient, UserProfile } from '@teamchat/db';

type Reader = Pick<TxClient, 'userProfile' | 'realm'>;

export interface Actor {
  user: UserProfile;
  realm: Realm;
}

export async function loadActor(db: Reader, userId: number): Promise<Actor> {
  const { realm, ...user } = await db.userProfile.findUniqueOrThrow({ where: { id: userId }, include: { realm: true } });
  return { user, realm };
}

/** The viewer shape the domain access checks take. */
export function viewerOf(user: Pick<UserProfile, 'id' | 'realm_id' | 'role'>) {
  return { id: user.id, realm_id: user.realm_id, role: user.role };
}

/** Realm settings the messages service reads, with Zulip's defaults. */
export function realmMessageSettings(realm: Pick<Realm, 'settings'>) {
  const stored = realm.settings && typeof realm.settings === 'object' && !Array.isArray(realm.settings) ? (realm.settings as Record<string, unknown>) : {};
  return {
    allow_message_editing: typeof stored.allow_message_editing === 'boolean' ? stored.allow_message_editing : true,
    /** null: no limit. */
    message_content_edit_limit_seconds:
      stored.message_content_edit_limit_seconds === null ? null : typeof stored.message_content_edit_limit_seconds === 'number' ? stored.message_content_edit_limit_seconds : 600,
  };
}
