// The events producers send (Zulip's event types, with their `op` where Zulip has one). The
// shapes beyond `type`/`op` stay loose: each event's fields are Zulip's, checked by the API
// tests against zulip.yaml, not here.

type Fields = Record<string, unknown>;
type WithOp<T extends string, Op extends string> = { type: T; op: Op } & Fields;
type NoOp<T extends string> = { type: T; op?: never } & Fields;

export type ZulipEvent =
  // messages
  | NoOp<'message'>
  | NoOp<'update_message'>
  | NoOp<'delete_message'>
  | WithOp<'update_message_flags', 'add' | 'remove'>
  | WithOp<'reaction', 'add' | 'remove'>
  | NoOp<'submessage'>
  // (two members: a member whose `type` is a union is not Extract-ed by one of its types, so a
  // literal typing event's ops came out as never)
  | WithOp<'typing', 'start' | 'stop'>
  | WithOp<'typing_edit_message', 'start' | 'stop'>
  | WithOp<'drafts', 'add' | 'update' | 'remove'>
  | WithOp<'attachment', 'add' | 'update' | 'remove'>
  | WithOp<'scheduled_messages', 'add' | 'update' | 'remove'>
  // channels
  | WithOp<'stream', 'create' | 'delete' | 'update'>
  | WithOp<'subscription', 'add' | 'remove' | 'update' | 'peer_add' | 'peer_remove'>
  | WithOp<'channel_folder', 'add' | 'update' | 'reorder'>
  | NoOp<'default_streams'>
  | NoOp<'muted_topics'>
  | NoOp<'user_topic'>
  // users and the realm
  | WithOp<'realm_user', 'add' | 'update' | 'remove'>
  | WithOp<'realm_bot', 'add' | 'update' | 'remove' | 'delete'>
  | WithOp<
      'user_group',
      'add' | 'update' | 'add_members' | 'remove_members' | 'add_subgroups' | 'remove_subgroups' | 'remove'
    >
  | WithOp<'user_settings', 'update'>
  | NoOp<'update_global_notifications'>
  | NoOp<'update_display_settings'>
  | WithOp<'navigation_view', 'add' | 'update' | 'remove'>
  | NoOp<'alert_words'>
  | NoOp<'muted_users'>
  | NoOp<'user_status'>
  | WithOp<'saved_snippets', 'add' | 'update' | 'remove'>
  | NoOp<'realm_playgrounds'>
  | WithOp<'realm_user_settings_defaults', 'update'>
  | WithOp<'realm', 'update' | 'update_dict'>
  | WithOp<'realm_domains', 'add' | 'change' | 'remove'>
  | NoOp<'onboarding_steps'>
  | NoOp<'presence'>
  | NoOp<'invites_changed'>
  | WithOp<'realm_emoji', 'update'>
  | NoOp<'realm_export'>
  | NoOp<'realm_linkifiers'>
  | NoOp<'custom_profile_fields'>;

export type ZulipEventType = ZulipEvent['type'];

/** The member of ZulipEvent with type T: give an event built in a variable this type to have its `type`/`op` checked. */
export type ZulipEventOf<T extends ZulipEventType> = Extract<ZulipEvent, { type: T }>;

/** The ops of one event type (undefined for a type without ops). */
export type OpsOf<T extends ZulipEventType> = ZulipEventOf<T>['op'];

/** What a producer may pass before the check: any object with a `type`. */
export type EventInput = { type: string };

/**
 * The compiler's check of an event a producer sends, as far as it knows the event: a literal
 * `type` must be one of ZulipEvent's, a literal `op` one of that type's. A `type` or `op` the
 * compiler sees only as `string` (an event built in a variable typed `{ type: string }`) cannot
 * be checked and passes: give such a variable the type ZulipEventOf<'…'> (or ZulipEvent) to have it checked.
 * Used as `event: E & Checked<E>` with `<const E extends EventInput>`, so literals stay literal.
 */
export type Checked<E extends EventInput> = string extends E['type']
  ? unknown
  : E['type'] extends ZulipEventType
    ? E extends { op: infer Op }
      ? string extends Op
        ? unknown
        : { op: OpsOf<E['type']> }
      : unknown
    : { type: ZulipEventType };
