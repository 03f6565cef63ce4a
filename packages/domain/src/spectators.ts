// Spectators: logged-out visitors reading an organisation's web-public channels (Zulip's
// zerver/models/realms.py allow_web_public_streams_access, and the user_profile=None paths of
// zerver/lib/events.py and zerver/views/message_fetch.py).

import { NOT_LOGGED_IN, SESSION_AUTHENTICATE, UnauthorizedError } from '@teamchat/core';
import type { Prisma, Realm, TxClient, UserProfile } from '@teamchat/db';
import { Role } from './roles';
import type { Viewer } from './streams';

/** Zulip's get_web_public_streams_queryset: the channels a spectator may read. */
export function webPublicChannelsWhere(realmId: number): Prisma.StreamWhereInput {
  return { realm_id: realmId, is_web_public: true, invite_only: false, history_public_to_subscribers: true };
}

/**
 * Zulip's Realm.allow_web_public_streams_access: the server allows web-public channels
 * (WEB_PUBLIC_STREAMS_ENABLED), the organisation enabled spectator access, and it has a
 * web-public channel to show.
 */
export async function allowsSpectators(
  db: Pick<TxClient, 'stream'>,
  realm: Pick<Realm, 'id' | 'enable_spectator_access'>,
  serverEnabled: boolean,
): Promise<boolean> {
  if (!serverEnabled || !realm.enable_spectator_access) return false;
  const channel = await db.stream.findFirst({ where: webPublicChannelsWhere(realm.id), select: { id: true } });
  return channel !== null;
}

/**
 * Zulip's MissingAuthenticationError, refusing a logged-out request, as /json answers it: the
 * gateway lets a request through without credentials only from /json (rest_dispatch's
 * allow_anonymous_user_web), so that is where every one a service refuses came from.
 */
export function spectatorRefused(): UnauthorizedError {
  return new UnauthorizedError(NOT_LOGGED_IN, SESSION_AUTHENTICATE);
}

/** The id no user has, which Zulip gives the spectator's stand-in user (events.py). */
export const SPECTATOR_USER_ID = 0;

/** A spectator as a reader of channels and messages: a guest (most guest restrictions apply to them too). */
export function spectatorViewer(realmId: number): Viewer {
  return { id: SPECTATOR_USER_ID, realm_id: realmId, role: Role.GUEST };
}

/**
 * The user whose settings a spectator's register state shows (Zulip's unsaved UserProfile in
 * fetch_initial_state_data): the default settings, the requested language, Recent conversations
 * as the home view.
 */
export function spectatorSettingsUser(realm: Pick<Realm, 'id'>, language: string): UserProfile {
  return {
    id: SPECTATOR_USER_ID,
    realm_id: realm.id,
    email: 'username@example.com',
    delivery_email: 'username@example.com',
    full_name: 'Anonymous User',
    role: Role.GUEST,
    is_active: true,
    is_bot: false,
    bot_type: null,
    bot_owner_id: null,
    password_hash: null,
    date_joined: new Date(),
    timezone: '',
    avatar_source: 'G',
    avatar_version: 1,
    avatar_key: null,
    email_address_visibility: 1,
    default_language: language,
    last_active_at: null,
    settings: { web_home_view: 'recent_topics' },
    default_sending_stream_id: null,
    default_events_register_stream_id: null,
    default_all_public_streams: false,
  };
}
