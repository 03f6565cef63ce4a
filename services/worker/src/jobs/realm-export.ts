// realm-export: an organisation's data export (Zulip's deferred_work realm_export), for
// POST /export/realm of the uploads service. Every table the organisation owns is written as
// gzipped JSON lines (docs/export-format.md) from one REPEATABLE READ snapshot, streamed into
// the uploads storage under user_avatars/exports/{realm_id}/{random}/, and the realm_export row
// records its path, size and sha256; the realm's administrators get a realm_export event when
// the export starts, succeeds or fails.
//
// Public exports (type 1) hold public channels' messages only and no private per-user data;
// full exports (type 2) add what the users who consented (allow_private_data_export) can see
// and own. Secrets never leave: API keys, password hashes, push tokens, invitation keys.
//
// A job finding its export already started (a worker died during it, or BullMQ retried it)
// marks it failed rather than starting over, as Zulip does.

import crypto from 'node:crypto';
import { pipeline, Readable, Transform, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';

type RealmExportJobData = JobData['realm-export'];
import { Prisma, transaction, type TxClient } from '@teamchat/db';
import { EXPORTS_KEY_PREFIX, RealmExportStatus, RealmExportType, realmExportEvent } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { createStorage, loadStorageConfig } from '@teamchat/storage';
import type { JobProcessor } from './processor';

export const EXPORT_FORMAT = 'teamchat-realm-export';
export const EXPORT_FORMAT_VERSION = 1;
const BATCH = 2000;

// Parameters of every table's query: $1 realm id, $2 export type, $3 consenting user ids.
const REALM_USERS = 'SELECT u.id FROM user_profile u WHERE u.realm_id = $1';
const PUBLIC_STREAMS = 'SELECT s.id FROM stream s WHERE s.realm_id = $1 AND NOT s.invite_only';
/** Messages of public channels, and (full exports) every message a consenting user received. */
const EXPORTED_MESSAGES = `SELECT m.id FROM message m WHERE m.realm_id = $1 AND (
  m.stream_id IN (${PUBLIC_STREAMS})
  OR ($2::int = ${RealmExportType.FULL_WITH_CONSENT} AND EXISTS (
    SELECT 1 FROM user_message um WHERE um.message_id = m.id AND um.user_profile_id = ANY($3::int[]))))`;
/** A user's private rows: full exports only, and only of users who consented. */
const PRIVATE_OF = (column: string) =>
  `$2::int = ${RealmExportType.FULL_WITH_CONSENT} AND t.${column} = ANY($3::int[]) AND t.${column} IN (${REALM_USERS})`;

interface TableSpec {
  table: string;
  /** Condition on `t` selecting the organisation's rows. */
  where: string;
  /** Unique ordering columns; one integer column allows keyset batches. */
  key: string[];
  /** Columns never exported (secrets). */
  omit?: string[];
}

/** Every table the organisation owns, in dependency order. Not exported: api_key, push_device_token (secrets), event_outbox, event_tier_epoch (the event tier's). */
export const EXPORT_TABLES: TableSpec[] = [
  { table: 'realm', where: 't.id = $1', key: ['id'] },
  { table: 'user_profile', where: 't.realm_id = $1', key: ['id'], omit: ['password_hash'] },
  { table: 'user_presence', where: `t.user_profile_id IN (${REALM_USERS})`, key: ['user_profile_id'] },
  { table: 'user_status', where: `t.user_profile_id IN (${REALM_USERS})`, key: ['user_profile_id'] },
  { table: 'onboarding_step', where: `t.user_profile_id IN (${REALM_USERS})`, key: ['id'] },
  // Bots' outgoing webhooks (their token sealed with this server's secret: useless elsewhere), configuration and storage.
  { table: 'service', where: `t.user_profile_id IN (${REALM_USERS})`, key: ['id'], omit: ['sealed_token'] },
  { table: 'bot_config_data', where: `t.bot_profile_id IN (${REALM_USERS})`, key: ['id'] },
  { table: 'bot_storage_data', where: `t.bot_profile_id IN (${REALM_USERS})`, key: ['id'] },
  { table: 'user_group', where: 't.realm_id = $1', key: ['id'] },
  {
    table: 'user_group_membership',
    where: `t.user_profile_id IN (${REALM_USERS})`,
    key: ['user_group_id', 'user_profile_id'],
  },
  {
    table: 'group_group_membership',
    where: 't.supergroup_id IN (SELECT g.id FROM user_group g WHERE g.realm_id = $1)',
    key: ['supergroup_id', 'subgroup_id'],
  },
  { table: 'group_setting', where: 't.realm_id = $1', key: ['id'] },
  { table: 'channel_folder', where: 't.realm_id = $1', key: ['id'] },
  { table: 'stream', where: 't.realm_id = $1', key: ['id'] },
  {
    table: 'subscription',
    where: `t.user_profile_id IN (${REALM_USERS}) AND (t.stream_id IN (${PUBLIC_STREAMS})
      OR ($2::int = ${RealmExportType.FULL_WITH_CONSENT} AND t.user_profile_id = ANY($3::int[])))`,
    key: ['id'],
  },
  { table: 'custom_profile_field', where: 't.realm_id = $1', key: ['id'] },
  { table: 'custom_profile_field_value', where: `t.user_profile_id IN (${REALM_USERS})`, key: ['id'] },
  { table: 'linkifier', where: 't.realm_id = $1', key: ['id'] },
  { table: 'realm_playground', where: 't.realm_id = $1', key: ['id'] },
  { table: 'realm_domain', where: 't.realm_id = $1', key: ['id'] },
  { table: 'realm_emoji', where: 't.realm_id = $1', key: ['id'] },
  { table: 'message', where: `t.id IN (${EXPORTED_MESSAGES})`, key: ['id'] },
  { table: 'user_message', where: `t.message_id IN (${EXPORTED_MESSAGES})`, key: ['id'] },
  { table: 'reaction', where: `t.message_id IN (${EXPORTED_MESSAGES})`, key: ['id'] },
  { table: 'submessage', where: `t.message_id IN (${EXPORTED_MESSAGES})`, key: ['id'] },
  {
    table: 'attachment',
    where: `t.realm_id = $1 AND EXISTS (SELECT 1 FROM attachment_message am
      WHERE am.attachment_id = t.id AND am.message_id IN (${EXPORTED_MESSAGES}))`,
    key: ['id'],
  },
  {
    table: 'attachment_message',
    where: `t.message_id IN (${EXPORTED_MESSAGES})`,
    key: ['attachment_id', 'message_id'],
  },
  { table: 'multiuse_invite', where: 't.realm_id = $1', key: ['id'], omit: ['confirmation_key'] },
  { table: 'preregistration_user', where: 't.realm_id = $1', key: ['id'], omit: ['confirmation_key'] },
  { table: 'realm_export', where: 't.realm_id = $1', key: ['id'] },
  // Private to each user.
  { table: 'draft', where: PRIVATE_OF('user_profile_id'), key: ['id'] },
  { table: 'scheduled_message', where: PRIVATE_OF('sender_id'), key: ['id'] },
  { table: 'saved_snippet', where: PRIVATE_OF('user_profile_id'), key: ['id'] },
  { table: 'alert_word', where: PRIVATE_OF('user_profile_id'), key: ['id'] },
  { table: 'muted_user', where: PRIVATE_OF('user_profile_id'), key: ['id'] },
  { table: 'user_topic', where: PRIVATE_OF('user_profile_id'), key: ['id'] },
  { table: 'navigation_view', where: PRIVATE_OF('user_profile_id'), key: ['id'] },
];

type Query = (sql: string, ...values: unknown[]) => Promise<{ row: Record<string, unknown> }[]>;

/** The archive's lines: the header, then each table's header line and its rows. */
async function* exportLines(
  query: Query,
  count: (sql: string, ...values: unknown[]) => Promise<number>,
  params: unknown[],
  header: Record<string, unknown>,
  stats: Record<string, number>,
): AsyncGenerator<string> {
  yield `${JSON.stringify({ ...header, tables: EXPORT_TABLES.map((spec) => spec.table) })}\n`;
  for (const spec of EXPORT_TABLES) {
    // Every statement binds all three parameters (PostgreSQL refuses unused ones).
    const where = `(${spec.where}) AND $2::int IS NOT NULL AND $3::int[] IS NOT NULL`;
    const rows = await count(`SELECT count(*)::int AS n FROM ${spec.table} t WHERE ${where}`, ...params);
    stats[spec.table] = rows;
    yield `${JSON.stringify({ table: spec.table, rows })}\n`;
    const omit = `ARRAY[${(spec.omit ?? []).map((column) => `'${column}'`).join(',')}]::text[]`;
    const select = `SELECT to_jsonb(t) - ${omit} AS row FROM ${spec.table} t WHERE ${where}`;
    const order = spec.key.map((column) => `t.${column}`).join(', ');
    if (spec.key.length === 1) {
      let last = -1;
      for (;;) {
        const batch = await query(
          `${select} AND t.${spec.key[0]} > $4 ORDER BY ${order} LIMIT ${BATCH}`,
          ...params,
          last,
        );
        for (const { row } of batch) yield `${JSON.stringify(row)}\n`;
        if (batch.length < BATCH) break;
        last = batch[batch.length - 1].row[spec.key[0]] as number;
      }
    } else {
      for (let offset = 0; ; offset += BATCH) {
        const batch = await query(`${select} ORDER BY ${order} LIMIT ${BATCH} OFFSET $4`, ...params, offset);
        for (const { row } of batch) yield `${JSON.stringify(row)}\n`;
        if (batch.length < BATCH) break;
      }
    }
  }
}

/** Hashes and counts the bytes passing through. */
class Digest extends Transform {
  readonly hash = crypto.createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

/** Changes the export row and tells the administrators, in one transaction. */
async function notify(deps: BaseDeps, realmId: number, change: (db: TxClient) => Promise<unknown>): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await change(tx.db);
    const { event, userIds } = await realmExportEvent(tx.db, realmId, deps.env.EXTERNAL_SCHEME);
    await deps.bus.sendEventOnCommit(tx, realmId, event, userIds);
  });
}

async function processRealmExport(job: Job<RealmExportJobData>, deps: BaseDeps): Promise<{ status: string }> {
  const { realmId, exportId } = job.data;
  const row = await deps.db.realmExport.findUnique({ where: { id: exportId } });
  if (!row || row.realm_id !== realmId) return { status: 'missing' };
  if (row.status === RealmExportStatus.STARTED) {
    deps.logger.error({ export_id: exportId }, 'marking a data export failed: it was started before (worker died?)');
    await notify(deps, realmId, (db) =>
      db.realmExport.update({
        where: { id: exportId },
        data: { status: RealmExportStatus.FAILED, date_failed: new Date() },
      }),
    );
    return { status: 'failed' };
  }
  if (row.status !== RealmExportStatus.REQUESTED) return { status: 'skipped' };
  await notify(deps, realmId, (db) =>
    db.realmExport.update({
      where: { id: exportId },
      data: { status: RealmExportStatus.STARTED, date_started: new Date() },
    }),
  );

  const storage = createStorage(loadStorageConfig(process.env));
  const random = crypto.randomBytes(18).toString('base64url');
  const key = `${EXPORTS_KEY_PREFIX}/${realmId}/${random}/teamchat-export-${crypto.randomBytes(4).toString('hex')}.jsonl.gz`;
  const started = Date.now();
  try {
    const stats: Record<string, number> = {};
    const digest = new Digest();
    await deps.db.$transaction(
      async (tx) => {
        const users = await tx.userProfile.findMany({
          where: { realm_id: realmId, is_active: true, is_bot: false },
          select: { id: true, settings: true },
        });
        const consenting = users
          .filter((user) => (user.settings as Record<string, unknown> | null)?.allow_private_data_export === true)
          .map((user) => user.id);
        const params = [realmId, row.type, consenting];
        const query: Query = (sql, ...values) => tx.$queryRawUnsafe(sql, ...values);
        const count = async (sql: string, ...values: unknown[]) =>
          ((await tx.$queryRawUnsafe(sql, ...values)) as { n: number }[])[0].n;
        const header = {
          format: EXPORT_FORMAT,
          version: EXPORT_FORMAT_VERSION,
          realm_id: realmId,
          export_id: exportId,
          export_type: row.type,
          exported_at: new Date().toISOString(),
          consenting_user_ids: row.type === RealmExportType.FULL_WITH_CONSENT ? consenting : [],
        };
        const source = Readable.from(exportLines(query, count, params, header, stats));
        // pipeline() passes a failed query on to the write (and its callback keeps the error
        // handled); a failed write stops the reading.
        const body = pipeline(source, zlib.createGzip(), digest, () => undefined);
        try {
          await storage.put(key, body, { contentType: 'application/gzip' });
        } finally {
          source.destroy();
        }
      },
      { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: 60 * 60_000, maxWait: 30_000 },
    );
    await notify(deps, realmId, (db) =>
      db.realmExport.update({
        where: { id: exportId },
        data: {
          status: RealmExportStatus.SUCCEEDED,
          date_succeeded: new Date(),
          export_path: `/${key}`,
          sha256sum_hex: digest.hash.digest('hex'),
          tarball_size_bytes: BigInt(digest.bytes),
          stats,
        },
      }),
    );
    deps.logger.info({ realm_id: realmId, export_id: exportId, ms: Date.now() - started }, 'data export completed');
    return { status: 'succeeded' };
  } catch (error) {
    deps.logger.error({ err: error, realm_id: realmId, export_id: exportId }, 'data export failed');
    await storage.delete([key]).catch(() => undefined);
    await notify(deps, realmId, (db) =>
      db.realmExport.update({
        where: { id: exportId },
        data: { status: RealmExportStatus.FAILED, date_failed: new Date() },
      }),
    );
    return { status: 'failed' };
  } finally {
    await storage.close();
  }
}

export const realmExportProcessor: JobProcessor<typeof JOB_QUEUES.realmExport> = {
  queue: JOB_QUEUES.realmExport,
  concurrency: 1,
  process: processRealmExport,
};
