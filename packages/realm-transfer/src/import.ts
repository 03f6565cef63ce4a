// importRealm: creates a new organisation from an archive (docs/export-format.md), as Zulip's
// import_realm does: in a database that may hold other organisations, so every row gets a new
// id and every reference to one is rewritten.
//
//   importRealm({
//     source,        // archive: a file path (.jsonl.gz or .jsonl), a byte stream (gzipped or
//                    //   not), or the archive's lines (an (async) iterable of strings; a string
//                    //   may hold several lines) — what a converter such as the Slack importer hands in
//     subdomain,     // the new organisation's string_id; refused when taken (RealmImportError)
//     host?,         // its host; default: the archive's host with its subdomain replaced
//     db,            // @teamchat/db client (createDb): one transaction on a connection of its pool
//     storage?,      // @teamchat/storage ObjectStorage receiving the archive's files (required
//                    //   when the archive has a files section)
//     serverSecret?, // INTERNAL_JWT_SECRET: new outgoing-webhook tokens are sealed with it
//     onProgress?, progressIntervalMs?,   // progress lines (ProgressListener), every 2 s by default
//   }): Promise<ImportResult>   // { realmId, stringId, host, rows, skipped, files, fileBytes, ... }
//
// Everything is one transaction: a failed import leaves no row (and removes the files it stored).
// Memory stays bounded: rows are inserted in batches as they are read; the id maps hold two
// integers per mapped row (messages included: 8 bytes each), nothing else grows with history.
// Not restored, as Zulip: passwords (users set one anew) and API keys (issued anew); realm_export
// rows (their archives stay on the old server).

import crypto from 'node:crypto';
import { PassThrough } from 'node:stream';
import type pg from 'pg';
import { sqlPool, type Db } from '@teamchat/db';
import { placeholderEmailDomain, sealBotSecret } from '@teamchat/domain';
import type { ObjectStorage } from '@teamchat/storage';
import { archiveLines, type ArchiveSource } from './archive';
import { Progress, type ProgressListener } from './progress';
import { EXPORT_FORMAT, EXPORT_FORMAT_VERSION, TABLE_BY_NAME, type MappedTable, type TableSpec } from './tables';

const INSERT_BATCH = 1000;

export class RealmImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RealmImportError';
  }
}

export interface ImportRealmOptions {
  source: ArchiveSource;
  subdomain: string;
  host?: string;
  db: Db;
  storage?: ObjectStorage;
  serverSecret?: string;
  onProgress?: ProgressListener;
  progressIntervalMs?: number;
}

export interface ImportResult {
  realmId: number;
  stringId: string;
  host: string;
  /** The archive's realm id. */
  sourceRealmId: number;
  rows: number;
  /** Rows per table inserted. */
  stats: Record<string, number>;
  /** Rows left out because what they point at is not in the archive (a public export's private parts). */
  skipped: Record<string, number>;
  files: number;
  fileBytes: number;
  missingFiles: string[];
  /** old id -> new id of the users (callers issue keys, tests compare). */
  userIds: Map<number, number>;
}

/**
 * old id -> new id of one table. Rows arrive in id order and new ids are handed out in
 * ascending order, so two growing typed arrays and a binary search serve any number of rows
 * (8 bytes each) — a Map of millions of messages would not stay bounded.
 */
export class IdMap {
  private olds = new Int32Array(1024);
  private news = new Int32Array(1024);
  private size = 0;
  private sorted = true;

  set(oldId: number, newId: number): void {
    if (this.size === this.olds.length) {
      const olds = new Int32Array(this.olds.length * 2);
      olds.set(this.olds);
      const news = new Int32Array(this.news.length * 2);
      news.set(this.news);
      this.olds = olds;
      this.news = news;
    }
    if (this.size > 0 && this.olds[this.size - 1] >= oldId) this.sorted = false;
    this.olds[this.size] = oldId;
    this.news[this.size] = newId;
    this.size += 1;
  }

  get(oldId: number): number | undefined {
    if (!this.sorted) this.sort();
    let low = 0;
    let high = this.size - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const value = this.olds[mid];
      if (value === oldId) return this.news[mid];
      if (value < oldId) low = mid + 1;
      else high = mid - 1;
    }
    return undefined;
  }

  get count(): number {
    return this.size;
  }

  entries(): [number, number][] {
    const out: [number, number][] = [];
    for (let i = 0; i < this.size; i++) out.push([this.olds[i], this.news[i]]);
    return out;
  }

  private sort(): void {
    const order = Array.from({ length: this.size }, (_, i) => i).sort((a, b) => this.olds[a] - this.olds[b]);
    this.olds = Int32Array.from(order, (i) => this.olds[i]);
    this.news = Int32Array.from(order, (i) => this.news[i]);
    this.sorted = true;
  }
}

type Row = Record<string, unknown>;

interface Column {
  name: string;
  nullable: boolean;
  type: string;
}

/** A reference the import fills in once its target's section has been read. */
interface Deferred {
  table: string;
  id: number;
  column: string;
  target: MappedTable;
  old: number;
}

const ROLE_USER_FIELD = 6;

class Importer {
  readonly maps = new Map<MappedTable, IdMap>();
  /** Mapped tables whose section has been read completely. */
  private readonly done = new Set<string>();
  private readonly deferred: Deferred[] = [];
  private columns = new Map<string, Column[]>();
  readonly stats: Record<string, number> = {};
  readonly skipped: Record<string, number> = {};
  private readonly userFieldIds = new Set<number>();
  oldRealmId = 0;
  newRealmId = 0;
  oldHost = '';
  realmSettings: Row | null = null;
  readonly storedKeys: string[] = [];
  readonly missingFiles: string[] = [];

  constructor(
    private readonly client: pg.PoolClient,
    private readonly options: ImportRealmOptions,
    readonly progress: Progress,
    public host: string | undefined,
  ) {
    for (const table of [
      'realm',
      'user_profile',
      'user_group',
      'channel_folder',
      'stream',
      'custom_profile_field',
      'realm_emoji',
      'message',
      'attachment',
    ] as MappedTable[]) {
      this.maps.set(table, new IdMap());
    }
  }

  map(table: MappedTable): IdMap {
    return this.maps.get(table)!;
  }

  async loadColumns(): Promise<void> {
    const { rows } = await this.client.query<{
      table_name: string;
      column_name: string;
      is_nullable: string;
      udt_name: string;
    }>(
      `SELECT table_name, column_name, is_nullable, udt_name FROM information_schema.columns
        WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
    );
    for (const row of rows) {
      const list = this.columns.get(row.table_name) ?? [];
      list.push({ name: row.column_name, nullable: row.is_nullable === 'YES', type: row.udt_name });
      this.columns.set(row.table_name, list);
    }
  }

  /** New ids from the table's sequence, ascending. */
  private async allocate(table: string, count: number): Promise<number[]> {
    const { rows } = await this.client.query<{ id: string }>(
      `SELECT nextval(pg_get_serial_sequence($1, 'id'))::text AS id FROM generate_series(1, $2)`,
      [table, count],
    );
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  /** Users of other organisations (the system bots): the archive's id -> this server's. */
  readonly crossRealmUsers = new Map<number, number>();

  /** Finds this server's users the archive names by organisation and email (docs/export-format.md). */
  async loadCrossRealmUsers(users: { id: number; email: string; realm: string }[]): Promise<void> {
    for (const user of users) {
      const { rows } = await this.client.query<{ id: number }>(
        `SELECT u.id FROM user_profile u JOIN realm r ON r.id = u.realm_id
          WHERE r.string_id = $1 AND u.delivery_email = $2`,
        [user.realm, user.email.toLowerCase()],
      );
      if (rows.length) this.crossRealmUsers.set(Number(user.id), rows[0].id);
    }
  }

  /** The new id of `old` in `target`, `null` when the archive lacks it, `undefined` when it is still to come. */
  private resolve(target: MappedTable, old: unknown): number | null | undefined {
    if (old === null || old === undefined) return null;
    const found = this.map(target).get(Number(old));
    if (found !== undefined) return found;
    if (target === 'user_profile') {
      const elsewhere = this.crossRealmUsers.get(Number(old));
      if (elsewhere !== undefined) return elsewhere;
    }
    return this.done.has(target) ? null : undefined;
  }

  /** Rewrites one row's references; false when the row must be left out. */
  private remap(spec: TableSpec, row: Row, newId: number | undefined): boolean {
    const columns = this.columns.get(spec.table)!;
    for (const [column, target] of Object.entries(spec.refs ?? {})) {
      if (!(column in row)) continue;
      const value = row[column];
      if (Array.isArray(value)) {
        row[column] = value
          .map((old) => this.resolve(target, old))
          .filter((id): id is number => typeof id === 'number');
        continue;
      }
      const resolved = this.resolve(target, value);
      if (resolved === undefined && newId !== undefined) {
        // Points forward (a bot's owner created later, a channel's first message): filled in at the end.
        this.deferred.push({ table: spec.table, id: newId, column, target, old: Number(value) });
        row[column] = null;
        continue;
      }
      if ((resolved === null || resolved === undefined) && value !== null) {
        const nullable = columns.find((c) => c.name === column)?.nullable ?? true;
        if (!nullable) return false;
        row[column] = null;
        continue;
      }
      row[column] = resolved;
    }
    return true;
  }

  // ------------------------------------------------------------------ per-table rewrites

  /** Ids inside rendered HTML and Markdown (mentions, channel links, upload and emoji URLs), as Zulip's fix_message_rendered_content. */
  rewriteHtml(html: string | null | undefined): string | null | undefined {
    if (!html) return html;
    const users = this.map('user_profile');
    const streams = this.map('stream');
    const groups = this.map('user_group');
    const messages = this.map('message');
    const swap = (map: IdMap, old: string) => String(map.get(Number(old)) ?? old);
    return this.rewriteUrls(html)
      .replace(/data-user-id="(\d+)"/g, (_, id: string) => `data-user-id="${swap(users, id)}"`)
      .replace(/data-user-group-id="(\d+)"/g, (_, id: string) => `data-user-group-id="${swap(groups, id)}"`)
      .replace(/data-stream-id="(\d+)"/g, (_, id: string) => `data-stream-id="${swap(streams, id)}"`)
      .replace(/(#narrow\/(?:channel|stream)\/)(\d+)/g, (_, head: string, id: string) => `${head}${swap(streams, id)}`)
      .replace(
        /(#narrow\/dm\/)(\d+(?:,\d+)*)/g,
        (_, head: string, ids: string) =>
          `${head}${ids
            .split(',')
            .map((id) => swap(users, id))
            .join(',')}`,
      )
      .replace(/(\/(?:near|with)\/)(\d+)/g, (_, head: string, id: string) => `${head}${swap(messages, id)}`);
  }

  /** Upload and public-file URLs carry the realm id. */
  rewriteUrls(text: string): string {
    return text
      .replaceAll(`/user_uploads/${this.oldRealmId}/`, `/user_uploads/${this.newRealmId}/`)
      .replaceAll(`/user_avatars/${this.oldRealmId}/`, `/user_avatars/${this.newRealmId}/`);
  }

  /** Markdown: upload links and the ids of `@**Name|id**` mentions. */
  rewriteMarkdown(content: string | null | undefined): string | null | undefined {
    if (!content) return content;
    const users = this.map('user_profile');
    return this.rewriteUrls(content).replace(
      /(@_?\*\*[^*|]*\|)(\d+)(\*\*)/g,
      (_, head: string, id: string, tail: string) => `${head}${users.get(Number(id)) ?? id}${tail}`,
    );
  }

  private rewriteKey(key: string): string {
    if (key.startsWith(`${this.oldRealmId}/`)) return `${this.newRealmId}/${key.slice(`${this.oldRealmId}/`.length)}`;
    const prefix = `user_avatars/${this.oldRealmId}/`;
    if (key.startsWith(prefix)) return `user_avatars/${this.newRealmId}/${key.slice(prefix.length)}`;
    throw new RealmImportError(`the archive's file ${JSON.stringify(key)} is not the organisation's`);
  }

  private emojiCode(row: Row): void {
    if (row.reaction_type === 'realm_emoji' && row.emoji_code) {
      const id = this.map('realm_emoji').get(Number(row.emoji_code));
      if (id !== undefined) row.emoji_code = String(id);
    }
  }

  /** Table-specific changes beyond `refs`, before the generic rewrite. */
  private special(spec: TableSpec, row: Row, newId: number | undefined): void {
    switch (spec.table) {
      case 'realm': {
        this.oldRealmId = Number(row.id);
        this.newRealmId = newId!;
        this.oldHost = String(row.host);
        const oldStringId = String(row.string_id ?? '');
        row.string_id = this.options.subdomain;
        row.host = this.host ?? defaultHost(this.oldHost, oldStringId, this.options.subdomain);
        // Channel ids inside the settings: written once the channels exist.
        this.realmSettings = (row.settings as Row | null) ?? {};
        break;
      }
      case 'user_profile': {
        const newDomain = placeholderEmailDomain({ host: this.host! });
        const oldDomain = placeholderEmailDomain({ host: this.oldHost });
        if (row.email === `user${row.id}@${oldDomain}`) row.email = `user${newId}@${newDomain}`;
        break;
      }
      case 'user_status':
      case 'reaction':
        this.emojiCode(row);
        break;
      case 'service':
        // The token was not exported (sealed with the old server's secret): a new one, as Zulip's import.
        row.sealed_token = sealBotSecret(
          crypto.randomBytes(24).toString('base64url'),
          this.map('user_profile').get(Number(row.user_profile_id)) ?? 0,
          this.options.serverSecret ?? crypto.randomBytes(32).toString('hex'),
        );
        break;
      case 'group_setting': {
        const kind = row.owner_kind;
        const target: MappedTable = kind === 'realm' ? 'realm' : kind === 'stream' ? 'stream' : 'user_group';
        const owner = this.map(target).get(Number(row.owner_id));
        row.owner_id = owner ?? null;
        break;
      }
      case 'custom_profile_field':
        if (Number(row.field_type) === ROLE_USER_FIELD) this.userFieldIds.add(Number(row.id));
        break;
      case 'custom_profile_field_value':
        if (this.userFieldIds.has(Number(row.field_id))) {
          try {
            const ids = JSON.parse(String(row.value)) as unknown;
            if (Array.isArray(ids)) {
              row.value = JSON.stringify(
                ids.map((id) => this.map('user_profile').get(Number(id))).filter((id) => id !== undefined),
              );
            }
          } catch {
            // Not a list of ids: kept as it was.
          }
        }
        break;
      case 'stream':
        row.rendered_description = this.rewriteHtml(row.rendered_description as string);
        break;
      case 'channel_folder':
        row.rendered_description = this.rewriteHtml(row.rendered_description as string);
        break;
      case 'message': {
        if (typeof row.dm_key === 'string' && row.dm_key) {
          row.dm_key = row.dm_key
            .split(',')
            .map((id) => this.map('user_profile').get(Number(id)) ?? Number(id))
            .sort((a, b) => a - b)
            .join(',');
        }
        row.content = this.rewriteMarkdown(row.content as string);
        row.rendered_content = this.rewriteHtml(row.rendered_content as string);
        if (Array.isArray(row.edit_history)) {
          for (const entry of row.edit_history as Row[]) {
            if (typeof entry.user_id === 'number') entry.user_id = this.map('user_profile').get(entry.user_id) ?? null;
            for (const key of ['prev_stream', 'stream']) {
              if (typeof entry[key] === 'number') entry[key] = this.map('stream').get(entry[key]) ?? entry[key];
            }
            if (typeof entry.prev_content === 'string') entry.prev_content = this.rewriteMarkdown(entry.prev_content);
            if (typeof entry.prev_rendered_content === 'string') {
              entry.prev_rendered_content = this.rewriteHtml(entry.prev_rendered_content);
            }
          }
        }
        break;
      }
      case 'attachment':
        row.path_id = this.rewriteKey(String(row.path_id));
        break;
      case 'multiuse_invite':
      case 'preregistration_user':
        // Links are made with the old server's host and keys were not exported: a new key each.
        row.confirmation_key = crypto.randomBytes(24).toString('base64url').slice(0, 24).toLowerCase();
        break;
      case 'draft': {
        const target: MappedTable = row.type === 'stream' ? 'stream' : 'user_profile';
        if (Array.isArray(row.to)) {
          row.to = row.to.map((id) => this.map(target).get(Number(id))).filter((id) => id !== undefined);
        }
        break;
      }
      case 'scheduled_message':
        row.content = this.rewriteMarkdown(row.content as string);
        row.rendered_content = this.rewriteHtml(row.rendered_content as string);
        break;
      case 'navigation_view':
        // A view's fragment may name a channel or users by id.
        row.fragment = this.rewriteHtml(`#${String(row.fragment)}`)!.slice(1);
        break;
      case 'saved_snippet':
        row.content = this.rewriteMarkdown(row.content as string);
        break;
      default:
        break;
    }
  }

  /** Reads one table's rows from `lines` and inserts them in batches. */
  async table(
    spec: TableSpec | undefined,
    name: string,
    count: number,
    lines: AsyncIterator<string> | Iterator<string>,
  ): Promise<void> {
    this.progress.startTable(name, count);
    const known = spec && !spec.skipOnImport && this.columns.has(name);
    let batch: Row[] = [];
    let inserted = 0;
    const flush = async () => {
      if (!batch.length) return;
      inserted += await this.insert(spec!, batch);
      batch = [];
    };
    let pending: Row[] = [];
    for (let i = 0; i < count; i++) {
      const next = await lines.next();
      if (next.done) throw new RealmImportError(`the archive ends inside table ${name} (${i} of ${count} rows)`);
      this.progress.row();
      if (!known) continue;
      pending.push(JSON.parse(next.value) as Row);
      if (pending.length === INSERT_BATCH) {
        batch = await this.prepare(spec, pending);
        pending = [];
        await flush();
      }
    }
    if (known && pending.length) {
      batch = await this.prepare(spec, pending);
      await flush();
    }
    if (spec?.mapped) this.done.add(spec.mapped);
    if (known) this.stats[name] = inserted;
    this.progress.endTable();
  }

  /** New ids, table rewrites and references of a batch of rows. */
  private async prepare(spec: TableSpec, rows: Row[]): Promise<Row[]> {
    let ids: number[] = [];
    if (spec.mapped) {
      ids = await this.allocate(spec.table, rows.length);
      const map = this.map(spec.mapped);
      rows.forEach((row, i) => map.set(Number(row.id), ids[i]));
    }
    const out: Row[] = [];
    rows.forEach((row, i) => {
      const newId = spec.mapped ? ids[i] : undefined;
      this.special(spec, row, newId);
      if (!this.remap(spec, row, newId)) {
        this.skipped[spec.table] = (this.skipped[spec.table] ?? 0) + 1;
        return;
      }
      if (spec.mapped) row.id = newId;
      else if (spec.freshId) delete row.id;
      out.push(row);
    });
    return out;
  }

  private async insert(spec: TableSpec, rows: Row[]): Promise<number> {
    const known = this.columns.get(spec.table)!;
    const present = new Set<string>();
    for (const row of rows) for (const key of Object.keys(row)) present.add(key);
    // Columns of this database the archive has (others take their defaults; unknown ones are ignored).
    const columns = known.filter((column) => present.has(column.name)).map((column) => `"${column.name}"`);
    const sql = `INSERT INTO ${spec.table} (${columns.join(', ')})
      SELECT ${columns.join(', ')} FROM jsonb_populate_recordset(NULL::${spec.table}, $1::jsonb)`;
    const result = await this.client.query(sql, [JSON.stringify(rows)]);
    return result.rowCount ?? rows.length;
  }

  /** One file: its line was read; its chunks follow until `{"end": key}`. */
  async file(header: Row, lines: AsyncIterator<string>): Promise<void> {
    const key = String(header.file);
    if (header.missing) {
      this.missingFiles.push(key);
      this.progress.file(0);
      return;
    }
    const storage = this.options.storage;
    if (!storage) throw new RealmImportError('the archive holds files: give the import a storage');
    const target = this.rewriteKey(key);
    const body = new PassThrough();
    this.storedKeys.push(target);
    const stored = storage.put(target, body);
    stored.catch(() => undefined);
    let size = 0;
    try {
      for (;;) {
        const next = await lines.next();
        if (next.done) throw new RealmImportError(`the archive ends inside file ${key}`);
        const value = JSON.parse(next.value) as unknown;
        if (typeof value !== 'string') {
          if ((value as Row | null)?.end !== key) throw new RealmImportError(`file ${key} is not ended`);
          break;
        }
        const chunk = Buffer.from(value, 'base64');
        size += chunk.length;
        this.progress.bytes(chunk.length);
        if (!body.write(chunk)) await new Promise((resolve) => body.once('drain', resolve));
      }
      body.end();
    } catch (error) {
      body.destroy(error as Error);
      throw error;
    }
    await stored;
    if (typeof header.size === 'number' && header.size !== size) {
      throw new RealmImportError(`file ${key}: ${size} bytes, the archive announced ${header.size}`);
    }
    this.progress.file(0);
  }

  /** References to rows that came later in the archive, and the realm's channel settings. */
  async finish(): Promise<void> {
    for (const item of this.deferred) {
      const value = this.map(item.target).get(item.old) ?? null;
      if (value === null) continue;
      await this.client.query(`UPDATE ${item.table} SET "${item.column}" = $1 WHERE id = $2`, [value, item.id]);
    }
    if (this.realmSettings) {
      const settings = { ...this.realmSettings };
      let changed = false;
      for (const [key, value] of Object.entries(settings)) {
        if (/(_stream_id|_channel_id)$/.test(key) && typeof value === 'number' && value > 0) {
          settings[key] = this.map('stream').get(value) ?? -1;
          changed = true;
        }
      }
      if (changed) {
        await this.client.query('UPDATE realm SET settings = $1::jsonb WHERE id = $2', [
          JSON.stringify(settings),
          this.newRealmId,
        ]);
      }
    }
  }
}

/** The archive's host with its subdomain replaced (or the new subdomain put in front). */
export function defaultHost(oldHost: string, oldStringId: string, subdomain: string): string {
  if (oldStringId && oldHost.startsWith(`${oldStringId}.`))
    return `${subdomain}.${oldHost.slice(oldStringId.length + 1)}`;
  return subdomain ? `${subdomain}.${oldHost}` : oldHost;
}

/** Creates a new organisation from an archive (see the top of this file). */
export async function importRealm(options: ImportRealmOptions): Promise<ImportResult> {
  const { db, subdomain } = options;
  const lines = archiveLines(options.source)[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new RealmImportError('the archive is empty');
  const header = JSON.parse(first.value) as Row;
  if (header.format !== EXPORT_FORMAT) throw new RealmImportError(`not a Teamchat organisation archive`);
  if (typeof header.version !== 'number' || header.version > EXPORT_FORMAT_VERSION) {
    throw new RealmImportError(`archive version ${String(header.version)} is newer than this server reads`);
  }
  const client = await sqlPool(db).connect();
  const progress = new Progress('import', options.onProgress, options.progressIntervalMs);
  const importer = new Importer(client, options, progress, options.host);
  let committed = false;
  try {
    await client.query('BEGIN');
    await importer.loadColumns();
    await importer.loadCrossRealmUsers(
      (header.cross_realm_users as { id: number; email: string; realm: string }[]) ?? [],
    );
    const tables = (header.tables as string[] | undefined) ?? [];
    for (const name of tables) {
      const next = await lines.next();
      if (next.done) throw new RealmImportError(`the archive ends before table ${name}`);
      const line = JSON.parse(next.value) as Row;
      if (line.table !== name) throw new RealmImportError(`expected table ${name}, found ${next.value.slice(0, 80)}`);
      if (name === 'realm') {
        if (line.rows !== 1) throw new RealmImportError('the archive holds no organisation');
        // The new host must be known, and free, before the first row is rewritten.
        const realmLine = await lines.next();
        if (realmLine.done) throw new RealmImportError('the archive ends before its organisation');
        const row = JSON.parse(realmLine.value) as Row;
        importer.host = options.host ?? defaultHost(String(row.host), String(row.string_id ?? ''), subdomain);
        await refuseTaken(client, subdomain, importer.host);
        await importer.table(
          TABLE_BY_NAME.get(name),
          name,
          1,
          [realmLine.value][Symbol.iterator]() as Iterator<string>,
        );
        continue;
      }
      await importer.table(TABLE_BY_NAME.get(name), name, Number(line.rows), lines);
    }
    await importer.finish();
    for (;;) {
      const next = await lines.next();
      if (next.done) break;
      const line = JSON.parse(next.value) as Row;
      if (line.section === 'files') {
        progress.totalFiles = Number(line.files);
        continue;
      }
      if (typeof line.file === 'string') {
        await importer.file(line, lines);
        continue;
      }
      throw new RealmImportError(`unexpected line in the archive: ${next.value.slice(0, 80)}`);
    }
    await client.query('COMMIT');
    committed = true;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (options.storage && importer.storedKeys.length) {
      await options.storage.delete(importer.storedKeys).catch(() => undefined);
    }
    if ((error as { code?: string }).code === '23505' && /realm_(string_id|host)_key/.test(String(error))) {
      throw new RealmImportError(`subdomain '${subdomain}' is already in use`);
    }
    throw error;
  } finally {
    client.release();
    if (!committed) await lines.return?.(undefined);
  }
  progress.done();
  return {
    realmId: importer.newRealmId,
    stringId: subdomain,
    host: importer.host!,
    sourceRealmId: importer.oldRealmId,
    rows: progress.rows,
    stats: importer.stats,
    skipped: importer.skipped,
    files: progress.files,
    fileBytes: progress.fileBytes,
    missingFiles: importer.missingFiles,
    userIds: new Map(importer.map('user_profile').entries()),
  };
}

async function refuseTaken(client: pg.PoolClient, subdomain: string, host: string): Promise<void> {
  const { rows } = await client.query<{ string_id: string; host: string }>(
    'SELECT string_id, host FROM realm WHERE string_id = $1 OR host = $2',
    [subdomain, host.toLowerCase()],
  );
  if (rows.length) {
    const taken = rows[0].string_id === subdomain ? `subdomain '${subdomain}'` : `host '${host}'`;
    throw new RealmImportError(`${taken} is already in use by another organisation`);
  }
}

/** Refuses, before any work, a subdomain or host already taken. */
export async function checkSubdomainFree(db: Db, subdomain: string, host?: string): Promise<void> {
  const realm = await db.realm.findFirst({
    where: { OR: [{ string_id: subdomain }, ...(host ? [{ host: host.toLowerCase() }] : [])] },
    select: { id: true },
  });
  if (realm) throw new RealmImportError(`subdomain '${subdomain}' is already in use by another organisation`);
}
