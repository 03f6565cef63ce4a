// What a queue is registered with: the register parameters (also accepted by GET /events
// without a queue_id), parsed once, and the descriptor stored with the queue in Redis so that
// every replica filters and formats its events the same way.

import { JsonableError, optional, param, v, type ParamType, type Requester, type RequestParams } from '@teamchat/core';
import { checkNarrowForEvents, eventNarrow, isGuest, type EventNarrowTerm } from '@teamchat/domain';
import type { ClientCapabilities, RegisterOptions } from '@teamchat/state';
import type { EventsEnv } from '../env';

/** Everything the fan-out needs to know about a queue; immutable once the queue exists. */
export interface QueueDescriptor {
  userId: number;
  realmId: number;
  /** null: every event type. */
  eventTypes: string[] | null;
  narrow: EventNarrowTerm[];
  allPublicStreams: boolean;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  slimPresence: boolean;
  capabilities: ClientCapabilities;
  /** Idle time after which the queue is collected. */
  lifespanSecs: number;
}

export interface QueueRequest {
  descriptor: QueueDescriptor;
  /** Which state sections to fetch (null: all). */
  fetchEventTypes: string[] | null;
  registerOptions: RegisterOptions;
}

/** `true`, `false` or (feature level 412) the string "partial". */
const includeSubscribersParam: ParamType<boolean | 'partial'> = {
  decode(raw, varName) {
    if (raw === 'partial' || raw === '"partial"') return 'partial';
    return param.bool().decode(raw, varName);
  },
};

const eventTypeList = v.nullable(v.list(v.str()));

/** The register parameters (GET /events accepts them too, and uses them only to create a queue). */
export const REGISTER_PARAMETERS = [
  'apply_markdown',
  'client_gravatar',
  'client_extavatar',
  'slim_presence',
  'presence_history_limit_days',
  'all_public_streams',
  'include_subscribers',
  'include_streams',
  'client_capabilities',
  'event_types',
  'fetch_event_types',
  'narrow',
  'queue_lifespan_secs',
  'lifespan_secs',
];

/** The register parameters as given (client_gravatar's default depends on who registers). */
function parseRegisterParameters(params: RequestParams) {
  const p = params.parse({
    apply_markdown: optional(param.bool(), false),
    client_gravatar: optional<boolean | undefined>(param.bool(), undefined, { aliases: ['client_extavatar'] }),
    slim_presence: optional(param.bool(), false),
    presence_history_limit_days: optional(param.int()),
    all_public_streams: optional(param.bool(), false),
    include_subscribers: optional(includeSubscribersParam, false),
    include_streams: optional(param.bool(), true),
    client_capabilities: optional(param.json(v.nullable(v.dict(v.bool())))),
    event_types: optional(param.json(eventTypeList)),
    fetch_event_types: optional(param.json(eventTypeList)),
    narrow: optional(param.json(eventNarrow), []),
    queue_lifespan_secs: optional(param.int(), 0, { aliases: ['lifespan_secs'] }),
  });
  checkNarrowForEvents(p.narrow);
  return p;
}

/** Zulip: fetch_event_types defaults to event_types. */
function fetchEventTypesOf(p: ReturnType<typeof parseRegisterParameters>): string[] | null {
  return p.fetch_event_types !== undefined ? p.fetch_event_types : (p.event_types ?? null);
}

/** Parses the register parameters of `params` for `requester`; throws Zulip's errors. */
export function parseQueueRequest(params: RequestParams, requester: Requester, env: EventsEnv): QueueRequest {
  const p = { ...parseRegisterParameters(params) };
  const clientGravatar = p.client_gravatar ?? true;
  if (p.all_public_streams && isGuest(requester.role)) throw new JsonableError('User not authorized for this query');

  const capabilities: ClientCapabilities = { ...(p.client_capabilities ?? {}) };
  const eventTypes = p.event_types ?? null;
  const lifespanSecs =
    p.queue_lifespan_secs > 0
      ? Math.min(p.queue_lifespan_secs, env.EVENTS_QUEUE_MAX_LIFESPAN_SECS)
      : env.EVENTS_QUEUE_LIFESPAN_SECS;
  const descriptor: QueueDescriptor = {
    userId: requester.userId,
    realmId: requester.realmId,
    eventTypes,
    narrow: p.narrow,
    allPublicStreams: p.all_public_streams,
    applyMarkdown: p.apply_markdown,
    clientGravatar,
    slimPresence: p.slim_presence,
    capabilities,
    lifespanSecs,
  };
  return {
    descriptor,
    fetchEventTypes: fetchEventTypesOf(p),
    registerOptions: {
      applyMarkdown: p.apply_markdown,
      clientGravatar,
      includeSubscribers: p.include_subscribers,
      includeStreams: p.include_streams,
      narrow: p.narrow.map((term) => ({
        operator: term.operator,
        operand: term.operand,
        negated: term.negated ?? false,
      })),
      allPublicStreams: p.all_public_streams,
      capabilities,
      slimPresence: p.slim_presence,
      presenceHistoryLimitDays: p.presence_history_limit_days ?? null,
    },
  };
}

/** Queues that also see public-channel messages their user was not sent (Zulip's realm_clients_all_streams). */
export function isRealmWide(descriptor: QueueDescriptor, role: number): boolean {
  return descriptor.allPublicStreams || (descriptor.narrow.length > 0 && !isGuest(role));
}

/** What a spectator's register asks for: which state, in what form (no queue is made). */
export interface SpectatorRequest {
  fetchEventTypes: string[] | null;
  registerOptions: RegisterOptions;
  /** The visitor's language cookie, when it names one; else the organisation's language is used. */
  language: string | undefined;
}

/**
 * The register parameters of a logged-out request (Zulip's events_register_backend for an
 * anonymous user): avatars and subscriber lists cannot be asked for, no public-channel queue.
 */
export function parseSpectatorRequest(params: RequestParams, language: string | undefined): SpectatorRequest {
  const p = parseRegisterParameters(params);
  for (const key of ['client_gravatar', 'include_subscribers'] as const) {
    if (p[key]) throw new JsonableError(`Invalid '${key}' parameter for anonymous request`);
  }
  return {
    language,
    fetchEventTypes: fetchEventTypesOf(p),
    registerOptions: {
      applyMarkdown: p.apply_markdown,
      clientGravatar: false,
      includeSubscribers: false,
      includeStreams: false,
      narrow: [],
      allPublicStreams: false,
      capabilities: { ...(p.client_capabilities ?? {}) },
      slimPresence: true,
      presenceHistoryLimitDays: null,
    },
  };
}
