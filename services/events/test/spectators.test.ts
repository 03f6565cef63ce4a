// Spectators: logged-out visitors reading the web-public channels of an organisation that
// admits them (Zulip's events_register_backend and get_messages_backend for an anonymous
// request), through the gateway, from /json only as Zulip's rest_dispatch allows.
import { NOT_LOGGED_IN } from '@teamchat/core';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

let stack: Stack;
let owner: TestUser;
let webPublic: { id: number; name: string };
let publicChannel: { id: number; name: string };
const webPublicIds: number[] = [];
let publicId: number;

const WEB_PUBLIC_NARROW = [{ operator: 'channels', operand: 'web-public', negated: false }];

async function send(to: number, topic: string, content: string): Promise<number> {
  const { status, body } = await owner.client.post('/api/v1/messages', { type: 'stream', to, topic, content });
  expect(status).toBe(200);
  return body.id as number;
}

async function setSpectatorAccess(enabled: boolean): Promise<void> {
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: enabled } });
  await stack.fixtureWritten();
}

beforeAll(async () => {
  stack = await startStack({ services: ['events', 'messages', 'channels'] });
  owner = await stack.createUser({ role: Role.OWNER, fullName: 'Olive Owner' });
  publicChannel = await stack.createStream({ name: 'staff room', subscribers: [owner.id] });
  publicId = await send(publicChannel.id, 'rota', 'members only');
});
afterAll(() => stack.close());

function expectNotLoggedIn(
  response: { status: number; body: unknown; headers: Record<string, unknown> },
  scheme: string,
) {
  expectError(response as never, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  expect(response.headers['www-authenticate']).toBe(`${scheme} realm="zulip"`);
}

describe('an organisation that does not admit spectators', () => {
  test('refuses an anonymous register and fetch as Zulip does (MissingAuthenticationError)', async () => {
    const anonymous = stack.anonymous();
    expectNotLoggedIn(await anonymous.post('/json/register'), 'Session');
    expectNotLoggedIn(
      await anonymous.get('/json/messages', { narrow: WEB_PUBLIC_NARROW, anchor: 'newest', num_before: 10 }),
      'Session',
    );
  });

  test('with spectator access on but no web-public channel, still refuses', async () => {
    await setSpectatorAccess(true);
    expectNotLoggedIn(await stack.anonymous().post('/json/register'), 'Session');
  });
});

describe('an organisation with a web-public channel and spectator access', () => {
  beforeAll(async () => {
    await setSpectatorAccess(true);
    webPublic = await stack.createStream({ name: 'announcements', isWebPublic: true, subscribers: [owner.id] });
    webPublicIds.push(await send(webPublic.id, 'welcome', 'hello **world**'));
    webPublicIds.push(await send(webPublic.id, 'welcome', 'second'));
  });

  test('POST /json/register answers the spectator state: no queue, a guest with id 0, the web-public channels', async () => {
    const { status, body } = await stack.anonymous().post('/json/register', {
      apply_markdown: true,
      client_capabilities: { user_settings_object: true, archived_channels: true },
    });
    expect(status).toBe(200);
    expect(body.queue_id).toBeNull();
    expect(body).not.toHaveProperty('last_event_id');
    expect(body).not.toHaveProperty('streams');
    expect(body).toMatchObject({
      user_id: 0,
      email: 'username@example.com',
      delivery_email: 'username@example.com',
      full_name: 'Anonymous User',
      is_admin: false,
      is_owner: false,
      is_moderator: false,
      is_guest: true,
      can_create_streams: false,
      can_invite_others_to_realm: false,
      realm_allow_message_editing: false,
      realm_presence_disabled: true,
      realm_enable_spectator_access: true,
      server_web_public_streams_enabled: true,
      presences: {},
      alert_words: [],
      drafts: [],
      starred_messages: [],
      recent_private_conversations: [],
      realm_bots: [],
      muted_users: [],
      user_topics: [],
      onboarding_steps: [],
      custom_profile_fields: [],
      realm_default_streams: [],
      user_status: {},
      max_message_id: -1,
      unread_msgs: { count: 0, pms: [], streams: [], huddles: [], mentions: [], old_unreads_missing: false },
      unsubscribed: [],
      never_subscribed: [],
    });
    expect(body.user_settings).toMatchObject({ web_home_view: 'recent_topics', default_language: 'en' });
    // Every web-public channel, as a new user's subscription would be; no other channel.
    expect(body.subscriptions).toEqual([
      expect.objectContaining({
        stream_id: webPublic.id,
        name: 'announcements',
        is_web_public: true,
        color: '#76ce90',
        is_muted: false,
        in_home_view: true,
        pin_to_top: false,
        desktop_notifications: true,
        audible_notifications: true,
        push_notifications: true,
        email_notifications: true,
        wildcard_mentions_notify: true,
      }),
    ]);
    expect(body.subscriptions[0]).not.toHaveProperty('subscribers');
    // People, as a guest sees them, without their profile data.
    const ownerDict = body.realm_users.find((user: { user_id: number }) => user.user_id === owner.id);
    expect(ownerDict).toMatchObject({ full_name: 'Olive Owner', is_owner: true });
    expect(ownerDict).not.toHaveProperty('profile_data');
  });

  test("a spectator's language is their language cookie's, else the organisation's", async () => {
    const languageWith = async (cookie: string | undefined) => {
      const headers: Record<string, string> = cookie === undefined ? {} : { cookie };
      const { status, body } = await stack
        .anonymous()
        .post('/json/register', { fetch_event_types: ['user_settings'] }, { headers });
      expect(status).toBe(200);
      return body.user_settings.default_language;
    };
    expect(await languageWith('django_language=de')).toBe('de');
    expect(await languageWith('other=1; django_language=pt-br')).toBe('pt-br');
    expect(await languageWith(undefined)).toBe('en');
    expect(await languageWith('django_language=<script>')).toBe('en');
  });

  test('fetch_event_types picks the state as for a user', async () => {
    const { status, body } = await stack.anonymous().post('/json/register', { fetch_event_types: ['message'] });
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(
      [
        'max_message_id',
        'msg',
        'queue_id',
        'result',
        'zulip_feature_level',
        'zulip_merge_base',
        'zulip_version',
      ].sort(),
    );
  });

  test('refuses what an anonymous register may not ask for, in Zulip words', async () => {
    const anonymous = stack.anonymous();
    for (const key of ['client_gravatar', 'include_subscribers']) {
      expectError(
        await anonymous.post('/json/register', { [key]: true }),
        400,
        'BAD_REQUEST',
        `Invalid '${key}' parameter for anonymous request`,
      );
    }
  });

  test('/api/v1 keeps its credentials (Zulip 10.2 admits spectators on /json only)', async () => {
    const anonymous = stack.anonymous();
    expectNotLoggedIn(await anonymous.post('/api/v1/register'), 'Basic');
    expectNotLoggedIn(
      await anonymous.get('/api/v1/messages', { narrow: WEB_PUBLIC_NARROW, anchor: 'newest', num_before: 10 }),
      'Basic',
    );
  });

  test('GET /json/messages answers the web-public messages, each read, as a logged-in fetch gives them', async () => {
    const params = { narrow: WEB_PUBLIC_NARROW, anchor: 'newest', num_before: 10, num_after: 0 };
    const { status, body } = await stack.anonymous().get('/json/messages', params);
    expect(status).toBe(200);
    expect(body.messages.map((message: { id: number }) => message.id)).toEqual(webPublicIds);
    expect(body).toMatchObject({ found_newest: true, found_oldest: true, history_limited: false });
    for (const message of body.messages) expect(message.flags).toEqual(['read']);
    // The owner's own fetch of the same range, avatars included: the same dicts but for the flags.
    const mine = await owner.client.get('/api/v1/messages', { ...params, client_gravatar: false });
    const withoutFlags = (messages: Record<string, unknown>[]) => messages.map(({ flags: _flags, ...rest }) => rest);
    expect(withoutFlags(body.messages)).toEqual(withoutFlags(mine.body.messages));
    expect(body.messages[0].content).toBe('<p>hello <strong>world</strong></p>');
  });

  test('a channel narrow, in:home and message_ids keep to the web-public channels', async () => {
    const anonymous = stack.anonymous();
    const inChannel = await anonymous.get('/json/messages', {
      narrow: [
        ...WEB_PUBLIC_NARROW,
        { operator: 'channel', operand: webPublic.id },
        { operator: 'in', operand: 'home' },
      ],
      anchor: 'oldest',
      num_after: 10,
    });
    expect(inChannel.status).toBe(200);
    expect(inChannel.body.messages.map((message: { id: number }) => message.id)).toEqual(webPublicIds);

    const byIds = await anonymous.get('/json/messages', {
      narrow: WEB_PUBLIC_NARROW,
      message_ids: [publicId, ...webPublicIds],
    });
    expect(byIds.status).toBe(200);
    expect(byIds.body.messages.map((message: { id: number }) => message.id)).toEqual(webPublicIds);

    expectError(
      await anonymous.get('/json/messages', {
        narrow: [...WEB_PUBLIC_NARROW, { operator: 'channel', operand: publicChannel.name }],
        anchor: 'newest',
        num_before: 10,
      }),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: unknown web-public channel staff room',
    );
  });

  test("GET /json/users/me/{id}/topics lists a web-public channel's topics, no other channel's", async () => {
    const anonymous = stack.anonymous();
    const topics = await anonymous.get(`/json/users/me/${webPublic.id}/topics`);
    expect(topics.status).toBe(200);
    expect(topics.body.topics).toEqual([{ name: 'welcome', max_id: webPublicIds[1] }]);
    expectError(
      await anonymous.get(`/json/users/me/${publicChannel.id}/topics`),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    expectNotLoggedIn(await anonymous.get(`/api/v1/users/me/${webPublic.id}/topics`), 'Basic');
  });

  test('any other narrow is refused as unauthenticated', async () => {
    const anonymous = stack.anonymous();
    for (const narrow of [
      null,
      [{ operator: 'channel', operand: webPublic.id }],
      [...WEB_PUBLIC_NARROW, { operator: 'is', operand: 'starred' }],
      [...WEB_PUBLIC_NARROW, { operator: 'dm', operand: [owner.id] }],
      [{ operator: 'channels', operand: 'web-public', negated: true }],
    ]) {
      const params = narrow ? { narrow, anchor: 'newest', num_before: 5 } : { anchor: 'newest', num_before: 5 };
      expectNotLoggedIn(await anonymous.get('/json/messages', params), 'Session');
    }
  });

  test('the server setting WEB_PUBLIC_STREAMS_ENABLED off closes it again', async () => {
    const closed = await startStack({ services: ['events', 'messages'], env: { WEB_PUBLIC_STREAMS_ENABLED: 'false' } });
    try {
      await closed.db.realm.update({ where: { id: closed.realm.id }, data: { enable_spectator_access: true } });
      await closed.createStream({ name: 'open', isWebPublic: true });
      await closed.fixtureWritten();
      expectNotLoggedIn(await closed.anonymous().post('/json/register'), 'Session');
      // Register tells clients so (Zulip's server_web_public_streams_enabled).
      const user = await closed.createUser();
      const state = await user.client.post('/api/v1/register', { fetch_event_types: ['realm'] });
      expect(state.body.server_web_public_streams_enabled).toBe(false);
    } finally {
      await closed.close();
    }
  });
});
