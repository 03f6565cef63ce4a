// The initial state POST /register returns, built from sections. Each domain contributes
// its sections in its own file under sections/ and lists them in sections/index.ts; the
// event tier only asks the registry. A section runs inside the register transaction
// (one REPEATABLE READ snapshot), so every section sees the same moment.

import type { Realm, TxClient, UserProfile } from '@teamchat/db';
import type { RealmStateCache } from './realm-state-cache';

export interface ClientCapabilities {
  notification_settings_null?: boolean;
  bulk_message_deletion?: boolean;
  user_avatar_url_field_optional?: boolean;
  stream_typing_notifications?: boolean;
  user_settings_object?: boolean;
  linkifier_url_template?: boolean;
  user_list_incomplete?: boolean;
  include_deactivated_groups?: boolean;
  archived_channels?: boolean;
  empty_topic_name?: boolean;
  simplified_presence_events?: boolean;
  [name: string]: boolean | undefined;
}

export interface RegisterOptions {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  includeSubscribers: boolean | 'partial';
  /**
   * Whether to send `streams` (Zulip's include_streams: the web app's home page leaves them out,
   * taking channels from its subscription lists; absent: sent).
   */
  includeStreams?: boolean;
  /** The queue's narrow, in the object form ({operator, operand, negated}). */
  narrow: { operator: string; operand: unknown; negated?: boolean }[];
  allPublicStreams: boolean;
  capabilities: ClientCapabilities;
  /** Presence keyed by user id, in the modern format. */
  slimPresence?: boolean;
  /** How many days of presence history to send (null: the server's default). */
  presenceHistoryLimitDays?: number | null;
}

export interface StateContext {
  db: TxClient;
  realm: Realm;
  /** The user, or for a spectator the stand-in whose settings they get (spectatorSettingsUser). */
  user: UserProfile;
  /**
   * A logged-out visitor of the web-public channels (Zulip's user_profile=None): nothing
   * personal, every web-public channel as a subscription, everything read.
   */
  spectator?: boolean;
  options: RegisterOptions;
  /** Scheme clients reach the server by, for absolute URLs (e.g. "https"). */
  scheme: string;
  /** The server setting WEB_PUBLIC_STREAMS_ENABLED (absent: on, its default). */
  webPublicStreamsEnabled?: boolean;
  /** The server secret bots' API keys are sealed with (INTERNAL_JWT_SECRET, docs/adr/0007). */
  serverSecret: string;
  /** The process's built realm-wide parts (the event tier's); without it every register builds them. */
  realmStateCache?: RealmStateCache;
}

export interface StateSection {
  /** The event type, as named in `fetch_event_types`, that asks for this section. */
  eventType: string;
  /**
   * Other event types the client must ask for too (Zulip sends unread_msgs only for message
   * AND update_message_flags: keeping it current needs both kinds of events).
   */
  alsoRequires?: string[];
  /** Returns the keys this section adds to the register response. */
  fetch(ctx: StateContext): Promise<Record<string, unknown>>;
}

/** The sections to fetch for `fetchEventTypes` (null: all of them, Zulip's default). */
export function sectionsFor(sections: StateSection[], fetchEventTypes: string[] | null): StateSection[] {
  if (fetchEventTypes === null) return sections;
  return sections.filter((section) =>
    [section.eventType, ...(section.alsoRequires ?? [])].every((type) => fetchEventTypes.includes(type)),
  );
}

/** Runs the sections in order and merges their keys. */
export async function fetchInitialState(sections: StateSection[], ctx: StateContext): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (const section of sections) Object.assign(state, await section.fetch(ctx));
  return state;
}

/**
 * A read several sections share, done once per register: the context is one register's
 * (fetchInitialState passes the same object to every section).
 */
export function perRegister<T>(read: (ctx: StateContext) => Promise<T>): (ctx: StateContext) => Promise<T> {
  const results = new WeakMap<StateContext, Promise<T>>();
  return (ctx) => {
    let result = results.get(ctx);
    if (!result) {
      result = read(ctx);
      results.set(ctx, result);
    }
    return result;
  };
}
