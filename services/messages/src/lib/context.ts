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

/**
 * Realm settings the messages service reads, with Zulip's defaults. They live in realm.settings,
 * under their register names (realm_allow_message_editing, as the state section reads them) or
 * their bare names.
 */
export function realmMessageSettings(realm: Pick<Realm, 'settings'>) {
  const stored = realm.settings && typeof realm.settings === 'object' && !Array.isArray(realm.settings) ? (realm.settings as Record<string, unknown>) : {};
  const read = (name: string): unknown => (`realm_${name}` in stored ? stored[`realm_${name}`] : stored[name]);
  const bool = (name: string, fallback: boolean) => {
    const value = read(name);
    return typeof value === 'boolean' ? value : fallback;
  };
  /** Seconds, or null for no limit. */
  const limit = (name: string, fallback: number | null) => {
    const value = read(name);
    return value === null ? null : typeof value === 'number' ? value : fallback;
  };
  return {
    allow_message_editing: bool('allow_message_editing', true),
    allow_edit_history: bool('allow_edit_history', true),
    /** "all", "moves" (topic and channel changes only) or "none"; allow_edit_history false means "none". */
    message_edit_history_visibility_policy: !bool('allow_edit_history', true)
      ? ('none' as const)
      : read('message_edit_history_visibility_policy') === 'moves' || read('message_edit_history_visibility_policy') === 'none'
        ? (read('message_edit_history_visibility_policy') as 'moves' | 'none')
        : ('all' as 'all' | 'moves' | 'none'),
    message_content_edit_limit_seconds: limit('message_content_edit_limit_seconds', 600),
    message_content_delete_limit_seconds: limit('message_content_delete_limit_seconds', null),
    move_messages_within_stream_limit_seconds: limit('move_messages_within_stream_limit_seconds', 604800),
    move_messages_between_streams_limit_seconds: limit('move_messages_between_streams_limit_seconds', 604800),
  };
}

/**
 * Edit history entries as the realm's message_edit_history_visibility_policy lets them be seen
 * (Zulip's messages_for_ids): all of them, only moves (without content fields), or none (null).
 */
export function visibleEditHistory<T extends Record<string, unknown>>(entries: T[], policy: 'all' | 'moves' | 'none'): T[] | null {
  if (policy === 'none') return null;
  if (policy === 'all') return entries;
  return entries
    .filter((entry) => 'prev_topic' in entry || 'prev_stream' in entry)
    .map((entry) => {
      const { prev_content: _content, prev_rendered_content: _rendered, ...move } = entry;
      return move as unknown as T;
    });
}
