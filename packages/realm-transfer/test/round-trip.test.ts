// An organisation with every kind of object, made through the API, backed up with
// `manage export-realm` (the command's code path), restored with `manage import-realm` into
// another database that already holds an organisation (so every id changes), and then asked
// everything again through the API of services running on the restored database: register's
// state under the web app's arguments, every narrow of GET /messages with flags, attachments,
// drafts, snippets, scheduled messages, the uploaded files' bytes, for an owner, a member and a
// guest. Both answers must be equal once ids are put back through the import's mapping and the
// organisation's URL is set aside; a field lost on the way fails the comparison.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Role } from '@teamchat/domain';
import { doIssueApiKey } from '@teamchat/service-users';
import { runCommand } from '@teamchat/service-users/src/manage';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { createStorage, type ObjectStorage } from '@teamchat/storage';
import { ApiClient, ONE_PIXEL_PNG, WEB_APP_REGISTER_PARAMS, type Params } from '@teamchat/testing';

jest.setTimeout(600_000);

const SERVICES = ['messages', 'channels', 'uploads', 'events'] as const;

interface Side {
  stack: Stack;
  dir: string;
  storage: ObjectStorage;
}

async function startSide(): Promise<Side> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-transfer-'));
  const env = { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: dir };
  const stack = await startStack({ services: [...SERVICES], env });
  return { stack, dir, storage: createStorage({ kind: 'local', directory: dir }) };
}

function multipart(field: string, filename: string, content: Buffer, contentType: string) {
  const boundary = crypto.randomBytes(12).toString('hex');
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${contentType}\r\n\r\n`,
    ),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

async function ok<T = any>(promise: Promise<{ status: number; body: T }>): Promise<T> {
  const response = await promise;
  if (response.status !== 200) throw new Error(`${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

let source: Side;
let target: Side;
const people: Record<'owner' | 'member' | 'guest' | 'other', TestUser> = {} as never;

beforeAll(async () => {
  source = await startSide();
  target = await startSide();
});

afterAll(async () => {
  for (const side of [source, target]) {
    if (!side) continue;
    await side.stack.close();
    await side.storage.close();
    await fs.promises.rm(side.dir, { recursive: true, force: true });
  }
});

/** Everything a client can make, through the API. */
async function seed(): Promise<void> {
  const stack = source.stack;
  people.owner = await stack.createUser({ fullName: 'Olive Owner', email: 'olive@example.com', role: Role.OWNER });
  people.member = await stack.createUser({ fullName: 'Mel Member', email: 'mel@example.com' });
  people.guest = await stack.createUser({ fullName: 'Gus Guest', email: 'gus@example.com', role: Role.GUEST });
  people.other = await stack.createUser({ fullName: 'Oto Other', email: 'oto@example.com' });
  const { owner, member, guest, other } = people;
  const all = [owner, member, guest, other];

  // Organisation settings, a custom emoji, linkifiers, playgrounds, profile fields.
  await ok(owner.client.patch('/api/v1/realm', { description: 'Restored **intact**', waiting_period_threshold: 3 }));
  const emojiUpload = multipart('file', 'party.png', ONE_PIXEL_PNG, 'image/png');
  await ok(owner.client.post('/api/v1/realm/emoji/party_parrot', {}, emojiUpload));
  await ok(
    owner.client.post('/api/v1/realm/filters', {
      pattern: '#(?P<id>[0-9]+)',
      url_template: 'https://tracker.example.com/{id}',
    }),
  );
  await ok(
    owner.client.post('/api/v1/realm/playgrounds', {
      name: 'Python sandbox',
      pygments_language: 'python',
      url_template: 'https://python.example.com?code={code}',
    }),
  );
  const text = await ok(
    owner.client.post('/api/v1/realm/profile_fields', { name: 'Team', hint: 'Which team', field_type: 1 }),
  );
  const mentor = await ok(
    owner.client.post('/api/v1/realm/profile_fields', { name: 'Mentor', hint: '', field_type: 6 }),
  );
  await ok(
    member.client.patch('/api/v1/users/me/profile_data', {
      data: JSON.stringify([
        { id: text.id, value: 'Platform' },
        { id: mentor.id, value: [owner.id] },
      ]),
    }),
  );

  // Groups, and a permission held by a group.
  const group = await ok(
    owner.client.post('/api/v1/user_groups/create', {
      name: 'reviewers',
      description: 'Code reviewers',
      members: JSON.stringify([member.id, other.id]),
    }),
  );
  // Channels: public, private (the guest in neither's history unless subscribed).
  await ok(
    owner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: JSON.stringify([{ name: 'general', description: 'Everything #general' }]),
      principals: JSON.stringify(all.map((user) => user.id)),
    }),
  );
  await ok(
    owner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: JSON.stringify([{ name: 'secret plans' }]),
      principals: JSON.stringify([owner.id, member.id]),
      invite_only: true,
    }),
  );
  const streams = (await ok(owner.client.get('/api/v1/streams'))).streams as { stream_id: number; name: string }[];
  const general = streams.find((stream) => stream.name === 'general')!.stream_id;
  const secret = streams.find((stream) => stream.name === 'secret plans')!.stream_id;
  await ok(
    member.client.post('/api/v1/users/me/subscriptions/properties', {
      subscription_data: JSON.stringify([
        { stream_id: general, property: 'color', value: '#76ce90' },
        { stream_id: general, property: 'pin_to_top', value: true },
      ]),
    }),
  );

  await ok(
    owner.client.patch('/api/v1/realm', {
      can_create_public_channel_group: JSON.stringify({
        new: { direct_members: [owner.id], direct_subgroups: [group.group_id] },
      }),
    }),
  );

  // An upload, linked from a message.
  const file = multipart('file', 'notes.txt', Buffer.from('the minutes of the meeting\n'.repeat(50)), 'text/plain');
  const uploaded = await ok(owner.client.post('/api/v1/user_uploads', {}, file));
  const uploadUrl: string = uploaded.url ?? uploaded.uri;

  // Messages: channel, private channel, direct, group direct; mentions, a channel link, the upload.
  const send = async (user: TestUser, params: Params) =>
    (await ok(user.client.post('/api/v1/messages', params))).id as number;
  const first = await send(owner, {
    type: 'stream',
    to: general,
    topic: 'kickoff',
    content: `Hello @**Mel Member|${member.id}** and @*reviewers*, see #**secret plans** and [notes](${uploadUrl}) :party_parrot:`,
  });
  const second = await send(member, { type: 'stream', to: general, topic: 'kickoff', content: 'Hi all, @**all**' });
  await send(guest, { type: 'stream', to: general, topic: 'guests', content: 'A guest writes #123' });
  await send(owner, { type: 'stream', to: secret, topic: 'plan', content: 'Only for us' });
  const dm = await send(owner, { type: 'private', to: JSON.stringify([member.id]), content: 'A direct word' });
  await send(member, { type: 'private', to: JSON.stringify([owner.id, other.id]), content: 'A group direct word' });
  await send(guest, { type: 'private', to: JSON.stringify([owner.id]), content: 'Guest to owner' });
  await send(owner, {
    type: 'stream',
    to: general,
    topic: 'code',
    content: '```python\nprint("hi")\n```',
  });

  // An edit (history kept), a topic move.
  await ok(owner.client.patch(`/api/v1/messages/${first}`, { content: `Hello again @**Mel Member|${member.id}**` }));
  await ok(
    member.client.patch(`/api/v1/messages/${second}`, { topic: 'kickoff (moved)', propagate_mode: 'change_one' }),
  );

  // Flags per user: read, starred; reactions, one with the custom emoji.
  await ok(
    member.client.post('/api/v1/messages/flags', { messages: JSON.stringify([first]), op: 'add', flag: 'read' }),
  );
  await ok(
    member.client.post('/api/v1/messages/flags', { messages: JSON.stringify([dm]), op: 'add', flag: 'starred' }),
  );
  await ok(
    owner.client.post('/api/v1/messages/flags', { messages: JSON.stringify([second]), op: 'add', flag: 'starred' }),
  );
  await ok(
    member.client.post(`/api/v1/messages/${first}/reactions`, {
      emoji_name: 'party_parrot',
      reaction_type: 'realm_emoji',
    }),
  );
  await ok(guest.client.post(`/api/v1/messages/${first}/reactions`, { emoji_name: 'smile' }));

  // Personal state: settings, status, drafts, snippets, muted users, topics, alert words, scheduled messages.
  await ok(member.client.patch('/api/v1/settings', { twenty_four_hour_time: true, emojiset: 'text' }));
  await ok(member.client.post('/api/v1/users/me/status', { status_text: 'On holiday', emoji_name: 'party_parrot' }));
  await ok(
    member.client.post('/api/v1/drafts', {
      drafts: JSON.stringify([
        { type: 'stream', to: [general], topic: 'kickoff', content: 'half a thought', timestamp: 1_700_000_000 },
        { type: 'private', to: [owner.id], topic: '', content: 'to the owner', timestamp: 1_700_000_100 },
      ]),
    }),
  );
  await ok(member.client.post('/api/v1/saved_snippets', { title: 'Greeting', content: 'Hello and welcome!' }));
  await ok(member.client.post(`/api/v1/users/me/muted_users/${other.id}`));
  await ok(member.client.post('/api/v1/user_topics', { stream_id: general, topic: 'guests', visibility_policy: 1 }));
  await ok(owner.client.post('/api/v1/user_topics', { stream_id: general, topic: 'code', visibility_policy: 3 }));
  await ok(member.client.post('/api/v1/users/me/alert_words', { alert_words: JSON.stringify(['deadline']) }));
  await ok(
    member.client.post('/api/v1/scheduled_messages', {
      type: 'stream',
      to: general,
      topic: 'later',
      content: 'A message for next year',
      scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 365 * 86400,
    }),
  );
  // A message after the alert word, muting and flags: its flags come from those.
  await send(other, { type: 'stream', to: general, topic: 'kickoff', content: 'The deadline is Friday' });
  // A poll and a vote (submessages), a channel folder, a navigation view.
  const poll = await send(owner, {
    type: 'stream',
    to: general,
    topic: 'lunch',
    content: '/poll Lunch?\nPizza\nSushi',
  });
  await ok(
    member.client.post('/api/v1/submessage', {
      message_id: poll,
      msg_type: 'widget',
      content: JSON.stringify({ type: 'vote', key: 'canned,1', vote: 1 }),
    }),
  );
  await ok(owner.client.post('/api/v1/channel_folders/create', { name: 'Projects', description: 'Ongoing **work**' }));
  await ok(
    member.client.post('/api/v1/navigation_views', {
      fragment: `narrow/channel/${general}-general`,
      is_pinned: true,
      name: 'General',
    }),
  );
  // An avatar.
  await ok(member.client.post('/api/v1/users/me/avatar', {}, multipart('file', 'me.png', ONE_PIXEL_PNG, 'image/png')));
}

describe('manage export-realm and import-realm', () => {
  test('a restored organisation answers every client request as the original did', async () => {
    await seed();
    // The target already holds an organisation with rows of every kind: no id of the archive is free there.
    const native = await target.stack.createUser({ fullName: 'Native', email: 'native@example.com' });
    await target.stack.createStream({ name: 'native channel', subscribers: [native.id] });
    await ok(
      native.client.post('/api/v1/messages', { type: 'private', to: JSON.stringify([native.id]), content: 'x' }),
    );

    const archive = path.join(source.dir, 'backup', 'acme.jsonl.gz');
    const progress: string[] = [];
    const out: string[] = [];
    await runCommand(
      source.stack.deps,
      ['export-realm', '--realm', source.stack.realm.host, '--output', archive],
      (line) => out.push(line),
      { storage: source.storage, progress: (line) => progress.push(line), progressIntervalMs: 0 },
    );
    expect(out.join('\n')).toMatch(/^exported realm \d+ .* rows, \d+ files/);
    expect(progress.some((line) => /^export: message \d+\/\d+; rows \d+\/\d+ \(\d+\/s\)/.test(line))).toBe(true);

    const targetHost = `restored.${new URL(target.stack.gatewayUrl).host}`;
    await runCommand(
      target.stack.deps,
      ['import-realm', archive, '--subdomain', 'restored', '--host', targetHost],
      (line) => out.push(line),
      { storage: target.storage, progress: (line) => progress.push(line), progressIntervalMs: 0 },
    );
    expect(out.at(-1)).toMatch(/^imported realm \d+ /);
    expect(progress.some((line) => /^import: user_message \d+\/\d+/.test(line))).toBe(true);

    // The same subdomain again: refused, nothing written.
    const realms = await target.stack.db.realm.count();
    await expect(
      runCommand(target.stack.deps, ['import-realm', archive, '--subdomain', 'restored'], () => undefined, {
        storage: target.storage,
        progress: () => undefined,
      }),
    ).rejects.toThrow("subdomain 'restored' is already in use");
    expect(await target.stack.db.realm.count()).toBe(realms);

    const restored = await target.stack.db.realm.findUniqueOrThrow({ where: { string_id: 'restored' } });
    const ids = await idTranslation(source.stack, source.stack.realm.id, target.stack, restored.id);
    for (const role of ['owner', 'member', 'guest'] as const) {
      const before = people[role];
      const afterId = [...ids.user].find(([, sourceId]) => sourceId === before.id)![0];
      const key = await doIssueApiKey(target.stack.deps, afterId, 'test');
      const after = new ApiClient(target.stack.gatewayUrl, { email: before.deliveryEmail, apiKey: key }).withHost(
        targetHost,
      );
      const original = await everything(before.client, source);
      if (role === 'member') expectRich(original);
      if (role === 'owner') expectFiles(original);
      const copy = await everything(after, target);
      const norm = normalizer(ids, [source.stack.realm, restored]);
      expect({ role, ...norm(copy, 'target') }).toEqual({ role, ...norm(original, 'source') });
    }
  });
});

/** The seed reached the API (else an empty comparison could pass). */
function expectRich(state: Record<string, any>): void {
  const register = state.register;
  expect(Object.values(register.realm_emoji).map((emoji: any) => emoji.name)).toContain('party_parrot');
  expect(register.starred_messages).toHaveLength(1);
  expect(register.muted_users).toHaveLength(1);
  expect(register.user_topics.length).toBeGreaterThanOrEqual(1);
  expect(register.drafts).toHaveLength(2);
  expect(register.saved_snippets).toHaveLength(1);
  expect(register.scheduled_messages).toHaveLength(1);
  expect(register.alert_words).toEqual(['deadline']);
  expect(register.realm_linkifiers).toHaveLength(1);
  expect(register.realm_playgrounds).toHaveLength(1);
  expect(register.custom_profile_fields).toHaveLength(2);
  expect(register.realm_user_groups.some((group: any) => group.name === 'reviewers')).toBe(true);
  expect(register.user_status[String(register.user_id)]).toMatchObject({ status_text: 'On holiday' });
  expect((state['messages:dms'] as unknown[]).length).toBeGreaterThanOrEqual(2);
  expect((state['messages:mentioned'] as unknown[]).length).toBeGreaterThanOrEqual(1);
  expect((state['messages:alerted'] as unknown[]).length).toBe(1);
  const messages = state['messages:all'] as any[];
  expect(messages.some((message) => message.reactions.some((r: any) => r.reaction_type === 'realm_emoji'))).toBe(true);
  expect(messages.some((message) => message.edit_history?.length)).toBe(true);
  expect(messages.some((message) => message.submessages.length === 2)).toBe(true);
  expect(register.channel_folders).toHaveLength(1);
  expect(register.navigation_views).toHaveLength(1);
  expect(messages.some((message) => message.flags.includes('read'))).toBe(true);
}

/** The owner's upload, the member's avatar and the custom emoji were served (their bytes are compared). */
function expectFiles(state: Record<string, unknown>): void {
  const files = Object.entries(state.files as Record<string, string>);
  for (const kind of ['upload:', 'avatar:mel@example.com', 'emoji:party_parrot']) {
    expect({ kind, served: files.some(([name, hash]) => name.startsWith(kind) && hash.startsWith('200:')) }).toEqual({
      kind,
      served: true,
    });
  }
}

/** Everything the API tells one user. */
async function everything(client: ApiClient, side: Side): Promise<Record<string, unknown>> {
  const register = await ok(client.post('/api/v1/register', encode(WEB_APP_REGISTER_PARAMS)));
  const state: Record<string, unknown> = { register: dropVolatile(register as Record<string, unknown>) };
  const narrows: Record<string, unknown[]> = {
    all: [],
    starred: [{ operator: 'is', operand: 'starred' }],
    mentioned: [{ operator: 'is', operand: 'mentioned' }],
    unread: [{ operator: 'is', operand: 'unread' }],
    dms: [{ operator: 'is', operand: 'dm' }],
    general: [{ operator: 'channel', operand: 'general' }],
    secret: [{ operator: 'channel', operand: 'secret plans' }],
    attachments: [{ operator: 'has', operand: 'attachment' }],
    alerted: [{ operator: 'is', operand: 'alerted' }],
    followed: [{ operator: 'is', operand: 'followed' }],
  };
  for (const [name, narrow] of Object.entries(narrows)) {
    const answer = await client.get('/api/v1/messages', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 1000,
      narrow: JSON.stringify(narrow),
      apply_markdown: true,
      client_gravatar: false,
    });
    state[`messages:${name}`] = answer.status === 200 ? answer.body.messages : answer.body;
  }
  for (const endpoint of ['attachments', 'drafts', 'saved_snippets', 'scheduled_messages', 'users/me/alert_words']) {
    const answer = await client.get(`/api/v1/${endpoint}`);
    state[endpoint] = answer.body;
  }
  // The uploaded files' bytes, through the URLs the API hands out.
  const files: Record<string, string> = {};
  const attachments = (state.attachments as { attachments?: { path_id: string }[] }).attachments ?? [];
  for (const attachment of attachments) {
    const response = await client.get(`/user_uploads/${attachment.path_id}`, {}, { validate: false });
    files[`upload:${attachment.path_id.split('/').slice(1).join('/')}`] = sha(response.raw, response.status);
  }
  const users = (register.realm_users as { avatar_url: string | null; email: string }[]) ?? [];
  for (const user of users) {
    if (user.avatar_url?.startsWith('/user_avatars/')) {
      const response = await new ApiClient(side.stack.gatewayUrl).get(user.avatar_url, {}, { validate: false });
      files[`avatar:${user.email}`] = sha(response.raw, response.status);
    }
  }
  for (const emoji of Object.values(register.realm_emoji as Record<string, { source_url: string; name: string }>)) {
    const response = await new ApiClient(side.stack.gatewayUrl).get(emoji.source_url, {}, { validate: false });
    files[`emoji:${emoji.name}`] = sha(response.raw, response.status);
  }
  state.files = files;
  return state;
}

function sha(raw: Buffer, status: number): string {
  return `${status}:${crypto.createHash('sha256').update(raw).digest('hex')}`;
}

function encode(params: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(params).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]),
  );
}

/** Register's fields that differ between any two registrations (its queue, the server's clock). */
function dropVolatile(register: Record<string, unknown>): Record<string, unknown> {
  const {
    queue_id: _queue,
    last_event_id: _last,
    server_generation: _generation,
    result: _result,
    server_timestamp: _timestamp,
    msg: _msg,
    ...rest
  } = register;
  return rest;
}

type IdTables = 'user' | 'stream' | 'group' | 'message' | 'field' | 'emoji' | 'attachment' | 'other';

interface Ids {
  user: Map<number, number>;
  stream: Map<number, number>;
  group: Map<number, number>;
  message: Map<number, number>;
  field: Map<number, number>;
  emoji: Map<number, number>;
  attachment: Map<number, number>;
  /** Ids of tables nothing points at (drafts, snippets, scheduled messages, linkifiers...), by table. */
  rank: Map<string, Map<number, number>>;
}

/** target id -> source id of every row, matched by order (the import keeps each table's order). */
async function idTranslation(from: Stack, fromRealm: number, to: Stack, toRealm: number): Promise<Ids> {
  const pair = async (sql: string): Promise<Map<number, number>> => {
    const a = (await from.db.$queryRawUnsafe<{ id: number }[]>(sql, fromRealm)).map((row) => Number(row.id));
    const b = (await to.db.$queryRawUnsafe<{ id: number }[]>(sql, toRealm)).map((row) => Number(row.id));
    expect(b.length).toBe(a.length);
    return new Map(b.map((id, i) => [id, a[i]]));
  };
  const users = 'SELECT id FROM user_profile WHERE realm_id = $1 ORDER BY id';
  const rank = new Map<string, Map<number, number>>();
  for (const [table, where] of [
    ['draft', `user_profile_id IN (${users.replace(' ORDER BY id', '')})`],
    ['saved_snippet', 'realm_id = $1'],
    ['scheduled_message', 'realm_id = $1'],
    ['linkifier', 'realm_id = $1'],
    ['realm_playground', 'realm_id = $1'],
    ['submessage', 'message_id IN (SELECT id FROM message WHERE realm_id = $1)'],
  ]) {
    rank.set(table, await pair(`SELECT id FROM ${table} WHERE ${where} ORDER BY id`));
  }
  // The server's system bots (another organisation, the same on both servers): paired by email.
  const bots = `SELECT id FROM user_profile WHERE realm_id IN (SELECT id FROM realm WHERE string_id = 'zulipinternal') AND $1::int IS NOT NULL ORDER BY delivery_email`;
  const user = await pair(users);
  for (const [to, fromId] of await pair(bots)) user.set(to, fromId);
  return {
    user,
    stream: await pair('SELECT id FROM stream WHERE realm_id = $1 ORDER BY id'),
    group: await pair('SELECT id FROM user_group WHERE realm_id = $1 ORDER BY id'),
    message: await pair('SELECT id FROM message WHERE realm_id = $1 ORDER BY id'),
    field: await pair('SELECT id FROM custom_profile_field WHERE realm_id = $1 ORDER BY id'),
    emoji: await pair('SELECT id FROM realm_emoji WHERE realm_id = $1 ORDER BY id'),
    attachment: await pair('SELECT id FROM attachment WHERE realm_id = $1 ORDER BY id'),
    rank,
  };
}

/** Which table an id under this key belongs to. */
const KEY_TABLE: Record<string, IdTables | string> = {
  user_id: 'user',
  user_ids: 'user',
  sender_id: 'user',
  owner_id: 'user',
  bot_owner_id: 'user',
  author_id: 'user',
  acting_user_id: 'user',
  creator_id: 'user',
  direct_members: 'user',
  members: 'user',
  subscribers: 'user',
  partial_subscribers: 'user',
  muted_user_id: 'user',
  other_user_id: 'user',
  user_ids_string: 'user',
  to: 'user',
  stream_id: 'stream',
  stream_ids: 'stream',
  prev_stream: 'stream',
  realm_new_stream_announcements_stream_id: 'stream',
  realm_signup_announcements_stream_id: 'stream',
  realm_zulip_update_announcements_stream_id: 'stream',
  direct_subgroups: 'group',
  direct_subgroup_ids: 'group',
  starred_messages: 'message',
  subgroups: 'group',
  group_id: 'group',
  message_id: 'message',
  message_ids: 'message',
  mentions: 'message',
  messages: 'message',
  max_message_id: 'message',
  first_message_id: 'message',
  unread_message_ids: 'message',
  scheduled_message_id: 'scheduled_message',
};

/** The id-bearing `id` of objects found under these keys. */
const ID_OF_LIST: Record<string, IdTables | string> = {
  realm_users: 'user',
  display_recipient: 'user',
  muted_users: 'user',
  realm_non_active_users: 'user',
  cross_realm_bots: 'user',
  messages: 'message',
  realm_user_groups: 'group',
  custom_profile_fields: 'field',
  attachments: 'attachment',
  drafts: 'draft',
  saved_snippets: 'saved_snippet',
  realm_linkifiers: 'linkifier',
  realm_playgrounds: 'realm_playground',
  submessages: 'submessage',
  realm_emoji: 'emoji',
};

/** Objects keyed by ids. */
const KEYED_BY: Record<string, IdTables> = {
  user_status: 'user',
  presences: 'user',
  realm_emoji: 'emoji',
  profile_data: 'field',
};

/** Puts target ids back to the source's, and the organisations' URLs and ids to placeholders. */
function normalizer(ids: Ids, realms: { id: number; host: string; string_id: string }[]) {
  const sourceStringId = realms[0].string_id;
  const maps: Record<string, Map<number, number>> = {
    user: ids.user,
    stream: ids.stream,
    group: ids.group,
    message: ids.message,
    field: ids.field,
    emoji: ids.emoji,
    attachment: ids.attachment,
  };
  for (const [table, map] of ids.rank) maps[table] = map;
  const [sourceRealm, targetRealm] = realms;
  const back = (table: string | undefined, value: number, side: 'source' | 'target'): unknown => {
    // -1 and 0 are "none" (no announcements channel...), never ids.
    if (side === 'source' || !table || value <= 0) return value;
    const map = maps[table];
    if (!map) return value;
    return map.get(value) ?? `unmapped ${table} ${value}`;
  };
  const text = (value: string, side: 'source' | 'target'): string => {
    const realm = side === 'source' ? sourceRealm : targetRealm;
    if (value === realm.host.split(':')[0]) return 'REALM_DOMAIN';
    let out = value
      .replaceAll(`http://${realm.host}`, 'REALM_URL')
      .replaceAll(realm.host, 'REALM_HOST')
      .replaceAll(`/user_uploads/${realm.id}/`, '/user_uploads/REALM/')
      .replaceAll(`/user_avatars/${realm.id}/`, '/user_avatars/REALM/')
      .replaceAll(new RegExp(`^${realm.id}/`, 'g'), 'REALM/');
    // The placeholder email domain is the host without its port.
    out = out.replaceAll(`@${realm.host.split(':')[0]}`, '@REALM_HOST');
    if (side === 'target') {
      const swap = (table: string, id: string) => String(maps[table]?.get(Number(id)) ?? `unmapped${id}`);
      out = out
        .replace(/data-user-id="(\d+)"/g, (_, id: string) => `data-user-id="${swap('user', id)}"`)
        .replace(/data-user-group-id="(\d+)"/g, (_, id: string) => `data-user-group-id="${swap('group', id)}"`)
        .replace(/data-stream-id="(\d+)"/g, (_, id: string) => `data-stream-id="${swap('stream', id)}"`)
        .replace(
          /(narrow\/(?:channel|stream)\/)(\d+)/g,
          (_, head: string, id: string) => `${head}${swap('stream', id)}`,
        )
        .replace(/(\/(?:near|with)\/)(\d+)/g, (_, head: string, id: string) => `${head}${swap('message', id)}`)
        .replace(
          /(@_?\*\*[^*|]*\|)(\d+)(\*\*)/g,
          (_, head: string, id: string, tail: string) => `${head}${swap('user', id)}${tail}`,
        )
        .replace(/(\/emoji\/images\/(?:still\/)?)(\d+)/g, (_, head: string) => head);
    } else {
      out = out.replace(/(\/emoji\/images\/(?:still\/)?)(\d+)/g, (_, head: string) => head);
    }
    return out;
  };
  // Opaque ids the server derives (a DM conversation's recipient_id): equal when they label the same things in the same order.
  const labels = { source: new Map<number, number>(), target: new Map<number, number>() };
  const label = (value: number, side: 'source' | 'target') => {
    const seen = labels[side];
    if (!seen.has(value)) seen.set(value, seen.size);
    return `label ${seen.get(value)}`;
  };
  const walk = (value: unknown, side: 'source' | 'target', key: string, listKey: string): unknown => {
    if (key === 'sender_realm_str' && value === (side === 'source' ? sourceStringId : 'restored')) return 'REALM_STR';
    if (key === 'realm_icon_url' && typeof value === 'string')
      return value.replace(/\/avatar\/[0-9a-f]{32}/, '/avatar/HASH');
    if (key === 'recipient_id' && typeof value === 'number') return label(value, side);
    if (key === 'value' && typeof value === 'string' && /^\[\d+(,\d+)*\]$/.test(value)) {
      // A user field's value: a JSON list of user ids.
      return JSON.stringify((JSON.parse(value) as number[]).map((id) => back('user', id, side)));
    }
    if (typeof value === 'string') {
      if (key === 'user_ids_string' && side === 'target') {
        return value
          .split(',')
          .map((id) => back('user', Number(id), side))
          .join(',');
      }
      return text(value, side);
    }
    if (typeof value === 'number') {
      // Group-setting values: a group's id (an anonymous group's members come as lists).
      const table = key === 'id' ? ID_OF_LIST[listKey.split(':')[0]] : /_groups?$/.test(key) ? 'group' : KEY_TABLE[key];
      return back(table, value, side);
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, side, key, key));
    if (value && typeof value === 'object') {
      const keyedBy = KEYED_BY[key];
      const out: Record<string, unknown> = {};
      for (const [name, inner] of Object.entries(value)) {
        const mapped = keyedBy && /^\d+$/.test(name) ? String(back(keyedBy, Number(name), side)) : text(name, side);
        // A draft's or scheduled message's recipients: a channel, or users.
        const field = name === 'to' && (value as { type?: unknown }).type === 'stream' ? 'stream_id' : name;
        out[mapped] = walk(inner, side, field, keyedBy ? key : listKey);
      }
      return out;
    }
    return value;
  };
  return (state: Record<string, unknown>, side: 'source' | 'target') =>
    walk(state, side, '', '') as Record<string, unknown>;
}
