// What the fuzzer needs around the stack: a raw HTTP sender (full control of method, path,
// headers and body bytes), the check of one answer, a fingerprint of the database (to prove
// a refused request changed nothing), and a fixture of existing objects.

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import type { FuzzFixture } from './cases';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

export function closeSender(): void {
  agent.destroy();
}

export function send(
  baseUrl: string,
  request: { method: string; path: string; headers: Record<string, string>; body?: Buffer },
  timeoutMs = 15_000,
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body) headers['content-length'] = request.body.length;
    const req = http.request({
      hostname: url.hostname,
      port: url.port,
      method: request.method,
      path: request.path,
      headers,
      agent,
      timeout: timeoutMs,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= 2_000_000) chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    // The server may answer (413, 401) and close before the whole body is written: the answer
    // is what counts, a write error after it is not.
    req.on('error', reject);
    req.end(request.body);
  });
}

/** The web pages (the web service's, the invitation page): HTML by protocol, their refusals too. */
function isPagePath(endpointPath: string): boolean {
  return (
    endpointPath === '/' ||
    ['/login/', '/accounts/', '/reset/', '/static/', '/join/'].some((prefix) => endpointPath.startsWith(prefix))
  );
}

/** Paths whose answers are not Zulip envelopes by protocol: files, static data (the emoji table), pages, tus. */
function isNonJsonEndpoint(endpointPath: string): boolean {
  return (
    isPagePath(endpointPath) || ['/user_uploads/', '/api/v1/tus'].some((prefix) => endpointPath.startsWith(prefix))
  );
}

/** An absolute path on the server (a storage directory, a temp file, the checkout). */
const SERVER_PATH = /(^|[\s"'(=:])\/(tmp|var|work|home|usr|root|srv|opt|data|app)\//;
/** This checkout and the temp directory, wherever they are (a CI clone may live anywhere). */
const SERVER_DIRECTORIES = [path.resolve(__dirname, '../..'), os.tmpdir()].filter((dir) => dir.length > 1);

function namesServerPath(text: string): boolean {
  return SERVER_PATH.test(text) || SERVER_DIRECTORIES.some((dir) => text.includes(dir + path.sep));
}

/** Null when the answer is acceptable; otherwise what is wrong with it. */
export function checkAnswer(endpointPath: string, response: RawResponse): string | null {
  const { status } = response;
  if (status >= 500) return `status ${status}`;
  if (status < 200) return `status ${status}`;
  const text = response.body.toString('utf8');
  const isJson = /application\/json/.test(String(response.headers['content-type'] ?? ''));
  let body: any;
  if (isJson) {
    try {
      body = JSON.parse(text);
    } catch {
      return `status ${status}: Content-Type JSON but the body does not parse`;
    }
  }
  // No error ever tells the client where the server keeps its files.
  if (status >= 400 && namesServerPath(text)) return `status ${status}: the body names a server path`;
  if (status >= 400) {
    if (!isJson) {
      // tus answers its protocol's refusals with tus' own bodies (as Zulip's tusd does); a web
      // page's refusals are pages too.
      if (
        endpointPath.startsWith('/api/v1/tus') ||
        (isPagePath(endpointPath) && /text\/html/.test(String(response.headers['content-type'])))
      )
        return null;
      return `status ${status}: not a JSON body (${String(response.headers['content-type'])})`;
    }
    if (body?.result !== 'error' || typeof body.msg !== 'string' || typeof body.code !== 'string') {
      return `status ${status}: not a Zulip error envelope`;
    }
    return null;
  }
  if (status >= 300) return null; // redirects (file serving)
  if (isJson)
    return body?.result === 'success' || isNonJsonEndpoint(endpointPath)
      ? null
      : `status ${status}: JSON success without result "success"`;
  return isNonJsonEndpoint(endpointPath) || status === 204 ? null : `status ${status}: not a JSON body`;
}

// --- database fingerprint -------------------------------------------------------------------

/**
 * Tables that change without a request: the outbox (the relay deletes published rows), the
 * event tier's epoch (it writes it while it runs), an export's row (its worker job records its
 * progress long after POST /export/realm answered) and Prisma's bookkeeping.
 */
const VOLATILE_TABLES = new Set(['event_outbox', 'event_tier_epoch', 'realm_export', '_prisma_migrations']);

export type Fingerprint = Map<string, string>;

async function dataTables(stack: Stack): Promise<string[]> {
  const tables = await stack.db.$queryRaw<
    { tablename: string }[]
  >`SELECT tablename::text AS tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`;
  return tables.map((t) => t.tablename).filter((name) => !VOLATILE_TABLES.has(name) && name !== 'fuzz_write_count');
}

/** Every table's row count and a hash of its rows, in one query. */
export async function fingerprintQuery(stack: Stack): Promise<string> {
  return (await dataTables(stack))
    .map(
      (name) =>
        `SELECT '${name}' AS t, count(*)::int AS n, md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) AS h FROM "${name}" x`,
    )
    .join(' UNION ALL ');
}

export async function fingerprint(stack: Stack, query: string): Promise<Fingerprint> {
  const rows = await stack.db.$queryRawUnsafe<{ t: string; n: number; h: string }[]>(query);
  return new Map(rows.map((row) => [row.t, `${row.n}:${row.h}`]));
}

/**
 * Row triggers on every table count committed writes (a rolled-back write counts nothing), so
 * "did anything change?" is one small read; the full fingerprint is only taken when it did.
 */
export async function installWriteCounter(stack: Stack): Promise<void> {
  await stack.db.$executeRawUnsafe(`CREATE TABLE fuzz_write_count (table_name text PRIMARY KEY, n bigint NOT NULL)`);
  await stack.db.$executeRawUnsafe(`
    CREATE FUNCTION fuzz_count_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO fuzz_write_count VALUES (TG_TABLE_NAME, 1) ON CONFLICT (table_name) DO UPDATE SET n = fuzz_write_count.n + 1;
      RETURN NULL;
    END $$`);
  for (const name of await dataTables(stack)) {
    await stack.db.$executeRawUnsafe(
      `CREATE TRIGGER fuzz_count_write AFTER INSERT OR UPDATE OR DELETE ON "${name}" FOR EACH ROW EXECUTE FUNCTION fuzz_count_write()`,
    );
  }
}

export async function writeCount(stack: Stack): Promise<string> {
  const rows = await stack.db.$queryRaw<{ n: string | null }[]>`SELECT sum(n)::text AS n FROM fuzz_write_count`;
  return rows[0]?.n ?? '0';
}

export function changedTables(before: Fingerprint, after: Fingerprint): string[] {
  return [...after.keys()].filter((table) => before.get(table) !== after.get(table));
}

// --- the stack and its objects --------------------------------------------------------------

export interface FuzzStack {
  stack: Stack;
  owner: TestUser;
  member: TestUser;
  fixture: FuzzFixture;
  close(): Promise<void>;
}

export async function startFuzzStack(): Promise<FuzzStack> {
  const uploadsDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-fuzz-'));
  const stack = await startStack({
    services: ['messages', 'channels', 'uploads', 'events', 'worker', 'web'],
    env: { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: uploadsDir, UPLOADS_MAX_FILE_SIZE_MIB: '1' },
  });
  // The fuzzing user is the only owner: every permission check passes (deeper code is
  // reached) and it cannot deactivate or demote itself.
  const owner = await stack.createUser({ email: 'fuzz-owner@example.com', fullName: 'Fuzz Owner', role: Role.OWNER });
  const member = await stack.createUser({
    email: 'fuzz-member@example.com',
    fullName: 'Fuzz Member',
    role: Role.MEMBER,
  });
  await stack.createUser({ email: 'fuzz-bot@example.com', fullName: 'Fuzz Bot', botType: 1, botOwnerId: owner.id });
  await createObjects(stack, owner, member);
  const fixture = await readFixture(stack, owner);
  return {
    stack,
    owner,
    member,
    fixture,
    async close() {
      await stack.close();
      await fs.promises.rm(uploadsDir, { recursive: true, force: true });
    },
  };
}

/** One of each kind of object, made through the API (failures are the other suites' business). */
async function createObjects(stack: Stack, owner: TestUser, member: TestUser): Promise<void> {
  const c = owner.client;
  await c.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: 'fuzz public' }, { name: 'fuzz spare' }],
    principals: [owner.id, member.id],
  });
  await c.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'fuzz private' }], invite_only: true });
  const [stream] = await stack.db.stream.findMany({ where: { name: 'fuzz public' } });
  await c.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 'fuzz topic', content: 'hello **fuzz**' });
  await c.post('/api/v1/messages', { type: 'direct', to: [member.id], content: 'a direct message' });
  await member.client.post('/api/v1/messages', {
    type: 'stream',
    to: stream.id,
    topic: 'fuzz topic',
    content: 'hello back',
  });
  await c.post('/api/v1/drafts', {
    drafts: [{ type: 'stream', to: [stream.id], topic: 'draft topic', content: 'draft', timestamp: 1700000000 }],
  });
  await c.post('/api/v1/user_groups/create', {
    name: 'fuzzers',
    description: 'fuzz group',
    members: [owner.id, member.id],
  });
  await c.post('/api/v1/invites/multiuse', { invite_expires_in_minutes: 60, invite_as: 400, stream_ids: [stream.id] });
  await c.post('/api/v1/realm/filters', { pattern: '#(?P<id>[0-9]+)', url_template: 'https://tracker.example/{id}' });
  await c.post('/api/v1/realm/profile_fields', { name: 'Phone', field_type: 1, hint: 'a number' });
  await c.post('/api/v1/channel_folders/create', { name: 'fuzz folder', description: 'folder' });
  await c.post('/api/v1/navigation_views', { fragment: 'narrow/channel/1', is_pinned: true, name: 'fuzz view' });
  await c.post('/api/v1/users/me/apns_device_token', { token: 'c0ffee', appid: 'org.zulip.Zulip' });
  const boundary = 'fixtureBoundary';
  await c.post(
    '/api/v1/user_uploads',
    {},
    {
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="fuzz.txt"\r\nContent-Type: text/plain\r\n\r\nfuzz file\r\n--${boundary}--\r\n`,
    },
  );
}

async function readFixture(stack: Stack, owner: TestUser): Promise<FuzzFixture> {
  const ids = async (sql: string) =>
    (await stack.db.$queryRawUnsafe<{ id: number | string }[]>(sql)).map((row) => row.id);
  const users = await ids('SELECT id FROM user_profile ORDER BY id');
  const emails = (await stack.db.userProfile.findMany({ select: { email: true } })).map((u) => u.email);
  const attachments = await stack.db.attachment.findMany({ select: { id: true, path_id: true } });
  const invites = await stack.db.multiuseInvite.findMany();
  const fixture: FuzzFixture = {
    authorization: `Basic ${Buffer.from(`${owner.deliveryEmail}:${owner.apiKey}`).toString('base64')}`,
    email: owner.deliveryEmail,
    ids: {
      stream_id: await ids('SELECT id FROM stream ORDER BY id'),
      user: [...users, ...emails],
      user_id: users,
      user_group_id: await ids('SELECT id FROM user_group ORDER BY id'),
      invite_id: invites.map((invite) => invite.id),
      key: invites.map((invite) => String((invite as Record<string, unknown>).key ?? invite.id)),
      filter_id: await ids('SELECT id FROM linkifier ORDER BY id'),
      message_id: await ids('SELECT id FROM message ORDER BY id'),
      draft_id: await ids('SELECT id FROM draft ORDER BY id'),
      attachment_id: attachments.map((a) => a.id),
      channel_folder_id: await ids('SELECT id FROM channel_folder ORDER BY id'),
      path: attachments.map((a) => a.path_id),
      fragment: ['narrow/channel/1', 'inbox'],
    },
    validish: [],
  };
  const validish = new Set<string>();
  for (const values of Object.values(fixture.ids)) {
    for (const value of values.slice(0, 4)) {
      validish.add(String(value));
      validish.add(JSON.stringify([value]));
    }
  }
  validish.add('stream');
  validish.add('direct');
  validish.add('fuzz public');
  validish.add('fuzz topic');
  validish.add('[{"operator":"channel","operand":"fuzz public"}]');
  validish.add('["read"]');
  validish.add('add');
  validish.add('remove');
  fixture.validish = [...validish];
  return fixture;
}
