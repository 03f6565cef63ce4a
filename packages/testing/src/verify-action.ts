// Zulip's verify_action (zerver/tests/test_events.py) for Teamchat: register's state, plus the
// events an action sends applied as a client applies them (applyEvent), must be the state a
// fresh register gives. A field an event forgets, a wrong value, a change that sends nothing:
// each shows up here as a difference, with its path and both values.

import type { ApiClient } from './client';
import { applyEvents, type RegisterArguments, type ServerLookups } from './apply-event';
import { captureEvents, type CapturedEvent, type EventSource } from './committed-events';
import { EventQueue, settleEvents, type ReceivedEvent } from './events';

/**
 * Keys that differ between two registers by nature, left out of the comparison (Zulip's
 * match_states does the same):
 * - queue_id, last_event_id: each register has its own queue;
 * - server_timestamp: the time of the register;
 * - presence_last_update_id: presence events do not carry it (Zulip: "we don't adjust
 *   presence_last_update_id via apply_events, since events don't carry the relevant information").
 */
export const REGISTER_KEYS_NOT_COMPARED = ['queue_id', 'last_event_id', 'server_timestamp', 'presence_last_update_id'];

export interface StateDifference {
  path: string;
  applied: unknown;
  fresh: unknown;
}

export interface VerifiedAction {
  /** The events the queue received for the action (heartbeats aside), in order. */
  events: ReceivedEvent[];
  /** What the action committed through the outbox, to anyone (for asserting an event's recipients). */
  committed: CapturedEvent[];
  /** Register's state before the action. */
  before: Record<string, any>;
  /** The state after applying `events` to `before`. */
  applied: Record<string, any>;
  /** A fresh register's state after the action. */
  fresh: Record<string, any>;
}

export interface VerifyOptions {
  /** Whether the events must change the state (Zulip's state_change_expected; default true). */
  stateChange?: boolean;
  /** How many events the queue must receive (Zulip's num_events), when the test says. */
  numEvents?: number;
}

export class StateMismatchError extends Error {
  constructor(
    readonly differences: StateDifference[],
    readonly events: ReceivedEvent[],
  ) {
    super(
      `register's state + the action's events != a fresh register (${differences.length} difference(s)):\n` +
        differences
          .slice(0, 40)
          .map(
            ({ path, applied, fresh }) =>
              `  ${path}\n    after events: ${JSON.stringify(applied)}\n    fresh:        ${JSON.stringify(fresh)}`,
          )
          .join('\n') +
        `\nevents:\n${events.map((event) => `  ${JSON.stringify(event)}`).join('\n')}`,
    );
    this.name = 'StateMismatchError';
  }
}

/**
 * Registers a queue for `user` with `register` (arguments and client_capabilities), runs
 * `action`, collects what the queue receives until the event tier has fanned out everything
 * committed, applies it to the registered state, registers again and compares the two states.
 * Throws StateMismatchError with every differing path; returns the events otherwise.
 * `action` must wait for any background job it starts.
 */
export async function verifyAction(
  stack: EventSource,
  user: { id: number; client: ApiClient },
  register: RegisterArguments,
  action: () => Promise<unknown>,
  options: VerifyOptions = {},
): Promise<VerifiedAction> {
  const queue = await EventQueue.register(user.client, register);
  try {
    const before = stateOf(queue.registration);
    const committed = await captureEvents(stack, action);
    const events = await collectUntilQuiet(stack, queue);
    if (options.numEvents !== undefined && events.length !== options.numEvents) {
      throw new Error(
        `expected ${options.numEvents} event(s), the queue got ${events.length}:\n${events.map((event) => `  ${JSON.stringify(event)}`).join('\n')}`,
      );
    }
    const freshQueue = await EventQueue.register(user.client, register);
    await freshQueue.delete();
    const fresh = stateOf(freshQueue.registration);
    const applied = applyEvents(structuredClone(before), structuredClone(events), {
      userId: user.id,
      register,
      server: lookupsFrom(fresh, register),
    });
    const stateChanged = differences(normalize(before), normalize(applied)).length > 0;
    if ((options.stateChange ?? true) && !stateChanged) {
      throw new Error(
        `the action's events did not change register's state (pass stateChange: false if none should):\n${events.map((event) => `  ${JSON.stringify(event)}`).join('\n')}`,
      );
    }
    const found = differences(normalize(applied), normalize(fresh));
    if (found.length > 0) throw new StateMismatchError(found, events);
    return { events, committed, before, applied, fresh };
  } finally {
    await queue.delete().catch(() => undefined);
  }
}

/** Polls until the event tier has fanned out everything published and the queue holds nothing more. */
async function collectUntilQuiet(stack: EventSource, queue: EventQueue): Promise<ReceivedEvent[]> {
  const events: ReceivedEvent[] = [];
  for (;;) {
    await settleEvents(stack);
    const more = await queue.drain();
    if (more.length === 0) return events;
    events.push(...more);
  }
}

function stateOf(registration: Record<string, any>): Record<string, any> {
  const state = structuredClone(registration);
  for (const key of ['result', 'msg', ...REGISTER_KEYS_NOT_COMPARED]) delete state[key];
  return state;
}

/** What Zulip's apply_event reads from the database, read here from the fresh register after the action. */
function lookupsFrom(fresh: Record<string, any>, register: RegisterArguments): ServerLookups {
  const channel = (streamId: number) =>
    [...(fresh.subscriptions ?? []), ...(fresh.unsubscribed ?? []), ...(fresh.never_subscribed ?? [])].find(
      (entry) => entry.stream_id === streamId,
    );
  return {
    presenceOf: (id) => {
      const key = register.slim_presence ? String(id) : fresh.realm_users?.find((u: any) => u.user_id === id)?.email;
      return structuredClone(fresh.presences?.[key]);
    },
    maxMessageId: () => fresh.max_message_id,
    recentPrivateConversations: () => structuredClone(fresh.recent_private_conversations),
    realmBots: () => structuredClone(fresh.realm_bots),
    unsubscribedEntry: (streamId) => {
      const entry = (fresh.unsubscribed ?? []).find((sub: any) => sub.stream_id === streamId);
      return entry && structuredClone(entry);
    },
    firstMessageId: (streamId) => channel(streamId)?.first_message_id ?? null,
    permissions: () =>
      Object.fromEntries(
        Object.entries(fresh).filter(
          ([key]) =>
            key.startsWith('can_create_') ||
            key === 'can_invite_others_to_realm' ||
            // Zulip 10.2's apply_event leaves it stale after a role change (its clients compute
            // it from the group settings); recomputed here like the others it does recompute.
            key === 'can_subscribe_other_users',
        ),
      ),
    defaultStreams: () => structuredClone(fresh.realm_default_streams),
    realmPolicy: (key) => fresh[key],
  };
}

const byNumber = (key: string) => (a: any, b: any) => a[key] - b[key];
const byString = (key: string) => (a: any, b: any) => String(a[key]).localeCompare(String(b[key]));
const ascending = (a: number, b: number) => a - b;

/**
 * The state with the order of unordered collections made canonical (Zulip's match_states keys
 * subscriptions by name and realm_bots by email for the same reason: two registers may list
 * the same set in another order, and clients index them).
 */
function normalize(state: Record<string, any>): Record<string, any> {
  const copy = structuredClone(state);
  const sortList = (key: string, compare: (a: any, b: any) => number) => {
    if (Array.isArray(copy[key])) copy[key].sort(compare);
  };
  for (const key of ['realm_users', 'realm_non_active_users', 'cross_realm_bots', 'realm_bots'])
    sortList(key, byNumber('user_id'));
  for (const key of ['subscriptions', 'unsubscribed', 'never_subscribed', 'streams']) {
    sortList(key, byNumber('stream_id'));
    for (const entry of copy[key] ?? []) if (Array.isArray(entry.subscribers)) entry.subscribers.sort(ascending);
  }
  sortList('realm_user_groups', byNumber('id'));
  for (const group of copy.realm_user_groups ?? []) {
    group.members?.sort(ascending);
    group.direct_subgroup_ids?.sort(ascending);
  }
  for (const key of ['starred_messages', 'realm_default_streams', 'muted_users'])
    if (Array.isArray(copy[key]) && copy[key].every((item: unknown) => typeof item === 'number'))
      copy[key].sort(ascending);
  sortList('muted_users', byNumber('id'));
  sortList('drafts', byNumber('id'));
  sortList('saved_snippets', byNumber('id'));
  sortList('realm_domains', byString('domain'));
  sortList('navigation_views', byString('fragment'));
  sortList('channel_folders', byNumber('id'));
  if (Array.isArray(copy.user_topics))
    copy.user_topics.sort((a: any, b: any) => a.stream_id - b.stream_id || byString('topic_name')(a, b));
  if (copy.unread_msgs) {
    const unread = copy.unread_msgs;
    unread.streams?.sort((a: any, b: any) => a.stream_id - b.stream_id || byString('topic')(a, b));
    unread.pms?.sort(byNumber('other_user_id'));
    unread.huddles?.sort(byString('user_ids_string'));
    for (const bucket of [...(unread.streams ?? []), ...(unread.pms ?? []), ...(unread.huddles ?? [])])
      bucket.unread_message_ids.sort(ascending);
    unread.mentions?.sort(ascending);
  }
  return copy;
}

/** Every path where `applied` and `fresh` differ (arrays by index, objects by key). */
export function differences(applied: unknown, fresh: unknown, path = ''): StateDifference[] {
  if (Object.is(applied, fresh)) return [];
  if (Array.isArray(applied) && Array.isArray(fresh)) {
    if (applied.length !== fresh.length) {
      // Say which elements are missing on each side rather than every shifted index.
      const key = (item: unknown) => JSON.stringify(item);
      const freshKeys = new Set(fresh.map(key));
      const appliedKeys = new Set(applied.map(key));
      const onlyApplied = applied.filter((item) => !freshKeys.has(key(item)));
      const onlyFresh = fresh.filter((item) => !appliedKeys.has(key(item)));
      return [
        { path: `${path} (length ${applied.length} vs ${fresh.length})`, applied: onlyApplied, fresh: onlyFresh },
      ];
    }
    return applied.flatMap((item, index) => differences(item, fresh[index], `${path}[${index}]`));
  }
  if (isPlainObject(applied) && isPlainObject(fresh)) {
    const keys = [...new Set([...Object.keys(applied), ...Object.keys(fresh)])].sort();
    return keys.flatMap((key) => {
      const child = path ? `${path}.${key}` : key;
      if (!(key in applied)) return [{ path: child, applied: '(absent)', fresh: fresh[key] }];
      if (!(key in fresh)) return [{ path: child, applied: applied[key], fresh: '(absent)' }];
      return differences(applied[key], fresh[key], child);
    });
  }
  return [{ path: path || '(root)', applied, fresh }];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
