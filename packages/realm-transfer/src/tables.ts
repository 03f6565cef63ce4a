// The one definition of Teamchat's organisation archive (docs/export-format.md): which tables an
// organisation owns, which of their rows each kind of export holds, which columns never leave,
// and which columns point at rows of other tables (so an import can give every row a new id).
// The worker's API export, `manage export-realm` and `manage import-realm` all read it.

import { RealmExportType } from '@teamchat/domain';

export const EXPORT_FORMAT = 'teamchat-realm-export';
/** Version 2 added `export_type` 0 (a complete backup) and the `files` section; readers of 1 archives read them unchanged. */
export const EXPORT_FORMAT_VERSION = 2;

/**
 * Export types: Zulip's public (1) and full-with-consent (2) exports of POST /export/realm, and
 * the server administrator's complete backup (0, `manage export-realm`, Zulip's `manage.py
 * export`): every row of every user, private messages included, and the uploaded files.
 */
export const ExportType = {
  COMPLETE: 0,
  PUBLIC: RealmExportType.PUBLIC,
  FULL_WITH_CONSENT: RealmExportType.FULL_WITH_CONSENT,
} as const;
export type ExportTypeValue = (typeof ExportType)[keyof typeof ExportType];

const COMPLETE = ExportType.COMPLETE;
const FULL = ExportType.FULL_WITH_CONSENT;

// Parameters of every table's query: $1 realm id, $2 export type, $3 consenting user ids.
const REALM_USERS = 'SELECT u.id FROM user_profile u WHERE u.realm_id = $1';
const PUBLIC_STREAMS = 'SELECT s.id FROM stream s WHERE s.realm_id = $1 AND NOT s.invite_only';
/** Messages of public channels; full exports add every message a consenting user received; a backup has them all. */
const EXPORTED_MESSAGES = `SELECT m.id FROM message m WHERE m.realm_id = $1 AND (
  $2::int = ${COMPLETE}
  OR m.stream_id IN (${PUBLIC_STREAMS})
  OR ($2::int = ${FULL} AND EXISTS (
    SELECT 1 FROM user_message um WHERE um.message_id = m.id AND um.user_profile_id = ANY($3::int[]))))`;
/** A user's private rows: full exports only of users who consented; a backup's of everyone. */
const PRIVATE_OF = (column: string) =>
  `t.${column} IN (${REALM_USERS}) AND ($2::int = ${COMPLETE} OR ($2::int = ${FULL} AND t.${column} = ANY($3::int[])))`;

/** A table whose rows get new ids on import, so other rows' references to them are rewritten. */
export type MappedTable =
  | 'realm'
  | 'user_profile'
  | 'user_group'
  | 'channel_folder'
  | 'stream'
  | 'custom_profile_field'
  | 'realm_emoji'
  | 'message'
  | 'attachment';

export interface TableSpec {
  table: string;
  /** Condition on `t` selecting the organisation's rows. */
  where: string;
  /** Unique ordering columns: rows are written in this order. */
  key: string[];
  /** Columns never exported (secrets). */
  omit?: string[];
  /**
   * Import: the table's `id` gets a new value from its sequence, in the archive's order (so
   * ordering by id is kept), and other rows' references are rewritten (`refs`).
   */
  mapped?: MappedTable;
  /** Import: the table has an `id` column nothing else points at: the database gives new ones. */
  freshId?: boolean;
  /** Import: integer columns (or integer-array columns) holding ids of a mapped table. */
  refs?: Record<string, MappedTable>;
  /** Import: not restored (documented in docs/export-format.md). */
  skipOnImport?: boolean;
}

/**
 * Every table the organisation owns, in import order (a row's references point at earlier
 * sections, except the few columns the import fills in afterwards: see import.ts). Not
 * exported: api_key, push_device_token (secrets), event_outbox, event_tier_epoch,
 * realm_state_version (the event tier's), invitation_email_sent (a rate counter).
 */
export const EXPORT_TABLES: TableSpec[] = [
  { table: 'realm', where: 't.id = $1', key: ['id'], mapped: 'realm' },
  {
    table: 'user_profile',
    where: 't.realm_id = $1',
    key: ['id'],
    // Zulip's exports keep no password, its imports make every user set one anew.
    omit: ['password_hash'],
    mapped: 'user_profile',
    refs: {
      realm_id: 'realm',
      bot_owner_id: 'user_profile',
      default_sending_stream_id: 'stream',
      default_events_register_stream_id: 'stream',
    },
  },
  {
    table: 'realm_emoji',
    where: 't.realm_id = $1',
    key: ['id'],
    mapped: 'realm_emoji',
    refs: { realm_id: 'realm', author_id: 'user_profile' },
  },
  {
    table: 'user_presence',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['user_profile_id'],
    refs: { user_profile_id: 'user_profile', realm_id: 'realm' },
  },
  {
    table: 'user_status',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['user_profile_id'],
    refs: { user_profile_id: 'user_profile' },
  },
  {
    table: 'onboarding_step',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile' },
  },
  // Bots' outgoing webhooks (their token sealed with this server's secret: useless elsewhere), configuration and storage.
  {
    table: 'service',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['id'],
    omit: ['sealed_token'],
    freshId: true,
    refs: { user_profile_id: 'user_profile' },
  },
  {
    table: 'bot_config_data',
    where: `t.bot_profile_id IN (${REALM_USERS})`,
    key: ['id'],
    freshId: true,
    refs: { bot_profile_id: 'user_profile' },
  },
  {
    table: 'bot_storage_data',
    where: `t.bot_profile_id IN (${REALM_USERS})`,
    key: ['id'],
    freshId: true,
    refs: { bot_profile_id: 'user_profile' },
  },
  {
    table: 'user_group',
    where: 't.realm_id = $1',
    key: ['id'],
    mapped: 'user_group',
    refs: { realm_id: 'realm', creator_id: 'user_profile' },
  },
  {
    table: 'user_group_membership',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['user_group_id', 'user_profile_id'],
    refs: { user_group_id: 'user_group', user_profile_id: 'user_profile' },
  },
  {
    table: 'group_group_membership',
    where: 't.supergroup_id IN (SELECT g.id FROM user_group g WHERE g.realm_id = $1)',
    key: ['supergroup_id', 'subgroup_id'],
    refs: { supergroup_id: 'user_group', subgroup_id: 'user_group' },
  },
  {
    table: 'channel_folder',
    where: 't.realm_id = $1',
    key: ['id'],
    mapped: 'channel_folder',
    refs: { realm_id: 'realm', creator_id: 'user_profile' },
  },
  {
    table: 'stream',
    where: 't.realm_id = $1',
    key: ['id'],
    mapped: 'stream',
    refs: { realm_id: 'realm', creator_id: 'user_profile', folder_id: 'channel_folder', first_message_id: 'message' },
  },
  // owner_id points at the realm, a channel or a group, by owner_kind (import.ts).
  {
    table: 'group_setting',
    where: 't.realm_id = $1',
    key: ['id'],
    freshId: true,
    refs: { realm_id: 'realm', group_id: 'user_group' },
  },
  {
    table: 'subscription',
    where: `t.user_profile_id IN (${REALM_USERS}) AND ($2::int = ${COMPLETE} OR t.stream_id IN (${PUBLIC_STREAMS})
      OR ($2::int = ${FULL} AND t.user_profile_id = ANY($3::int[])))`,
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile', stream_id: 'stream' },
  },
  {
    table: 'custom_profile_field',
    where: 't.realm_id = $1',
    key: ['id'],
    mapped: 'custom_profile_field',
    refs: { realm_id: 'realm' },
  },
  // A user field's value is a JSON list of user ids (import.ts).
  {
    table: 'custom_profile_field_value',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile', field_id: 'custom_profile_field' },
  },
  { table: 'linkifier', where: 't.realm_id = $1', key: ['id'], freshId: true, refs: { realm_id: 'realm' } },
  { table: 'realm_playground', where: 't.realm_id = $1', key: ['id'], freshId: true, refs: { realm_id: 'realm' } },
  { table: 'realm_domain', where: 't.realm_id = $1', key: ['id'], freshId: true, refs: { realm_id: 'realm' } },
  {
    table: 'message',
    where: `t.id IN (${EXPORTED_MESSAGES})`,
    key: ['id'],
    mapped: 'message',
    refs: { realm_id: 'realm', sender_id: 'user_profile', stream_id: 'stream' },
  },
  {
    table: 'user_message',
    where: `t.message_id IN (${EXPORTED_MESSAGES})`,
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile', message_id: 'message' },
  },
  {
    table: 'reaction',
    where: `t.message_id IN (${EXPORTED_MESSAGES})`,
    key: ['id'],
    freshId: true,
    refs: { message_id: 'message', user_profile_id: 'user_profile' },
  },
  {
    table: 'submessage',
    where: `t.message_id IN (${EXPORTED_MESSAGES})`,
    key: ['id'],
    freshId: true,
    refs: { message_id: 'message', sender_id: 'user_profile' },
  },
  {
    table: 'attachment',
    where: `t.realm_id = $1 AND ($2::int = ${COMPLETE} OR EXISTS (SELECT 1 FROM attachment_message am
      WHERE am.attachment_id = t.id AND am.message_id IN (${EXPORTED_MESSAGES})))`,
    key: ['id'],
    mapped: 'attachment',
    refs: { realm_id: 'realm', owner_id: 'user_profile' },
  },
  {
    table: 'attachment_message',
    where: `t.message_id IN (${EXPORTED_MESSAGES})`,
    key: ['attachment_id', 'message_id'],
    refs: { attachment_id: 'attachment', message_id: 'message' },
  },
  {
    table: 'multiuse_invite',
    where: 't.realm_id = $1',
    key: ['id'],
    omit: ['confirmation_key'],
    freshId: true,
    refs: { realm_id: 'realm', referred_by_id: 'user_profile', stream_ids: 'stream', group_ids: 'user_group' },
  },
  {
    table: 'preregistration_user',
    where: 't.realm_id = $1',
    key: ['id'],
    omit: ['confirmation_key'],
    freshId: true,
    refs: { realm_id: 'realm', referred_by_id: 'user_profile', stream_ids: 'stream', group_ids: 'user_group' },
  },
  // The archives themselves stay on the server that made them.
  { table: 'realm_export', where: 't.realm_id = $1', key: ['id'], skipOnImport: true },
  // Private to each user.
  {
    table: 'draft',
    where: PRIVATE_OF('user_profile_id'),
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile' },
  },
  {
    table: 'scheduled_message',
    where: PRIVATE_OF('sender_id'),
    key: ['id'],
    freshId: true,
    refs: {
      realm_id: 'realm',
      sender_id: 'user_profile',
      stream_id: 'stream',
      to: 'user_profile',
      delivered_message_id: 'message',
    },
  },
  {
    table: 'saved_snippet',
    where: PRIVATE_OF('user_profile_id'),
    key: ['id'],
    freshId: true,
    refs: { realm_id: 'realm', user_profile_id: 'user_profile' },
  },
  {
    table: 'alert_word',
    where: PRIVATE_OF('user_profile_id'),
    key: ['id'],
    freshId: true,
    refs: { realm_id: 'realm', user_profile_id: 'user_profile' },
  },
  {
    table: 'muted_user',
    where: PRIVATE_OF('user_profile_id'),
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile', muted_user_id: 'user_profile' },
  },
  {
    table: 'user_topic',
    where: PRIVATE_OF('user_profile_id'),
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile', stream_id: 'stream' },
  },
  {
    table: 'navigation_view',
    where: PRIVATE_OF('user_profile_id'),
    key: ['id'],
    freshId: true,
    refs: { user_profile_id: 'user_profile' },
  },
];

export const TABLE_BY_NAME = new Map(EXPORT_TABLES.map((spec) => [spec.table, spec]));
