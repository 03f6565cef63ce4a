// What a client does with an event to the state register gave it: Zulip 10.2's apply_event
// (zerver/lib/events.py), written here for register's answer as clients receive it (Zulip
// applies to an intermediate form — raw_users, raw_unread_msgs — then post-processes; we apply
// to the final keys: realm_users, unread_msgs, recent_private_conversations). verifyAction
// (verify-action.ts) uses it to check that register's state plus an action's events is the
// state a fresh register gives.
//
// Where Zulip's apply_event reads the database instead of the event (a presence's whole entry,
// max_message_id after a deletion, a recomputed recent_private_conversations, the bots an
// administrator now sees, the previous subscription of a channel created again), the caller
// passes those reads as `server` lookups, as Zulip's own test does by querying.

/** Register's arguments and capabilities that change how events apply (Zulip's apply_event keyword arguments). */
export interface RegisterArguments {
  apply_markdown?: boolean;
  client_gravatar?: boolean;
  slim_presence?: boolean;
  include_subscribers?: boolean | 'partial';
  include_streams?: boolean;
  client_capabilities?: {
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
    [name: string]: boolean | undefined;
  };
  [name: string]: string | number | boolean | null | object | undefined;
}

/** What Zulip's apply_event reads from the database rather than from the event. */
export interface ServerLookups {
  /** The presence entry of `userId` as register now shows it (its key in `presences` is the caller's). */
  presenceOf(userId: number): Record<string, unknown> | undefined;
  /** The user's newest message id now (after a deletion). */
  maxMessageId(): number;
  /** recent_private_conversations recomputed (after a direct message's deletion). */
  recentPrivateConversations(): unknown[];
  /** The bots an administrator sees now (realm_bots, after the user became one). */
  realmBots(): unknown[];
  /** The user's own unsubscribed entry of a channel (re)created, when they were subscribed before. */
  unsubscribedEntry(streamId: number): Record<string, unknown> | undefined;
  /** A channel's first_message_id now (an archived channel's, Zulip reads it). */
  firstMessageId(streamId: number): number | null;
  /** Register's can_create_*_streams, can_invite_others_to_realm after a role or group setting change. */
  permissions(): Record<string, unknown>;
  /** realm_default_streams as the user sees it now (after a role change). */
  defaultStreams(): unknown;
  /** A legacy realm policy register derives from a group setting (realm_wildcard_mention_policy, ...). */
  realmPolicy(key: string): unknown;
}

export interface ApplyOptions {
  /** The user the state is for. */
  userId: number;
  register: RegisterArguments;
  server: ServerLookups;
}

type State = Record<string, any>;
type Event = Record<string, any> & { type: string };

const ROLE_OWNER = 100;
const ROLE_ADMINISTRATOR = 200;
const ROLE_MODERATOR = 300;
const ROLE_GUEST = 600;

/** Event types that change no register state (clients keep them for messages or UI Zulip does not send in register). */
const STATELESS_TYPES = new Set([
  'heartbeat',
  'reaction',
  'submessage',
  'typing',
  'typing_edit_message',
  'attachment',
  'realm_export',
  'realm_export_consent',
  'invites_changed',
  'restart',
  'web_reload_client',
]);

/** The state after `event`, applied as Zulip's apply_event does (the state is changed in place and returned). */
export function applyEvent(state: State, event: Event, options: ApplyOptions): State {
  if (STATELESS_TYPES.has(event.type)) return state;
  const handler = HANDLERS[event.type];
  if (!handler) throw new Error(`applyEvent: no rule for event type ${event.type}`);
  handler(state, event, options);
  return state;
}

/** Applies `events` in order. */
export function applyEvents(state: State, events: Event[], options: ApplyOptions): State {
  for (const event of events) applyEvent(state, event, options);
  return state;
}

/** The event types applyEvent knows (stateless ones included). */
export function appliedEventTypes(): string[] {
  return [...STATELESS_TYPES, ...Object.keys(HANDLERS)];
}

type Handler = (state: State, event: Event, options: ApplyOptions) => void;

const capability = (options: ApplyOptions, name: string) => options.register.client_capabilities?.[name] === true;
const includeSubscribers = (options: ApplyOptions) => !!options.register.include_subscribers;
/** register's client_gravatar: true unless the client says false (Zulip's default). */
const clientGravatar = (options: ApplyOptions) => options.register.client_gravatar !== false;

/** Every channel list of the state (the user's subscriptions, those left, those never joined). */
function channelLists(state: State): Record<string, any>[][] {
  return [state.subscriptions, state.unsubscribed, state.never_subscribed].filter(Array.isArray);
}

function replaceBy<T extends Record<string, any>>(list: T[], match: (item: T) => boolean, replacement: T) {
  const index = list.findIndex(match);
  if (index >= 0) list[index] = replacement;
}

// ---- unread_msgs: kept as Zulip's raw form while applying, aggregated back afterwards ----

interface UnreadEntry {
  kind: 'stream' | 'private' | 'huddle';
  stream_id?: number;
  topic?: string;
  other_user_id?: number;
  user_ids_string?: string;
}

interface RawUnread {
  byId: Map<number, UnreadEntry>;
  mentions: Set<number>;
  oldUnreadsMissing: boolean;
}

function rawUnread(unread: Record<string, any>): RawUnread {
  const byId = new Map<number, UnreadEntry>();
  for (const bucket of unread.streams ?? [])
    for (const id of bucket.unread_message_ids)
      byId.set(id, { kind: 'stream', stream_id: bucket.stream_id, topic: bucket.topic });
  for (const bucket of unread.pms ?? [])
    for (const id of bucket.unread_message_ids) byId.set(id, { kind: 'private', other_user_id: bucket.other_user_id });
  for (const bucket of unread.huddles ?? [])
    for (const id of bucket.unread_message_ids)
      byId.set(id, { kind: 'huddle', user_ids_string: bucket.user_ids_string });
  return { byId, mentions: new Set(unread.mentions ?? []), oldUnreadsMissing: unread.old_unreads_missing ?? false };
}

/** Whether a channel message counts as muted for the user (a muted channel unless the topic is unmuted or followed, or a muted topic). */
function isMutedTopic(state: State, streamId: number, topic: string): boolean {
  const policy = (state.user_topics ?? []).find(
    (entry: any) => entry.stream_id === streamId && String(entry.topic_name).toLowerCase() === topic.toLowerCase(),
  )?.visibility_policy;
  if (policy === 1) return true;
  if (policy === 2 || policy === 3) return false;
  const sub = (state.subscriptions ?? []).find((entry: any) => entry.stream_id === streamId);
  return !!sub?.is_muted;
}

/** Zulip's aggregate_unread_data: buckets in the order of their oldest message, ids ascending. */
function aggregateUnread(state: State, raw: RawUnread): Record<string, unknown> {
  const ids = [...raw.byId.keys()].sort((a, b) => a - b);
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const pms = new Map<number, number[]>();
  const huddles = new Map<string, number[]>();
  let count = 0;
  for (const id of ids) {
    const entry = raw.byId.get(id)!;
    if (entry.kind === 'stream') {
      const key = `${entry.stream_id}\u0000${entry.topic!.toLowerCase()}`;
      const bucket = streams.get(key) ?? { stream_id: entry.stream_id!, topic: entry.topic!, unread_message_ids: [] };
      bucket.unread_message_ids.push(id);
      streams.set(key, bucket);
      if (!isMutedTopic(state, entry.stream_id!, entry.topic!)) count++;
    } else if (entry.kind === 'private') {
      pms.set(entry.other_user_id!, [...(pms.get(entry.other_user_id!) ?? []), id]);
      count++;
    } else {
      huddles.set(entry.user_ids_string!, [...(huddles.get(entry.user_ids_string!) ?? []), id]);
      count++;
    }
  }
  return {
    count,
    pms: [...pms].map(([other, list]) => ({ other_user_id: other, sender_id: other, unread_message_ids: list })),
    streams: [...streams.values()],
    huddles: [...huddles].map(([key, list]) => ({ user_ids_string: key, unread_message_ids: list })),
    mentions: [...raw.mentions].filter((id) => raw.byId.has(id)).sort((a, b) => a - b),
    old_unreads_missing: raw.oldUnreadsMissing,
  };
}

function withUnread(state: State, change: (raw: RawUnread) => void) {
  if (!state.unread_msgs) return;
  const raw = rawUnread(state.unread_msgs);
  change(raw);
  state.unread_msgs = aggregateUnread(state, raw);
}

/** Recomputes unread_msgs' muting-dependent parts (count) after the user's muting changed. */
function refreshUnread(state: State) {
  withUnread(state, () => {});
}

const MENTION_FLAGS = ['mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned'];

function unreadEntryOf(userId: number, details: Record<string, any>): UnreadEntry {
  if (details.type === 'stream') return { kind: 'stream', stream_id: details.stream_id, topic: details.topic };
  const others: number[] = details.user_ids ?? [];
  if (others.length <= 1) return { kind: 'private', other_user_id: others[0] ?? userId };
  return {
    kind: 'huddle',
    user_ids_string: [...new Set([...others, userId])].sort((a, b) => a - b).join(','),
  };
}

// ---- users ----

function allUsers(state: State): Record<string, any>[] {
  return [...(state.realm_users ?? []), ...(state.realm_non_active_users ?? [])];
}

function findUser(state: State, userId: number) {
  return allUsers(state).find((user) => user.user_id === userId);
}

const isAdministratorRole = (role: number) => role === ROLE_OWNER || role === ROLE_ADMINISTRATOR;

/** Group settings whose legacy policy register still sends (Zulip's get_corresponding_policy_value_for_group_setting). */
const DERIVED_REALM_POLICIES: Record<string, string> = {
  can_create_public_channel_group: 'realm_create_public_stream_policy',
  can_create_private_channel_group: 'realm_create_private_stream_policy',
  can_create_web_public_channel_group: 'realm_create_web_public_stream_policy',
  can_mention_many_users_group: 'realm_wildcard_mention_policy',
};

const HANDLERS: Record<string, Handler> = {
  message(state, event, { userId }) {
    const message = event.message;
    if ('max_message_id' in state) state.max_message_id = Math.max(state.max_message_id, message.id);
    if (!event.flags.includes('read')) {
      withUnread(state, (raw) => {
        const details =
          message.type === 'stream'
            ? { type: 'stream', stream_id: message.stream_id, topic: message.subject }
            : {
                type: 'private',
                user_ids: (message.display_recipient as { id: number }[])
                  .map((recipient) => recipient.id)
                  .filter((id) => id !== userId),
              };
        raw.byId.set(message.id, unreadEntryOf(userId, details));
        const mentioned =
          event.flags.includes('mentioned') ||
          (event.flags.some((flag: string) => MENTION_FLAGS.includes(flag)) &&
            !(message.type === 'stream' && isMutedTopic(state, message.stream_id, message.subject)));
        if (mentioned) raw.mentions.add(message.id);
      });
    }
    if (message.type !== 'stream') {
      if (Array.isArray(state.recent_private_conversations)) {
        const others = (message.display_recipient as { id: number }[])
          .map((recipient) => recipient.id)
          .filter((id) => id !== userId)
          .sort((a, b) => a - b);
        const key = others.join(',');
        const conversations = state.recent_private_conversations as { user_ids: number[]; max_message_id: number }[];
        const existing = conversations.find((conversation) => conversation.user_ids.join(',') === key);
        if (existing) existing.max_message_id = message.id;
        else conversations.push({ max_message_id: message.id, user_ids: others });
        conversations.sort((a, b) => b.max_message_id - a.max_message_id);
      }
      return;
    }
    for (const list of [state.subscriptions, state.streams].filter(Array.isArray)) {
      for (const entry of list) {
        if (entry.stream_id === message.stream_id && entry.first_message_id === null)
          entry.first_message_id = message.id;
      }
    }
  },

  update_message(state, event) {
    withUnread(state, (raw) => {
      for (const id of event.message_ids ?? []) {
        const entry = raw.byId.get(id);
        if (!entry || entry.kind !== 'stream') continue;
        if ('new_stream_id' in event) entry.stream_id = event.new_stream_id;
        if ('subject' in event) entry.topic = event.subject;
      }
    });
  },

  delete_message(state, event, { server }) {
    const ids: number[] = 'message_id' in event ? [event.message_id] : event.message_ids;
    if ('max_message_id' in state) state.max_message_id = server.maxMessageId();
    withUnread(state, (raw) => {
      for (const id of ids) {
        raw.byId.delete(id);
        raw.mentions.delete(id);
      }
    });
    if (event.message_type === 'private' && Array.isArray(state.recent_private_conversations))
      state.recent_private_conversations = server.recentPrivateConversations();
  },

  update_message_flags(state, event, { userId }) {
    const messages: number[] = event.messages ?? [];
    if (event.flag === 'read' && event.op === 'add') {
      withUnread(state, (raw) => {
        for (const id of messages) {
          raw.byId.delete(id);
          raw.mentions.delete(id);
        }
      });
    }
    if (event.flag === 'read' && event.op === 'remove') {
      withUnread(state, (raw) => {
        for (const [id, details] of Object.entries<Record<string, any>>(event.message_details ?? {})) {
          const entry = unreadEntryOf(userId, details);
          raw.byId.set(Number(id), entry);
          if (details.mentioned) raw.mentions.add(Number(id));
        }
      });
    }
    if (event.flag === 'starred' && Array.isArray(state.starred_messages)) {
      if (event.op === 'add') state.starred_messages.push(...messages);
      else state.starred_messages = state.starred_messages.filter((id: number) => !messages.includes(id));
    }
  },

  saved_snippets(state, event) {
    if (event.op === 'add') state.saved_snippets.push(event.saved_snippet);
    else if (event.op === 'remove')
      state.saved_snippets = state.saved_snippets.filter((snippet: any) => snippet.id !== event.saved_snippet_id);
    else replaceBy(state.saved_snippets, (snippet) => snippet.id === event.saved_snippet.id, event.saved_snippet);
  },

  drafts(state, event) {
    if (event.op === 'add') state.drafts.push(...event.drafts);
    else if (event.op === 'update') replaceBy(state.drafts, (draft) => draft.id === event.draft.id, event.draft);
    else state.drafts = state.drafts.filter((draft: any) => draft.id !== event.draft_id);
  },

  scheduled_messages(state, event) {
    const byDelivery = (a: any, b: any) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp;
    if (event.op === 'add') {
      state.scheduled_messages.push(...event.scheduled_messages);
      state.scheduled_messages.sort(byDelivery);
    } else if (event.op === 'update') {
      replaceBy(
        state.scheduled_messages,
        (scheduled) => scheduled.scheduled_message_id === event.scheduled_message.scheduled_message_id,
        event.scheduled_message,
      );
      state.scheduled_messages.sort(byDelivery);
    } else {
      state.scheduled_messages = state.scheduled_messages.filter(
        (scheduled: any) => scheduled.scheduled_message_id !== event.scheduled_message_id,
      );
    }
  },

  onboarding_steps(state, event) {
    state.onboarding_steps = event.onboarding_steps;
  },

  custom_profile_fields(state, event) {
    state.custom_profile_fields = event.fields;
    const fieldIds = new Set((event.fields as { id: number }[]).map((field) => String(field.id)));
    for (const user of allUsers(state)) {
      if (!user.profile_data) continue;
      for (const fieldId of Object.keys(user.profile_data))
        if (!fieldIds.has(fieldId)) delete user.profile_data[fieldId];
    }
  },

  realm_user(state, event, options) {
    const { userId, server } = options;
    const person = event.person;
    const personId: number = person.user_id;
    if (event.op === 'add') {
      const added = structuredClone(person);
      if (clientGravatar(options) && isGravatar(added.avatar_url)) added.avatar_url = null;
      added.is_active = true;
      if (!added.is_bot) added.profile_data = {};
      state.realm_non_active_users = (state.realm_non_active_users ?? []).filter(
        (user: any) => user.user_id !== personId,
      );
      state.realm_users = [...(state.realm_users ?? []).filter((user: any) => user.user_id !== personId), added];
      return;
    }
    if (event.op === 'remove') {
      // Zulip 10.2: the user became inaccessible to this one.
      if (capability(options, 'user_list_incomplete')) {
        state.realm_users = state.realm_users.filter((user: any) => user.user_id !== personId);
        state.realm_non_active_users = state.realm_non_active_users.filter((user: any) => user.user_id !== personId);
      }
      if (includeSubscribers(options)) removeSubscriber(state, personId);
      return;
    }
    // update
    if (personId === userId) {
      if ('avatar_url' in person && 'avatar_url' in state) {
        state.avatar_source = person.avatar_source;
        state.avatar_url = person.avatar_url;
        state.avatar_url_medium = person.avatar_url_medium;
      }
      if ('role' in person) {
        const wasAdmin = isAdministratorRole(findUser(state, userId)?.role ?? 0);
        state.is_admin = isAdministratorRole(person.role);
        state.is_owner = person.role === ROLE_OWNER;
        state.is_moderator = person.role === ROLE_MODERATOR;
        state.is_guest = person.role === ROLE_GUEST;
        Object.assign(state, server.permissions());
        if ('realm_default_streams' in state) state.realm_default_streams = server.defaultStreams();
        // An administrator sees every bot, anyone else their own.
        if ('realm_bots' in state && wasAdmin !== state.is_admin) state.realm_bots = server.realmBots();
      }
      for (const field of ['delivery_email', 'email', 'full_name']) {
        if (field in person && field in state) state[field] = person[field];
      }
      if ('new_email' in person) state.email = person.new_email;
    }
    const user = findUser(state, personId);
    if (!user) return;
    const update = { ...person };
    if ('avatar_url' in update && clientGravatar(options) && isGravatar(update.avatar_url)) {
      update.avatar_url = null;
      update.avatar_url_medium = null;
    }
    for (const field of Object.keys(user)) if (field in update) user[field] = update[field];
    if ('role' in update) {
      user.is_admin = isAdministratorRole(update.role);
      user.is_owner = update.role === ROLE_OWNER;
      user.is_guest = update.role === ROLE_GUEST;
      if ('is_moderator' in user) user.is_moderator = update.role === ROLE_MODERATOR;
    }
    if ('custom_profile_field' in update) {
      const field = update.custom_profile_field;
      const fieldId = String(field.id);
      user.profile_data ??= {};
      if (field.value === null) delete user.profile_data[fieldId];
      else if ('rendered_value' in field)
        user.profile_data[fieldId] = { value: field.value, rendered_value: field.rendered_value };
      else user.profile_data[fieldId] = { value: field.value };
    }
    if ('new_email' in update) user.email = update.new_email;
    if ('is_active' in update) {
      // Zulip's state keeps one dict of users; the register answer splits active from not.
      const active = update.is_active as boolean;
      state.realm_users = state.realm_users.filter((entry: any) => entry.user_id !== personId);
      state.realm_non_active_users = state.realm_non_active_users.filter((entry: any) => entry.user_id !== personId);
      (active ? state.realm_users : state.realm_non_active_users).push(user);
      if (!active) deactivateEverywhere(state, personId, options);
    }
  },

  realm_bot(state, event) {
    if (!Array.isArray(state.realm_bots)) return;
    if (event.op === 'add') state.realm_bots.push(event.bot);
    else if (event.op === 'delete')
      state.realm_bots = state.realm_bots.filter((bot: any) => bot.user_id !== event.bot.user_id);
    else if (event.op === 'remove') {
      // Zulip 10.2 no longer sends it (deactivation is an update with is_active); older servers did.
      for (const bot of state.realm_bots) if (bot.user_id === event.bot.user_id) bot.is_active = false;
    } else {
      for (const bot of state.realm_bots) {
        if (bot.user_id !== event.bot.user_id) continue;
        if ('owner_id' in event.bot) bot.owner_id = event.bot.owner_id;
        else Object.assign(bot, event.bot);
      }
    }
  },

  stream(state, event, options) {
    const { server } = options;
    if (event.op === 'create') {
      for (const stream of event.streams) {
        const data = structuredClone(stream);
        if (includeSubscribers(options)) data.subscribers = [];
        const previous = server.unsubscribedEntry(stream.stream_id);
        if (previous) {
          const entry = { ...previous, ...data };
          if (includeSubscribers(options)) entry.subscribers = [];
          state.unsubscribed.push(entry);
        } else {
          state.never_subscribed.push(data);
        }
        if (Array.isArray(state.streams)) state.streams.push(stream);
      }
      const byName = (a: any, b: any) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
      state.unsubscribed.sort(byName);
      state.never_subscribed.sort(byName);
      if (Array.isArray(state.streams)) state.streams.sort(byName);
    } else if (event.op === 'delete') {
      const deleted = new Set((event.streams as { stream_id: number }[]).map((stream) => stream.stream_id));
      if (Array.isArray(state.streams)) state.streams = state.streams.filter((s: any) => !deleted.has(s.stream_id));
      if (capability(options, 'archived_channels')) {
        for (const list of channelLists(state)) {
          for (const entry of list) {
            if (!deleted.has(entry.stream_id)) continue;
            entry.is_archived = true;
            if (list !== state.subscriptions) entry.first_message_id = server.firstMessageId(entry.stream_id);
          }
        }
      } else {
        for (const key of ['subscriptions', 'unsubscribed', 'never_subscribed']) {
          if (Array.isArray(state[key])) state[key] = state[key].filter((entry: any) => !deleted.has(entry.stream_id));
        }
      }
    } else if (event.op === 'update') {
      const applyTo = (entry: Record<string, any>, onlyKnown: boolean) => {
        if (onlyKnown && !(event.property in entry)) return;
        entry[event.property] = event.value;
        if (event.property === 'description') entry.rendered_description = event.rendered_description;
        if (event.history_public_to_subscribers !== undefined && event.history_public_to_subscribers !== null)
          entry.history_public_to_subscribers = event.history_public_to_subscribers;
        if (event.is_web_public !== undefined && event.is_web_public !== null)
          entry.is_web_public = event.is_web_public;
      };
      const matches = (entry: Record<string, any>) => entry.stream_id === event.stream_id;
      for (const list of channelLists(state)) for (const entry of list) if (matches(entry)) applyTo(entry, false);
      if (Array.isArray(state.streams)) for (const entry of state.streams) if (matches(entry)) applyTo(entry, true);
      if (event.property === 'is_muted' || event.property === 'in_home_view') refreshUnread(state);
    }
  },

  default_streams(state, event) {
    state.realm_default_streams = event.default_streams;
  },

  default_stream_groups(state, event) {
    state.realm_default_stream_groups = event.default_stream_groups;
  },

  realm(state, event, { server }) {
    if (event.op === 'update') {
      state[`realm_${event.property}`] = event.value;
      if (event.property === 'jitsi_server_url') state.jitsi_server_url = event.value ?? state.server_jitsi_server_url;
      if (event.property === 'message_edit_history_visibility_policy')
        state.realm_allow_edit_history = event.value !== 'none';
      return;
    }
    if (event.op !== 'update_dict') return; // deactivated: the client reloads
    for (const [key, value] of Object.entries<any>(event.data)) {
      if (key === 'max_file_upload_size_mib') {
        state.max_file_upload_size_mib = value;
        continue;
      }
      state[`realm_${key}`] = value;
      if (key === 'authentication_methods') {
        state.realm_password_auth_enabled = !!(value.Email?.enabled || value.LDAP?.enabled);
        state.realm_email_auth_enabled = !!value.Email?.enabled;
      }
      if (key === 'plan_type') state.zulip_plan_is_not_limited = value !== 1;
      // The legacy policies register derives from group settings (Zulip recomputes them from the database).
      const policy = DERIVED_REALM_POLICIES[key];
      if (policy && policy in state) state[policy] = server.realmPolicy(policy);
    }
    // Zulip recomputes what the user may do from the new group settings (a database read).
    const permissions = server.permissions();
    for (const key of Object.keys(permissions)) if (key in state) state[key] = permissions[key];
  },

  realm_user_settings_defaults(state, event) {
    state.realm_user_settings_defaults[event.property] = event.value;
  },

  subscription(state, event, options) {
    const { userId } = options;
    if (event.op === 'add') {
      const added = new Set((event.subscriptions as { stream_id: number }[]).map((sub) => sub.stream_id));
      const existing = new Set(state.subscriptions.map((sub: any) => sub.stream_id));
      for (const sub of event.subscriptions) {
        if (existing.has(sub.stream_id)) continue;
        const entry = structuredClone(sub);
        if (!includeSubscribers(options)) delete entry.subscribers;
        state.subscriptions.push(entry);
      }
      state.unsubscribed = state.unsubscribed.filter((sub: any) => !added.has(sub.stream_id));
      state.never_subscribed = state.never_subscribed.filter((sub: any) => !added.has(sub.stream_id));
      refreshUnread(state);
    } else if (event.op === 'remove') {
      const removed = new Set((event.subscriptions as { stream_id: number }[]).map((sub) => sub.stream_id));
      const leaving = state.subscriptions.filter((sub: any) => removed.has(sub.stream_id));
      if (includeSubscribers(options))
        for (const sub of leaving) sub.subscribers = sub.subscribers.filter((id: number) => id !== userId);
      state.unsubscribed.push(...leaving);
      state.subscriptions = state.subscriptions.filter((sub: any) => !removed.has(sub.stream_id));
      // A channel left: its unread messages are no longer the user's (a client drops them).
      withUnread(state, (raw) => {
        for (const [id, entry] of raw.byId)
          if (entry.kind === 'stream' && removed.has(entry.stream_id!)) raw.byId.delete(id);
      });
    } else if (event.op === 'update') {
      for (const sub of state.subscriptions) if (sub.stream_id === event.stream_id) sub[event.property] = event.value;
      if (event.property === 'is_muted' || event.property === 'in_home_view') refreshUnread(state);
    } else if (event.op === 'peer_add' || event.op === 'peer_remove') {
      if (!includeSubscribers(options)) return;
      const streamIds = new Set<number>(event.stream_ids);
      const userIds = new Set<number>(event.user_ids);
      for (const list of channelLists(state)) {
        for (const sub of list) {
          if (!streamIds.has(sub.stream_id) || !Array.isArray(sub.subscribers)) continue;
          const subscribers = new Set<number>(sub.subscribers);
          for (const id of userIds) {
            if (event.op === 'peer_add') subscribers.add(id);
            else subscribers.delete(id);
          }
          sub.subscribers = [...subscribers].sort((a, b) => a - b);
        }
      }
    }
  },

  presence(state, event, { register, server }) {
    const key = register.slim_presence ? String(event.user_id) : event.email;
    const entry = server.presenceOf(event.user_id);
    if (entry === undefined) delete state.presences[key];
    else state.presences[key] = entry;
  },

  realm_domains(state, event) {
    if (event.op === 'add') state.realm_domains.push(event.realm_domain);
    else if (event.op === 'change') {
      for (const domain of state.realm_domains)
        if (domain.domain === event.realm_domain.domain) domain.allow_subdomains = event.realm_domain.allow_subdomains;
    } else state.realm_domains = state.realm_domains.filter((domain: any) => domain.domain !== event.domain);
  },

  realm_emoji(state, event) {
    state.realm_emoji = event.realm_emoji;
  },

  alert_words(state, event) {
    state.alert_words = event.alert_words;
  },

  muted_topics(state, event) {
    state.muted_topics = event.muted_topics;
  },

  muted_users(state, event) {
    state.muted_users = event.muted_users;
  },

  realm_linkifiers(state, event, options) {
    if (capability(options, 'linkifier_url_template')) state.realm_linkifiers = event.realm_linkifiers;
  },

  realm_filters(state, event) {
    state.realm_filters = event.realm_filters;
  },

  realm_playgrounds(state, event) {
    state.realm_playgrounds = event.realm_playgrounds;
  },

  update_display_settings(state, event) {
    state[event.setting_name] = event.setting;
  },

  update_global_notifications(state, event) {
    state[event.notification_name] = event.setting;
  },

  user_settings(state, event) {
    // Legacy top-level copies exist only for clients without user_settings_object.
    if (event.property in state) state[event.property] = event.value;
    if (state.user_settings) state.user_settings[event.property] = event.value;
  },

  user_group(state, event, options) {
    const groups = state.realm_user_groups as Record<string, any>[];
    const group = groups.find((entry) => entry.id === event.group_id);
    const ascending = (a: number, b: number) => a - b;
    switch (event.op) {
      case 'add':
        groups.push(event.group);
        groups.sort((a, b) => a.id - b.id);
        break;
      case 'update':
        if (group) Object.assign(group, event.data);
        if (group && event.data.deactivated === true && !capability(options, 'include_deactivated_groups'))
          state.realm_user_groups = groups.filter((entry) => entry.id !== event.group_id);
        break;
      case 'add_members':
        if (group) group.members = [...group.members, ...event.user_ids].sort(ascending);
        break;
      case 'remove_members':
        if (group) group.members = group.members.filter((id: number) => !event.user_ids.includes(id));
        break;
      case 'add_subgroups':
        if (group)
          group.direct_subgroup_ids = [...group.direct_subgroup_ids, ...event.direct_subgroup_ids].sort(ascending);
        break;
      case 'remove_subgroups':
        if (group)
          group.direct_subgroup_ids = group.direct_subgroup_ids.filter(
            (id: number) => !event.direct_subgroup_ids.includes(id),
          );
        break;
      case 'remove':
        state.realm_user_groups = groups.filter((entry) => entry.id !== event.group_id);
        break;
    }
  },

  user_status(state, event) {
    const key = String(event.user_id);
    const status: Record<string, unknown> = { ...(state.user_status[key] ?? {}) };
    if (event.away !== undefined && event.away !== null) {
      if (event.away) status.away = true;
      else delete status.away;
    }
    if (event.status_text !== undefined && event.status_text !== null) {
      if (event.status_text === '') delete status.status_text;
      else status.status_text = event.status_text;
    }
    if (event.emoji_name !== undefined && event.emoji_name !== null) {
      for (const field of ['emoji_name', 'emoji_code', 'reaction_type']) {
        if (event[field] === undefined || event[field] === null) continue;
        if (event.emoji_name === '' || event[field] === '') delete status[field];
        else status[field] = event[field];
      }
    }
    if (Object.keys(status).length === 0) delete state.user_status[key];
    else state.user_status[key] = status;
  },

  user_topic(state, event) {
    const topics = state.user_topics as Record<string, any>[];
    const index = topics.findIndex(
      (entry) =>
        entry.stream_id === event.stream_id &&
        String(entry.topic_name).toLowerCase() === String(event.topic_name).toLowerCase(),
    );
    if (index >= 0) topics.splice(index, 1);
    if (event.visibility_policy !== 0) {
      const { stream_id, topic_name, visibility_policy, last_updated } = event;
      topics.push({ stream_id, topic_name, visibility_policy, last_updated });
    }
    refreshUnread(state);
  },

  has_zoom_token(state, event) {
    state.has_zoom_token = event.value;
  },

  // Newer than Zulip 10.2 (feature levels up to 416): as Zulip's later apply_event.
  navigation_view(state, event) {
    const views = state.navigation_views as Record<string, any>[];
    if (event.op === 'add') views.push(event.navigation_view);
    else if (event.op === 'update') {
      const view = views.find((entry) => entry.fragment === event.fragment);
      if (view) Object.assign(view, event.data);
    } else state.navigation_views = views.filter((entry) => entry.fragment !== event.fragment);
  },

  channel_folder(state, event) {
    const folders = state.channel_folders as Record<string, any>[];
    if (event.op === 'add') folders.push(event.channel_folder);
    else if (event.op === 'update') {
      const folder = folders.find((entry) => entry.id === event.channel_folder_id);
      if (folder) Object.assign(folder, event.data);
    } else if (event.op === 'reorder') {
      const order: number[] = event.order;
      for (const folder of folders) {
        const position = order.indexOf(folder.id);
        if (position >= 0) folder.order = position;
      }
      folders.sort((a, b) => a.order - b.order);
    }
  },
};

const isGravatar = (url: unknown) => typeof url === 'string' && url.startsWith('https://secure.gravatar.com/');

function removeSubscriber(state: State, userId: number) {
  for (const list of channelLists(state)) {
    for (const sub of list) {
      if (Array.isArray(sub.subscribers)) sub.subscribers = sub.subscribers.filter((id: number) => id !== userId);
    }
  }
}

/** A deactivated user leaves every channel's subscribers, every group and every group setting's direct members. */
function deactivateEverywhere(state: State, userId: number, options: ApplyOptions) {
  if (includeSubscribers(options)) removeSubscriber(state, userId);
  const withoutUser = (setting: any) => {
    if (setting && typeof setting === 'object' && Array.isArray(setting.direct_members))
      setting.direct_members = setting.direct_members.filter((id: number) => id !== userId);
  };
  for (const group of state.realm_user_groups ?? []) {
    group.members = group.members.filter((id: number) => id !== userId);
    for (const value of Object.values(group)) withoutUser(value);
  }
  for (const [key, value] of Object.entries(state))
    if (key.startsWith('realm_') && key.endsWith('_group')) withoutUser(value);
}
