// Every event Teamchat sends, declared field by field (docs/adr/0008): zod schemas, from which
// the TypeScript types producers must satisfy are inferred (event-types.ts), and against which
// the test kit checks every event a test captures or polls. Written from zulip.yaml's `GET
// /events` and Zulip's zerver/lib/event_types.py, with the fields we send beside them.
//
// Objects are strict: a field not declared here is an error, in the compiler as in the tests.
// Fields named with a leading "_" are internal (the event tier strips them before a client
// sees the event): they are declared too, optional.

import { z } from 'zod';

const obj = <S extends z.ZodRawShape>(shape: S) => z.object(shape).strict();
const int = z.number().int();
const ints = z.array(int);
const str = z.string();
const bool = z.boolean();

/** A group-setting value: a group's id, or an anonymous group. */
const groupSettingValue = z.union([int, obj({ direct_members: ints, direct_subgroups: ints })]);

/**
 * The `value` of a setting's update event (realm, channel, subscription, personal settings and
 * their defaults): each property's own type is the API's, one of these.
 */
const settingValue = z.union([str, z.number(), bool, z.null(), groupSettingValue, ints, z.array(str)]);
export type EventSettingValue = z.infer<typeof settingValue>;

// ---------------------------------------------------------------------------------------------
// messages

const displayRecipientUser = obj({ id: int, email: str, full_name: str, is_mirror_dummy: bool });
const reaction = obj({ emoji_name: str, emoji_code: str, reaction_type: str, user_id: int });
const submessage = obj({ msg_type: str, content: str, message_id: int, sender_id: int, id: int });
const editHistoryEntry = obj({
  timestamp: int,
  user_id: int.nullable(),
  prev_content: str.optional(),
  prev_rendered_content: str.optional(),
  prev_rendered_content_version: int.nullable().optional(),
  prev_topic: str.optional(),
  topic: str.optional(),
  prev_stream: int.optional(),
  stream: int.optional(),
});

const message = obj({
  id: int,
  sender_id: int,
  sender_email: str,
  sender_full_name: str,
  sender_realm_str: str,
  avatar_url: str.nullable(),
  /** The sender's avatar comes from the external provider (the client_gravatar rewrite). */
  _external_avatar: bool.optional(),
  client: str,
  content: str,
  /** Producers send both forms; each queue gets the one its apply_markdown asks for. */
  rendered_content: str.optional(),
  content_type: z.enum(['text/html', 'text/x-markdown']).optional(),
  is_me_message: bool,
  recipient_id: int,
  type: z.enum(['stream', 'private']),
  display_recipient: z.union([str, z.array(displayRecipientUser)]),
  stream_id: int.optional(),
  subject: str,
  topic_links: z.array(obj({ text: str, url: str })),
  timestamp: int,
  reactions: z.array(reaction),
  submessages: z.array(submessage),
  edit_history: z.array(editHistoryEntry).optional(),
  last_edit_timestamp: int.optional(),
  last_moved_timestamp: int.optional(),
});

const messageDetail = obj({
  type: z.enum(['stream', 'private']),
  mentioned: bool.optional(),
  user_ids: ints.optional(),
  stream_id: int.optional(),
  topic: str.optional(),
  unmuted_stream_msg: bool.optional(),
});

const scheduledMessage = z.union([
  obj({
    scheduled_message_id: int,
    type: z.literal('stream'),
    to: int,
    topic: str,
    content: str,
    rendered_content: str,
    scheduled_delivery_timestamp: int,
    failed: bool,
  }),
  obj({
    scheduled_message_id: int,
    type: z.literal('private'),
    to: ints,
    content: str,
    rendered_content: str,
    scheduled_delivery_timestamp: int,
    failed: bool,
  }),
]);

const draft = obj({
  id: int,
  type: z.enum(['stream', 'private', '']),
  to: ints,
  topic: str,
  content: str,
  timestamp: int,
});

const attachment = obj({
  id: int,
  name: str,
  path_id: str,
  size: int,
  create_time: int,
  messages: z.array(obj({ id: int, date_sent: int })),
});

// ---------------------------------------------------------------------------------------------
// channels

const channelGroupSettings = {
  can_add_subscribers_group: groupSettingValue.nullable(),
  can_remove_subscribers_group: groupSettingValue.nullable(),
  can_administer_channel_group: groupSettingValue.nullable(),
  can_send_message_group: groupSettingValue.nullable(),
  can_subscribe_group: groupSettingValue.nullable(),
  can_delete_any_message_group: groupSettingValue.nullable(),
  can_delete_own_message_group: groupSettingValue.nullable(),
};

const streamFields = {
  stream_id: int,
  name: str,
  is_archived: bool,
  description: str,
  date_created: int,
  creator_id: int.nullable(),
  invite_only: bool,
  rendered_description: str,
  is_web_public: bool,
  stream_post_policy: int,
  message_retention_days: int.nullable(),
  history_public_to_subscribers: bool,
  first_message_id: int.nullable(),
  is_recently_active: bool,
  is_announcement_only: bool,
  stream_weekly_traffic: int.nullable(),
  folder_id: int.nullable(),
  topics_policy: str,
  ...channelGroupSettings,
};

const stream = obj(streamFields);

const subscription = obj({
  ...streamFields,
  color: str,
  pin_to_top: bool,
  is_muted: bool,
  in_home_view: bool,
  desktop_notifications: bool.nullable(),
  audible_notifications: bool.nullable(),
  push_notifications: bool.nullable(),
  email_notifications: bool.nullable(),
  wildcard_mentions_notify: bool.nullable(),
  email_address: str.optional(),
  subscribers: ints.optional(),
  partial_subscribers: ints.optional(),
  subscriber_count: int.optional(),
});

const channelFolder = obj({
  id: int,
  name: str,
  description: str,
  rendered_description: str,
  order: int,
  date_created: int.nullable(),
  creator_id: int.nullable(),
  is_archived: bool,
});

// ---------------------------------------------------------------------------------------------
// users and the realm

const profileData = z.record(obj({ value: str, rendered_value: str.optional() }));

const person = obj({
  user_id: int,
  email: str,
  avatar_url: str.nullable(),
  avatar_version: int,
  full_name: str,
  is_admin: bool,
  is_owner: bool,
  is_guest: bool,
  is_bot: bool,
  is_billing_admin: bool.optional(),
  role: int,
  is_active: bool,
  date_joined: str,
  delivery_email: str.nullable().optional(),
  timezone: str,
  profile_data: profileData.optional(),
  bot_type: int.nullable().optional(),
  bot_owner_id: int.nullable().optional(),
  is_imported_stub: bool.optional(),
});

/** A realm_user update: the user and the fields that changed. */
const personUpdate = obj({
  user_id: int,
  full_name: str.optional(),
  email: str.optional(),
  new_email: str.optional(),
  delivery_email: str.nullable().optional(),
  timezone: str.optional(),
  avatar_source: str.optional(),
  avatar_url: str.nullable().optional(),
  avatar_url_medium: str.nullable().optional(),
  avatar_version: int.optional(),
  role: int.optional(),
  is_billing_admin: bool.optional(),
  bot_owner_id: int.nullable().optional(),
  is_active: bool.optional(),
  custom_profile_field: obj({ id: int, value: str.nullable(), rendered_value: str.optional() }).optional(),
});

const botService = z.union([
  obj({ base_url: str, interface: int, token: str }),
  obj({ config_data: z.record(str), service_name: str }),
]);

const bot = obj({
  email: str,
  user_id: int,
  full_name: str,
  bot_type: int.nullable(),
  is_active: bool,
  api_key: str,
  default_sending_stream: str.nullable(),
  default_events_register_stream: str.nullable(),
  default_all_public_streams: bool,
  owner_id: int.nullable(),
  avatar_url: str,
  services: z.array(botService),
});

const botUpdate = obj({
  user_id: int,
  full_name: str.optional(),
  is_active: bool.optional(),
  api_key: str.optional(),
  default_sending_stream: str.nullable().optional(),
  default_events_register_stream: str.nullable().optional(),
  default_all_public_streams: bool.optional(),
  owner_id: int.nullable().optional(),
  avatar_url: str.optional(),
  services: z.array(botService).optional(),
});

const userGroupSettings = {
  can_add_members_group: groupSettingValue,
  can_join_group: groupSettingValue,
  can_leave_group: groupSettingValue,
  can_manage_group: groupSettingValue,
  can_mention_group: groupSettingValue,
  can_remove_members_group: groupSettingValue,
};

const userGroup = obj({
  id: int,
  name: str,
  description: str,
  members: ints,
  direct_subgroup_ids: ints,
  creator_id: int.nullable(),
  date_created: int.nullable(),
  is_system_group: bool,
  deactivated: bool,
  ...userGroupSettings,
});

/** A user_group update's `data`: the fields that changed. */
const userGroupData = obj({ name: str, description: str, deactivated: bool, ...userGroupSettings }).partial();

const navigationView = obj({ fragment: str, is_pinned: bool, name: str.nullable() });
const savedSnippet = obj({ id: int, title: str, content: str, date_created: int });
const realmDomain = obj({ domain: str, allow_subdomains: bool });
const presenceClient = obj({ client: str, status: z.enum(['active', 'idle']), timestamp: int, pushable: bool });

const realmEmoji = obj({
  id: str,
  name: str,
  source_url: str,
  still_url: str.nullable().optional(),
  deactivated: bool,
  author_id: int.nullable(),
});

const realmExport = obj({
  id: int,
  acting_user_id: int,
  export_time: z.number(),
  deleted_timestamp: z.number().nullable(),
  failed_timestamp: z.number().nullable(),
  pending: bool,
  export_url: str.nullable(),
  export_type: int,
});

const linkifier = obj({
  id: int,
  pattern: str,
  url_template: str,
  example_url: str.nullable().optional(),
  reverse_template: str.nullable().optional(),
  alternative_url_templates: z.array(str).optional(),
});

const profileField = obj({
  id: int,
  type: int,
  order: int,
  name: str,
  hint: str,
  field_data: str,
  display_in_profile_summary: bool.optional(),
  required: bool,
  editable_by_user: bool,
});

// ---------------------------------------------------------------------------------------------
// the events

/**
 * The fields every event may carry beside its own: `id` is the queue's (never a producer's),
 * `flags` and `local_message_id` are a recipient's own (merged by the event tier).
 */
const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  obj({ type: z.literal(type), ...shape, id: int.optional() });
const evOp = <T extends string, O extends string, S extends z.ZodRawShape>(type: T, op: O, shape: S) =>
  obj({ type: z.literal(type), op: z.literal(op), ...shape, id: int.optional() });

const updateMessage = ev('update_message', {
  user_id: int.nullable(),
  edit_timestamp: int,
  message_id: int,
  message_ids: ints,
  /** A recipient's own (the event tier merges them in). */
  flags: z.array(str).optional(),
  rendering_only: bool,
  stream_name: str.optional(),
  stream_id: int.optional(),
  new_stream_id: int.optional(),
  propagate_mode: z.enum(['change_one', 'change_later', 'change_all']).optional(),
  orig_subject: str.optional(),
  subject: str.optional(),
  topic_links: z.array(obj({ text: str, url: str })).optional(),
  orig_content: str.optional(),
  orig_rendered_content: str.optional(),
  content: str.optional(),
  rendered_content: str.optional(),
  is_me_message: bool.optional(),
});

/** A reaction added or removed: the same fields either way. */
const reactionChange = {
  message_id: int,
  user_id: int,
  emoji_name: str,
  emoji_code: str,
  reaction_type: str,
  user: obj({ user_id: int, email: str, full_name: str }).optional(),
};

const typingUser = obj({ user_id: int, email: str });
const addRemove = z.enum(['add', 'remove']);
const startStop = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  ev(type, { op: z.enum(['start', 'stop']), ...shape });

/** Every event type Teamchat sends, by type, each a union of its ops' shapes. */
export const EVENT_SCHEMAS = {
  // messages
  message: ev('message', { message, flags: z.array(str).optional(), local_message_id: str.optional() }),
  update_message: updateMessage,
  delete_message: ev('delete_message', {
    message_type: z.enum(['stream', 'private']),
    message_ids: ints.optional(),
    /** Clients without bulk_message_deletion get one event per message. */
    message_id: int.optional(),
    stream_id: int.optional(),
    topic: str.optional(),
  }),
  update_message_flags: ev('update_message_flags', {
    op: addRemove,
    /** The legacy name of `op`, the same value. */
    operation: addRemove,
    flag: str,
    messages: ints,
    all: bool,
    message_details: z.record(messageDetail).optional(),
  }),
  reaction: z.union([evOp('reaction', 'add', reactionChange), evOp('reaction', 'remove', reactionChange)]),
  submessage: ev('submessage', { msg_type: str, content: str, message_id: int, sender_id: int, submessage_id: int }),
  typing: startStop('typing', {
    message_type: z.enum(['direct', 'stream']),
    sender: typingUser,
    recipients: z.array(typingUser).optional(),
    stream_id: int.optional(),
    topic: str.optional(),
  }),
  typing_edit_message: startStop('typing_edit_message', {
    sender_id: int,
    message_id: int,
    recipient: z.union([
      obj({ type: z.literal('channel'), channel_id: int, topic: str }),
      obj({ type: z.literal('direct'), user_ids: ints }),
    ]),
  }),
  drafts: z.union([
    evOp('drafts', 'add', { drafts: z.array(draft) }),
    evOp('drafts', 'update', { draft }),
    evOp('drafts', 'remove', { draft_id: int }),
  ]),
  attachment: z.union([
    evOp('attachment', 'add', { attachment, upload_space_used: int }),
    evOp('attachment', 'update', { attachment, upload_space_used: int }),
    evOp('attachment', 'remove', { attachment: obj({ id: int }), upload_space_used: int }),
  ]),
  scheduled_messages: z.union([
    evOp('scheduled_messages', 'add', { scheduled_messages: z.array(scheduledMessage) }),
    evOp('scheduled_messages', 'update', { scheduled_message: scheduledMessage }),
    evOp('scheduled_messages', 'remove', { scheduled_message_id: int }),
  ]),
  // channels
  stream: z.union([
    evOp('stream', 'create', { streams: z.array(stream) }),
    evOp('stream', 'delete', { streams: z.array(obj({ stream_id: int })), stream_ids: ints }),
    evOp('stream', 'update', {
      stream_id: int,
      name: str,
      property: str,
      value: settingValue,
      rendered_description: str.optional(),
      history_public_to_subscribers: bool.optional(),
      is_web_public: bool.optional(),
    }),
  ]),
  subscription: z.union([
    evOp('subscription', 'add', { subscriptions: z.array(subscription) }),
    evOp('subscription', 'remove', { subscriptions: z.array(obj({ name: str, stream_id: int })) }),
    evOp('subscription', 'update', { stream_id: int, property: str, value: settingValue }),
    evOp('subscription', 'peer_add', { stream_ids: ints, user_ids: ints }),
    evOp('subscription', 'peer_remove', { stream_ids: ints, user_ids: ints }),
  ]),
  channel_folder: z.union([
    evOp('channel_folder', 'add', { channel_folder: channelFolder }),
    evOp('channel_folder', 'update', {
      channel_folder_id: int,
      data: obj({
        name: str.optional(),
        description: str.optional(),
        rendered_description: str.optional(),
        is_archived: bool.optional(),
      }),
    }),
    evOp('channel_folder', 'reorder', { order: ints }),
  ]),
  default_streams: ev('default_streams', { default_streams: ints }),
  muted_topics: ev('muted_topics', { muted_topics: z.array(z.tuple([str, str, int])) }),
  user_topic: ev('user_topic', { stream_id: int, topic_name: str, last_updated: int, visibility_policy: int }),
  // users and the realm
  realm_user: z.union([
    evOp('realm_user', 'add', {
      person,
      /** For the event tier: a user the recipient cannot access (announced only to clients that need the full list). */
      inaccessible_user: bool.optional(),
    }),
    evOp('realm_user', 'update', { person: personUpdate }),
    evOp('realm_user', 'remove', { person: obj({ user_id: int, full_name: str }) }),
  ]),
  realm_bot: z.union([
    evOp('realm_bot', 'add', { bot }),
    evOp('realm_bot', 'update', { bot: botUpdate }),
    evOp('realm_bot', 'remove', { bot: obj({ user_id: int, full_name: str }) }),
    evOp('realm_bot', 'delete', { bot: obj({ user_id: int }) }),
  ]),
  user_group: z.union([
    evOp('user_group', 'add', { group: userGroup }),
    evOp('user_group', 'update', {
      group_id: int,
      data: userGroupData,
      /** For the event tier: the group is deactivated (the update goes only to clients that keep such groups). */
      deactivated: bool.optional(),
    }),
    evOp('user_group', 'add_members', { group_id: int, user_ids: ints }),
    evOp('user_group', 'remove_members', { group_id: int, user_ids: ints }),
    evOp('user_group', 'add_subgroups', { group_id: int, direct_subgroup_ids: ints }),
    evOp('user_group', 'remove_subgroups', { group_id: int, direct_subgroup_ids: ints }),
    evOp('user_group', 'remove', { group_id: int }),
  ]),
  user_settings: evOp('user_settings', 'update', { property: str, value: settingValue, language_name: str.optional() }),
  update_global_notifications: ev('update_global_notifications', {
    user: str,
    notification_name: str,
    setting: settingValue,
  }),
  update_display_settings: ev('update_display_settings', {
    user: str,
    setting_name: str,
    setting: settingValue,
    language_name: str.optional(),
  }),
  navigation_view: z.union([
    evOp('navigation_view', 'add', { navigation_view: navigationView }),
    evOp('navigation_view', 'update', {
      fragment: str,
      data: obj({ is_pinned: bool.optional(), name: str.nullable().optional() }),
    }),
    evOp('navigation_view', 'remove', { fragment: str }),
  ]),
  alert_words: ev('alert_words', { alert_words: z.array(str) }),
  muted_users: ev('muted_users', { muted_users: z.array(obj({ id: int, timestamp: int })) }),
  user_status: ev('user_status', {
    user_id: int,
    away: bool.optional(),
    status_text: str.optional(),
    emoji_name: str.optional(),
    emoji_code: str.optional(),
    reaction_type: str.optional(),
  }),
  saved_snippets: z.union([
    evOp('saved_snippets', 'add', { saved_snippet: savedSnippet }),
    evOp('saved_snippets', 'update', { saved_snippet: savedSnippet }),
    evOp('saved_snippets', 'remove', { saved_snippet_id: int }),
  ]),
  realm_playgrounds: ev('realm_playgrounds', {
    realm_playgrounds: z.array(obj({ id: int, name: str, pygments_language: str, url_template: str })),
  }),
  realm_user_settings_defaults: evOp('realm_user_settings_defaults', 'update', { property: str, value: settingValue }),
  realm: z.union([
    evOp('realm', 'update', { property: str, value: settingValue, extra_data: z.record(settingValue).optional() }),
    evOp('realm', 'update_dict', { property: z.literal('default'), data: z.record(settingValue) }),
    evOp('realm', 'update_dict', { property: z.literal('icon'), data: obj({ icon_url: str, icon_source: str }) }),
    evOp('realm', 'update_dict', { property: z.literal('logo'), data: obj({ logo_url: str, logo_source: str }) }),
    evOp('realm', 'update_dict', {
      property: z.literal('night_logo'),
      data: obj({ night_logo_url: str, night_logo_source: str }),
    }),
  ]),
  realm_domains: z.union([
    evOp('realm_domains', 'add', { realm_domain: realmDomain }),
    evOp('realm_domains', 'change', { realm_domain: realmDomain }),
    evOp('realm_domains', 'remove', { domain: str }),
  ]),
  onboarding_steps: ev('onboarding_steps', { onboarding_steps: z.array(obj({ type: str, name: str })) }),
  presence: ev('presence', {
    user_id: int,
    /** Left out for slim_presence clients. */
    email: str.optional(),
    server_timestamp: z.number(),
    presence: z.record(presenceClient),
  }),
  invites_changed: ev('invites_changed', {}),
  realm_emoji: evOp('realm_emoji', 'update', { realm_emoji: z.record(realmEmoji) }),
  realm_export: ev('realm_export', { exports: z.array(realmExport) }),
  realm_linkifiers: ev('realm_linkifiers', { realm_linkifiers: z.array(linkifier) }),
  custom_profile_fields: ev('custom_profile_fields', { fields: z.array(profileField) }),
} as const;

export type EventSchemas = typeof EVENT_SCHEMAS;

/** The heartbeat a parked poll gets (a queue's, never a producer's). */
export const heartbeatEvent = obj({ type: z.literal('heartbeat'), id: int });

/**
 * Checks one event against its type's schema: the problems found (none: it is as declared).
 * `received`: an event as a queue gives it (its `id`, a recipient's fields; heartbeats too).
 */
export function eventProblems(event: unknown): string[] {
  if (typeof event !== 'object' || event === null || !('type' in event)) return ['not an event object'];
  const type = (event as { type: unknown }).type;
  const schema: z.ZodTypeAny | undefined =
    type === 'heartbeat' ? heartbeatEvent : (EVENT_SCHEMAS as Record<string, z.ZodTypeAny>)[String(type)];
  if (schema === undefined) return [`event type ${JSON.stringify(type)} is not declared`];
  const result = schema.safeParse(event);
  if (result.success) return [];
  return result.error.issues.map((issue) =>
    issue.code === 'invalid_union'
      ? `${issue.path.join('.') || '(event)'}: matches none of its shapes: ${issue.unionErrors
          .map((error) => error.issues.map((inner) => `${inner.path.join('.')}: ${inner.message}`).join(', '))
          .join(' | ')}`
      : `${issue.path.join('.') || '(event)'}: ${issue.message}`,
  );
}
