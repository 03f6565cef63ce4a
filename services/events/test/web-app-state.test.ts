// Zulip's web app boots from register's answer under its home page's arguments (state_data) and
// parses it with zod: one key missing or of the wrong type and the page stays blank. The answer
// is checked, key by key and element by element, against our schemas of what the app requires
// (@teamchat/testing's web-app-state), in an organisation holding some of every collection.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PERMISSION_SETTINGS_NEWER_THAN_WEB_APP, Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { WEB_APP_REGISTER_PARAMS, webAppStateProblems } from '@teamchat/testing';

/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

let stack: Stack;
let uploadsDir: string;
let owner: TestUser;
let member: TestUser;

async function addEmoji(user: TestUser, name: string) {
  const form = new FormData();
  form.append('f1', new Blob([PNG], { type: 'image/png' }), 'img.png');
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  const body = Buffer.from(await request.arrayBuffer());
  const headers = { 'content-type': request.headers.get('content-type')! };
  return user.client.post(`/api/v1/realm/emoji/${name}`, {}, { body, headers });
}

beforeAll(async () => {
  uploadsDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-web-state-'));
  stack = await startStack({
    services: ['messages', 'channels', 'events', 'uploads'],
    env: { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: uploadsDir },
  });
  owner = await stack.createUser({ fullName: 'Own Er', role: Role.OWNER });
  member = await stack.createUser({ fullName: 'Mem Ber' });
  const gone = await stack.createUser({ fullName: 'Gone User' });
  await stack.createUser({ fullName: 'Helper Bot', botType: 1, botOwnerId: owner.id });
  const ok = (response: { status: number; body: unknown }) => {
    if (response.status !== 200) throw new Error(`setting up: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body as Record<string, unknown>;
  };

  // Channels: subscribed, unsubscribed (left), never subscribed; a default channel.
  ok(
    await owner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }, { name: 'left' }],
      principals: [owner.id, member.id],
    }),
  );
  ok(await owner.client.delete('/api/v1/users/me/subscriptions', { subscriptions: ['left'] }));
  ok(await member.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'elsewhere' }] }));
  const generalId = ok(await owner.client.get('/api/v1/get_stream_id', { stream: 'general' })).stream_id as number;
  ok(await owner.client.post('/api/v1/default_streams', { stream_id: generalId }));

  // Messages: a channel unread with a mention, a direct unread, a group direct unread, a star.
  const mention = ok(
    await member.client.post('/api/v1/messages', {
      type: 'stream',
      to: 'general',
      topic: 'hello',
      content: 'hi @**Own Er**',
    }),
  );
  ok(await member.client.post('/api/v1/messages', { type: 'private', to: [owner.id], content: 'just us' }));
  ok(await member.client.post('/api/v1/messages', { type: 'private', to: [owner.id, gone.id], content: 'three' }));
  ok(await owner.client.post('/api/v1/messages/flags', { messages: [mention.id], op: 'add', flag: 'starred' }));
  ok(await owner.client.post('/api/v1/user_topics', { stream_id: generalId, topic: 'hello', visibility_policy: 3 }));

  // The user's own collections.
  ok(await owner.client.post('/api/v1/users/me/alert_words', { alert_words: ['lunch'] }));
  ok(await owner.client.post('/api/v1/users/me/presence', { status: 'active' }));
  ok(await member.client.post('/api/v1/users/me/presence', { status: 'idle' }));
  ok(await owner.client.post('/api/v1/users/me/status', { status_text: 'at lunch', emoji_name: 'car' }));
  ok(await member.client.post('/api/v1/users/me/status', { away: true }));
  ok(await owner.client.post(`/api/v1/users/me/muted_users/${gone.id}`));
  ok(
    await owner.client.post('/api/v1/drafts', {
      drafts: [{ type: 'stream', to: [generalId], topic: 'later', content: 'a draft', timestamp: 1700000000 }],
    }),
  );
  const inAnHour = Math.floor(Date.now() / 1000) + 3600;
  ok(
    await owner.client.post('/api/v1/scheduled_messages', {
      type: 'stream',
      to: generalId,
      topic: 'soon',
      content: 'scheduled',
      scheduled_delivery_timestamp: inAnHour,
    }),
  );
  ok(
    await owner.client.post('/api/v1/scheduled_messages', {
      type: 'direct',
      to: [member.id],
      content: 'scheduled direct',
      scheduled_delivery_timestamp: inAnHour,
    }),
  );
  ok(await owner.client.post('/api/v1/saved_snippets', { title: 'greeting', content: 'Hello!' }));

  // The organisation's collections.
  ok(
    await owner.client.post('/api/v1/user_groups/create', {
      name: 'crew',
      description: 'the crew',
      members: [member.id],
    }),
  );
  ok(await addEmoji(owner, 'party'));
  ok(
    await owner.client.post('/api/v1/realm/filters', {
      pattern: '#(?P<id>[0-9]+)',
      url_template: 'https://tracker.example/{id}',
    }),
  );
  ok(
    await owner.client.post('/api/v1/realm/playgrounds', {
      name: 'Python playground',
      pygments_language: 'python',
      url_template: 'https://python.example/?code={code}',
    }),
  );
  const field = ok(await owner.client.post('/api/v1/realm/profile_fields', { name: 'Team', field_type: 1, hint: '' }));
  ok(await member.client.patch('/api/v1/users/me/profile_data', { data: [{ id: field.id, value: 'Ops' }] }));
  ok(await owner.client.delete(`/api/v1/users/${gone.id}`));
});

afterAll(async () => {
  await stack.close();
  await fs.promises.rm(uploadsDir, { recursive: true, force: true });
});

test("register under the web app's arguments answers every key the app requires, of the right shape", async () => {
  const { status, body } = await owner.client.post('/api/v1/register', WEB_APP_REGISTER_PARAMS);
  expect(status).toBe(200);
  expect(webAppStateProblems(body)).toEqual([]);
  expect(body.ignored_parameters_unsupported).toBeUndefined();

  // The checks above looked at elements, not empty collections.
  const nonEmpty = [
    'realm_users',
    'realm_non_active_users',
    'realm_bots',
    'realm_user_groups',
    'subscriptions',
    'unsubscribed',
    'never_subscribed',
    'realm_default_streams',
    'recent_private_conversations',
    'starred_messages',
    'user_topics',
    'alert_words',
    'muted_users',
    'scheduled_messages',
    'saved_snippets',
    'realm_linkifiers',
    'realm_playgrounds',
    'custom_profile_fields',
    'drafts',
  ];
  expect(nonEmpty.filter((key) => !(Array.isArray(body[key]) && body[key].length > 0))).toEqual([]);
  for (const key of ['realm_emoji', 'user_status', 'presences'])
    expect([key, Object.keys(body[key] ?? {}).length]).toEqual([key, 2 - Number(key === 'realm_emoji')]);
  expect(body.unread_msgs).toMatchObject({ count: 3, mentions: [expect.any(Number)] });
  expect(body.unread_msgs.huddles).toHaveLength(1);
  // A new user has every onboarding step to see but the tour video, which this server has not.
  expect(body.onboarding_steps).toContainEqual({ type: 'one_time_notice', name: 'intro_inbox_view_modal' });
  expect(body.navigation_tour_video_url).toBeNull();
  expect(body.realm_billing).toEqual({ has_pending_sponsorship_request: false });
  // include_streams=false, as the home page asks: the app takes channels from subscriptions.
  expect(body).not.toHaveProperty('streams');
});

test('server_supported_permission_settings lists the permission settings this server stores that Zulip 10.2 has', async () => {
  const { body } = await owner.client.post('/api/v1/register', { fetch_event_types: ['realm'] });
  const listed = body.server_supported_permission_settings as Record<string, Record<string, unknown>>;
  // What the organisation, its channels and its groups hold (the fixtures made some of each).
  const rows = await stack.db.$queryRaw<{ owner_kind: string; name: string }[]>`
    SELECT DISTINCT owner_kind, name FROM group_setting WHERE realm_id = ${stack.realm.id}`;
  // The newer ones are stored and settable, and left out of the table (the served app refuses them).
  const newer = PERMISSION_SETTINGS_NEWER_THAN_WEB_APP;
  const stored = (kind: string, leftOut: readonly string[]) =>
    rows
      .filter((row) => row.owner_kind === kind && !leftOut.includes(row.name))
      .map((row) => row.name)
      .sort();
  expect({
    realm: Object.keys(listed.realm).sort(),
    stream: Object.keys(listed.stream).sort(),
    group: Object.keys(listed.group).sort(),
  }).toEqual({
    realm: stored('realm', newer.realm),
    stream: stored('stream', newer.stream),
    group: stored('user_group', newer.group),
  });
  const storedNames = new Set(rows.map((row) => row.name));
  for (const name of [...newer.realm, ...newer.stream]) expect([name, storedNames.has(name)]).toEqual([name, true]);
  // Zulip's own configurations, e.g. of the settings the app looks up first.
  expect(listed.realm.can_invite_users_group).toEqual({
    require_system_group: false,
    allow_internet_group: false,
    allow_nobody_group: true,
    allow_everyone_group: false,
    default_group_name: 'role:members',
    default_for_system_groups: null,
    allowed_system_groups: [],
  });
  expect(listed.realm.can_create_web_public_channel_group).toMatchObject({
    require_system_group: true,
    allowed_system_groups: ['role:moderators', 'role:administrators', 'role:owners', 'role:nobody'],
  });
  expect(listed.stream.can_administer_channel_group).toMatchObject({ default_group_name: 'stream_creator_or_nobody' });
  expect(listed.group.can_manage_group).toMatchObject({
    default_group_name: 'group_creator',
    default_for_system_groups: 'role:nobody',
  });
});

test('the search stop words are the ones PostgreSQL leaves out of the searches', async () => {
  const { body } = await owner.client.post('/api/v1/register', { fetch_event_types: ['stop_words'] });
  const words = body.stop_words as string[];
  expect(words.length).toBeGreaterThan(100);
  // A word is left out when the search configuration makes nothing of it.
  const [{ kept }] = await stack.db.$queryRaw<{ kept: string[] }[]>`
    SELECT array_agg(w) FILTER (WHERE to_tsvector('english', w) <> ''::tsvector) AS kept
      FROM unnest(${[...words, 'b', 'lunch']}::text[]) AS w`;
  // Zulip's own list also has single letters; this server's searches keep them.
  expect(kept).toEqual(['b', 'lunch']);
});
