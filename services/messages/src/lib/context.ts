// The realm settings message actions act on, and what edit history they show.
import type { Realm } from '@teamchat/db';
import { REALM_SETTING_DEFAULTS, realmSettings, type RealmSettings } from '@teamchat/domain';

/** The realm settings the messages service acts on, typed (a stored value of the wrong type counts as the default). */
export function realmMessageSettings(realm: Pick<Realm, 'settings'>) {
  const settings = realmSettings(realm);
  type Name = keyof RealmSettings;
  const bool = (name: Name) =>
    typeof settings[name] === 'boolean' ? (settings[name] as boolean) : (REALM_SETTING_DEFAULTS[name] as boolean);
  /** Seconds, or null for no limit. */
  const limit = (name: Name) =>
    settings[name] === null || typeof settings[name] === 'number'
      ? (settings[name] as number | null)
      : (REALM_SETTING_DEFAULTS[name] as number | null);
  const policy = settings.realm_message_edit_history_visibility_policy;
  return {
    allow_message_editing: bool('realm_allow_message_editing'),
    allow_edit_history: bool('realm_allow_edit_history'),
    /** "all", "moves" (topic and channel changes only) or "none"; allow_edit_history false means "none". */
    message_edit_history_visibility_policy: (!bool('realm_allow_edit_history')
      ? 'none'
      : policy === 'moves' || policy === 'none'
        ? policy
        : 'all') as 'all' | 'moves' | 'none',
    message_content_edit_limit_seconds: limit('realm_message_content_edit_limit_seconds'),
    message_content_delete_limit_seconds: limit('realm_message_content_delete_limit_seconds'),
    move_messages_within_stream_limit_seconds: limit('realm_move_messages_within_stream_limit_seconds'),
    move_messages_between_streams_limit_seconds: limit('realm_move_messages_between_streams_limit_seconds'),
  };
}

/**
 * Edit history entries as the realm's message_edit_history_visibility_policy lets them be seen
 * (Zulip's messages_for_ids): all of them, only moves (without content fields), or none (null).
 */
export function visibleEditHistory<T extends Record<string, unknown>>(
  entries: T[],
  policy: 'all' | 'moves' | 'none',
): T[] | null {
  if (policy === 'none') return null;
  if (policy === 'all') return entries;
  return entries
    .filter((entry) => 'prev_topic' in entry || 'prev_stream' in entry)
    .map((entry) => {
      const { prev_content: _content, prev_rendered_content: _rendered, ...move } = entry;
      return move as unknown as T;
    });
}
