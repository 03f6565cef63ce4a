// Writing an organisation's archive (docs/export-format.md): every table of EXPORT_TABLES from
// one REPEATABLE READ snapshot, through one cursor per table fetched in batches (never a whole
// table in memory), gzipped as it goes; a complete backup (`manage export-realm`) then adds
// the uploaded files' bytes, read from the uploads storage one chunk at a time.

import crypto from 'node:crypto';
import { pipeline, Readable, Transform, type TransformCallback, type Writable } from 'node:stream';
import zlib from 'node:zlib';
import type pg from 'pg';
import { sqlPool, type Db } from '@teamchat/db';
import type { ObjectStorage } from '@teamchat/storage';
import { Progress, type ProgressListener } from './progress';
import { EXPORT_FORMAT, EXPORT_FORMAT_VERSION, EXPORT_TABLES, ExportType, type ExportTypeValue } from './tables';

const BATCH = 2000;
/** Bytes of a file per archive line (base64 in a JSON string). */
export const FILE_CHUNK_BYTES = 512 * 1024;

export type Query = (sql: string, values: unknown[]) => Promise<Record<string, unknown>[]>;

/** Every storage key of the organisation's uploaded files (attachments, avatars, icon and logos, emoji), in key order. */
const FILE_KEYS = `SELECT key FROM (
  SELECT a.path_id AS key FROM attachment a WHERE a.realm_id = $1
  UNION ALL
  SELECT 'user_avatars/' || $1::int || '/' || u.avatar_key || suffix FROM user_profile u,
    unnest(ARRAY['.original', '.png', '-medium.png']) AS suffix
    WHERE u.realm_id = $1 AND u.avatar_source = 'U' AND u.avatar_key IS NOT NULL
  UNION ALL
  SELECT 'user_avatars/' || $1::int || '/realm/' || image || suffix FROM realm r,
    unnest(ARRAY['icon', 'logo', 'night_logo'], ARRAY[r.icon_source, r.logo_source, r.night_logo_source]) AS i(image, source),
    unnest(ARRAY['.original', '.png']) AS suffix
    WHERE r.id = $1 AND i.source = 'U'
  UNION ALL
  SELECT 'user_avatars/' || $1::int || '/emoji/images/' || e.file_name FROM realm_emoji e WHERE e.realm_id = $1
  UNION ALL
  SELECT 'user_avatars/' || $1::int || '/emoji/images/still/' || e.still_file_name FROM realm_emoji e
    WHERE e.realm_id = $1 AND e.still_file_name IS NOT NULL
) k`;

export interface ExportLinesOptions {
  realmId: number;
  type: ExportTypeValue;
  /** Full exports (type 2): the users whose private data is included. */
  consentingUserIds?: number[];
  /** Extra header fields (export_id...). */
  header?: Record<string, unknown>;
  /** Complete backups: where the uploaded files are read from (their bytes go into the archive). */
  storage?: ObjectStorage;
  /** Rows per table, filled in as the tables are written. */
  stats?: Record<string, number>;
  progress?: Progress;
}

/** The archive's lines (not yet compressed), read through `query` (which must run in one snapshot). */
export async function* exportLines(query: Query, options: ExportLinesOptions): AsyncGenerator<string> {
  const { realmId, type } = options;
  const consenting = type === ExportType.FULL_WITH_CONSENT ? (options.consentingUserIds ?? []) : [];
  const params = [realmId, type, consenting];
  const stats = options.stats ?? {};
  const progress = options.progress;
  // Every statement binds all three parameters (PostgreSQL refuses unused ones).
  const whereOf = (where: string) => `(${where}) AND $2::int IS NOT NULL AND $3::int[] IS NOT NULL`;
  const counts: number[] = [];
  for (const spec of EXPORT_TABLES) {
    const [{ n }] = await query(`SELECT count(*)::int AS n FROM ${spec.table} t WHERE ${whereOf(spec.where)}`, params);
    counts.push(n as number);
  }
  const withFiles = type === ExportType.COMPLETE && options.storage !== undefined;
  let fileCount = 0;
  if (withFiles) {
    fileCount = (await query(`SELECT count(*)::int AS n FROM (${FILE_KEYS}) f`, [realmId]))[0].n as number;
  }
  // Users of another organisation the rows point at (the server's system bots, which send the
  // notification messages): named by organisation and email, so an import finds its own.
  const crossRealmUsers = await query(
    `SELECT u.id, u.delivery_email AS email, r.string_id AS realm FROM user_profile u JOIN realm r ON r.id = u.realm_id
      WHERE u.realm_id <> $1 AND u.id IN (
        SELECT m.sender_id FROM message m WHERE m.realm_id = $1
        UNION SELECT um.user_profile_id FROM user_message um JOIN message m ON m.id = um.message_id WHERE m.realm_id = $1
        UNION SELECT s.sender_id FROM submessage s JOIN message m ON m.id = s.message_id WHERE m.realm_id = $1)
      ORDER BY u.id`,
    [realmId],
  );
  if (progress) {
    progress.totalRows = counts.reduce((a, b) => a + b, 0);
    if (withFiles) progress.totalFiles = fileCount;
  }
  yield `${JSON.stringify({
    format: EXPORT_FORMAT,
    version: EXPORT_FORMAT_VERSION,
    realm_id: realmId,
    export_type: type,
    exported_at: new Date().toISOString(),
    consenting_user_ids: consenting,
    cross_realm_users: crossRealmUsers,
    ...options.header,
    tables: EXPORT_TABLES.map((spec) => spec.table),
    files: withFiles,
  })}\n`;
  for (const [index, spec] of EXPORT_TABLES.entries()) {
    const where = whereOf(spec.where);
    const rows = counts[index];
    stats[spec.table] = rows;
    progress?.startTable(spec.table, rows);
    yield `${JSON.stringify({ table: spec.table, rows })}\n`;
    const omit = `ARRAY[${(spec.omit ?? []).map((column) => `'${column}'`).join(',')}]::text[]`;
    const order = spec.key.map((column) => `t.${column}`).join(', ');
    // One cursor per table (the row as PostgreSQL writes it as JSON, bigints exact), fetched in
    // batches: one execution of the query, however many rows (a keyset batch would evaluate the
    // table's filter again for every batch). Cursors take no bind parameters: the three are
    // integers, written in as literals.
    const literal = (sql: string) =>
      sql
        .replaceAll('$1', String(Number(realmId)))
        .replaceAll('$2', String(Number(type)))
        .replaceAll('$3', `'{${consenting.map((id) => Number(id)).join(',')}}'`);
    await query(
      literal(
        `DECLARE realm_export_rows NO SCROLL CURSOR FOR SELECT (to_jsonb(t) - ${omit})::text AS row FROM ${spec.table} t WHERE ${where} ORDER BY ${order}`,
      ),
      [],
    );
    // The snapshot is fixed, so the count read above is exactly what follows.
    let written = 0;
    for (;;) {
      const batch = await query(`FETCH ${BATCH} FROM realm_export_rows`, []);
      if (batch.length === 0) break;
      let chunk = '';
      for (const { row } of batch) chunk += `${row as string}\n`;
      written += batch.length;
      progress?.row(batch.length);
      yield chunk;
    }
    await query('CLOSE realm_export_rows', []);
    if (written !== rows) throw new Error(`export: ${spec.table} had ${written} rows, counted ${rows}`);
    progress?.endTable();
  }
  if (!withFiles) return;
  yield `${JSON.stringify({ section: 'files', files: fileCount })}\n`;
  let last = '';
  for (;;) {
    const batch = await query(
      `SELECT key FROM (${FILE_KEYS}) f WHERE key COLLATE "C" > $2 ORDER BY key COLLATE "C" LIMIT 500`,
      [realmId, last],
    );
    if (batch.length === 0) break;
    for (const { key } of batch) {
      yield* fileLines(options.storage!, key as string, progress);
    }
    last = batch[batch.length - 1].key as string;
  }
  progress?.done();
}

/** One file: its line, then its bytes as base64 JSON strings; a file missing from storage says so. */
async function* fileLines(storage: ObjectStorage, key: string, progress?: Progress): AsyncGenerator<string> {
  const head = await storage.head(key);
  const body = head ? await storage.get(key) : null;
  if (!head || !body) {
    yield `${JSON.stringify({ file: key, missing: true })}\n`;
    return;
  }
  yield `${JSON.stringify({ file: key, size: head.size })}\n`;
  let pending: Buffer = Buffer.alloc(0);
  let size = 0;
  for await (const piece of body as AsyncIterable<Buffer>) {
    pending = pending.length ? Buffer.concat([pending, piece]) : piece;
    while (pending.length >= FILE_CHUNK_BYTES) {
      const chunk = pending.subarray(0, FILE_CHUNK_BYTES);
      pending = pending.subarray(FILE_CHUNK_BYTES);
      size += chunk.length;
      progress?.bytes(chunk.length);
      yield `${JSON.stringify(chunk.toString('base64'))}\n`;
    }
  }
  if (pending.length) {
    size += pending.length;
    progress?.bytes(pending.length);
    yield `${JSON.stringify(pending.toString('base64'))}\n`;
  }
  if (size !== head.size) throw new Error(`export: file ${key} changed while read (${size} of ${head.size} bytes)`);
  yield `${JSON.stringify({ end: key })}\n`;
  progress?.file(0);
}

/** Hashes and counts the bytes passing through. */
export class Digest extends Transform {
  readonly hash = crypto.createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

/** Runs `fn` in one read-only REPEATABLE READ transaction on its own connection. */
export async function withSnapshot<T>(db: Db, fn: (query: Query, client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await sqlPool(db).connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const query: Query = async (sql, values) => (await client.query(sql, values)).rows;
    const result = await fn(query, client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export interface ExportRealmOptions extends Omit<ExportLinesOptions, 'progress' | 'consentingUserIds'> {
  db: Db;
  /** Where the gzipped archive goes: given the compressed stream, resolves once it is stored. */
  write: (body: Readable) => Promise<void>;
  /**
   * Full exports: the users whose private data is included; by default the active humans who
   * allow it (allow_private_data_export), read in the snapshot.
   */
  consentingUserIds?: number[];
  onProgress?: ProgressListener;
  progressIntervalMs?: number;
}

export interface ExportResult {
  stats: Record<string, number>;
  /** The compressed archive's size and sha256. */
  bytes: number;
  sha256: string;
  rows: number;
  files: number;
  fileBytes: number;
  consentingUserIds: number[];
}

/** Writes the organisation's archive (one snapshot), as `manage export-realm` and the API's export job do. */
export async function exportRealm(options: ExportRealmOptions): Promise<ExportResult> {
  const progress = new Progress('export', options.onProgress, options.progressIntervalMs);
  const stats = options.stats ?? {};
  const digest = new Digest();
  let consenting: number[] = [];
  await withSnapshot(options.db, async (query) => {
    if (options.type === ExportType.FULL_WITH_CONSENT) {
      consenting =
        options.consentingUserIds ??
        (
          await query(
            `SELECT id FROM user_profile WHERE realm_id = $1 AND is_active AND NOT is_bot
               AND settings->'allow_private_data_export' = 'true'::jsonb ORDER BY id`,
            [options.realmId],
          )
        ).map((row) => row.id as number);
    }
    const source = Readable.from(exportLines(query, { ...options, consentingUserIds: consenting, stats, progress }));
    // pipeline() passes a failed query on to the write (its callback keeps the error handled);
    // a failed write stops the reading.
    const body = pipeline(source, zlib.createGzip(), digest, () => undefined);
    try {
      await options.write(body);
    } finally {
      source.destroy();
    }
  });
  progress.done();
  return {
    stats,
    bytes: digest.bytes,
    sha256: digest.hash.digest('hex'),
    rows: progress.rows,
    files: progress.files,
    fileBytes: progress.fileBytes,
    consentingUserIds: consenting,
  };
}

/** Writes into a file stream, resolving when it is flushed. */
export function writeTo(target: Writable): (body: Readable) => Promise<void> {
  return (body) =>
    new Promise<void>((resolve, reject) => {
      pipeline(body, target, (error) => (error ? reject(error) : resolve()));
    });
}
