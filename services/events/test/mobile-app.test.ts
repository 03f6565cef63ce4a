// Zulip's mobile app (zulip-flutter) parses the register response, messages and events with
// strict generated code: one key it requires missing, null, of another JSON type or an enum
// value it does not know, and it cannot load the organisation (register) or drops the event
// queue and starts over (events). The app cannot run here; what it requires is a fixture made
// from its source (scripts/zulip-flutter-contract.mjs), checked against our answers through
// the gateway, with the parameters the app sends.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { settleEvents } from '@teamchat/testing';
import { mobileAppEventClass, mobileAppViolations, MOBILE_CONTRACT } from './support/mobile-contract';

/** zulip-flutter's registerQueue parameters (lib/api/route/events.dart, as lib/model/store.dart calls it). */
const APP_REGISTER_PARAMS = {
  // Newer than this server (a longer idle lifetime for mobile queues): ignored, as Zulip ignores
  // what it does not know, and the queue lives the usual ten minutes.
  idle_queue_timeout: 'mobile',
  apply_markdown: true,
  client_gravatar: false,
  slim_presence: true,
  client_capabilities: {
    notification_settings_null: true,
    bulk_message_deletion: true,
    user_avatar_url_field_optional: true,
    stream_typing_notifications: true,
    user_settings_object: true,
    include_deactivated_groups: true,
    empty_topic_name: true,
    individual_emoji_changes: true,
  },
};

let stack: Stack;
let admin: TestUser;
let app: TestUser;
let streamId: number;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels', 'events', 'uploads'] });
  admin = await stack.createUser({ fullName: 'Ad Min', role: Role.ADMINISTRATOR });
  app = await stack.createUser({ fullName: 'Mo Bile', password: 'mobile password' });
  // Some of everything the snapshot holds: channels, unreads (channel, mention, direct), a
  // starred message, a user group, presence, a topic setting.
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: 'general' }, { name: 'mobile' }],
    principals: [admin.id, app.id],
  });
  streamId = (await admin.client.get('/api/v1/get_stream_id', { stream: 'general' })).body.stream_id;
  const mention = await admin.client.post('/api/v1/messages', {
    type: 'stream',
    to: 'general',
    topic: 'hello',
    content: 'hi @**Mo Bile**',
  });
  await admin.client.post('/api/v1/messages', { type: 'private', to: [app.id], content: 'a direct message' });
  await app.client.post('/api/v1/messages/flags', { messages: [mention.body.id], op: 'add', flag: 'starred' });
  await admin.client.post('/api/v1/user_groups/create', {
    name: 'crew',
    description: 'the crew',
    members: [admin.id, app.id],
  });
  await admin.client.post('/api/v1/users/me/presence', { status: 'active' });
  await app.client.post('/api/v1/user_topics', { stream_id: streamId, topic: 'hello', visibility_policy: 3 });
});
afterAll(() => stack.close());

const register = (user: TestUser) => user.client.post('/api/v1/register', APP_REGISTER_PARAMS);

test(`the fixture is the app's contract (${MOBILE_CONTRACT.source})`, () => {
  // A guard against an empty or truncated fixture, which would make every check below pass.
  expect(Object.keys(MOBILE_CONTRACT.classes).length).toBeGreaterThan(100);
  const required = Object.entries(MOBILE_CONTRACT.classes.InitialSnapshot).filter(([, field]) => field.required);
  expect(required.map(([key]) => key)).toEqual(
    expect.arrayContaining([
      'muted_users',
      'user_status',
      'realm_wildcard_mention_policy',
      'server_emoji_data_url',
      'streams',
      'subscriptions',
      'unread_msgs',
    ]),
  );
});

test('register answers everything the app requires of its initial snapshot', async () => {
  const { status, body } = await register(app);
  expect(status).toBe(200);
  expect(body.ignored_parameters_unsupported).toEqual(['idle_queue_timeout']);
  const violations = mobileAppViolations(body, 'InitialSnapshot', 'register');
  for (const list of ['realm_users', 'realm_non_active_users', 'cross_realm_bots']) {
    expect(Array.isArray(body[list])).toBe(true);
    (body[list] as unknown[]).forEach((user, i) =>
      violations.push(...mobileAppViolations(user, 'User', `register.${list}[${i}]`)),
    );
  }
  expect(violations).toEqual([]);
  // The snapshot is not empty: the checks above looked at real objects.
  expect(body.subscriptions.map((s: { name: string }) => s.name).sort()).toEqual(['general', 'mobile']);
  expect(body.unread_msgs.count).toBe(2);
  expect(body.realm_user_groups.some((g: { name: string }) => g.name === 'crew')).toBe(true);
  expect(body).toMatchObject({ muted_users: [], user_status: {}, realm_wildcard_mention_policy: 5 });
  // The app shows the realm's icon: a URL that answers (Zulip's default, the generated image).
  expect(body.realm_icon_url).toMatch(/^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon$/);
});

test('messages and the events of everyday actions carry what the app requires', async () => {
  const messages = await app.client.get('/api/v1/messages', {
    anchor: 'newest',
    num_before: 20,
    num_after: 0,
    narrow: [],
  });
  expect(messages.status).toBe(200);
  const violations = mobileAppViolations(messages.body, 'GetMessagesResult', 'messages');
  for (const message of messages.body.messages)
    violations.push(
      ...mobileAppViolations(
        message,
        message.type === 'stream' ? 'StreamMessage' : 'DmMessage',
        `message ${message.id}`,
      ),
    );

  const queue = (await register(app)).body;
  const sent = await admin.client.post('/api/v1/messages', {
    type: 'stream',
    to: 'general',
    topic: 'hello',
    content: 'second',
  });
  await admin.client.post('/api/v1/messages', { type: 'private', to: [app.id], content: 'another' });
  await admin.client.patch(`/api/v1/messages/${sent.body.id}`, { content: 'second, edited' });
  await admin.client.patch(`/api/v1/messages/${sent.body.id}`, { topic: 'moved', propagate_mode: 'change_one' });
  const elsewhere = await admin.client.post('/api/v1/messages', {
    type: 'stream',
    to: 'general',
    topic: 'hello',
    content: 'moving channels',
  });
  const mobileId = (await admin.client.get('/api/v1/get_stream_id', { stream: 'mobile' })).body.stream_id;
  expect(
    (
      await admin.client.patch(`/api/v1/messages/${elsewhere.body.id}`, {
        stream_id: mobileId,
        propagate_mode: 'change_one',
      })
    ).status,
  ).toBe(200);
  await admin.client.post(`/api/v1/messages/${sent.body.id}/reactions`, { emoji_name: 'smile' });
  await app.client.post('/api/v1/messages/flags', { messages: [sent.body.id], op: 'add', flag: 'read' });
  await app.client.post('/api/v1/messages/flags', { messages: [sent.body.id], op: 'remove', flag: 'read' });
  await admin.client.post('/api/v1/typing', { op: 'start', type: 'direct', to: [app.id] });
  await admin.client.post('/api/v1/typing', { op: 'start', type: 'stream', stream_id: streamId, topic: 'hello' });
  await app.client.post('/api/v1/users/me/subscriptions/properties', {
    subscription_data: [{ stream_id: streamId, property: 'color', value: '#ff0000' }],
  });
  await admin.client.patch(`/api/v1/streams/${streamId}`, { description: 'now described' });
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: 'fresh' }],
    principals: [admin.id, app.id],
  });
  await app.client.patch('/api/v1/settings', { twenty_four_hour_time: true });
  await app.client.post('/api/v1/user_topics', { stream_id: streamId, topic: 'hello', visibility_policy: 1 });
  await admin.client.patch(`/api/v1/users/${app.id}`, { full_name: 'Mo Bile Renamed' });
  await admin.client.delete(`/api/v1/messages/${sent.body.id}`);
  const late = await stack.createUser({ fullName: 'Late Comer' });
  await late.client.post('/api/v1/users/me/presence', { status: 'active' });
  await admin.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: 'general' }],
    principals: [late.id],
  });
  await admin.client.delete('/api/v1/users/me/subscriptions', { subscriptions: ['general'], principals: [late.id] });
  const crew = (await admin.client.get('/api/v1/user_groups')).body.user_groups.find(
    (group: { name: string }) => group.name === 'crew',
  );
  await admin.client.post(`/api/v1/user_groups/${crew.id}/members`, { add: [late.id] });
  await admin.client.delete(
    `/api/v1/streams/${(await admin.client.get('/api/v1/get_stream_id', { stream: 'fresh' })).body.stream_id}`,
  );
  await settleEvents(stack);

  const events = (
    await app.client.get('/api/v1/events', {
      queue_id: queue.queue_id,
      last_event_id: queue.last_event_id,
      dont_block: true,
    })
  ).body.events as {
    type: string;
    op?: string;
    message?: Record<string, unknown>;
    flags?: string[];
  }[];
  const parsed = new Set<string>();
  for (const event of events) {
    const className = mobileAppEventClass(event);
    if (!className) continue;
    parsed.add(className);
    violations.push(...mobileAppViolations(event, className, `event ${event.type}/${event.op ?? ''}`));
    // The app moves the event's flags into its message before parsing it.
    if (event.type === 'message')
      violations.push(
        ...mobileAppViolations(
          { ...event.message, flags: event.flags },
          event.message!.type === 'stream' ? 'StreamMessage' : 'DmMessage',
          'event message',
        ),
      );
  }
  expect(violations).toEqual([]);
  expect([...parsed].sort()).toEqual(
    expect.arrayContaining([
      'ChannelCreateEvent',
      'ChannelUpdateEvent',
      'DeleteMessageEvent',
      'ChannelDeleteEvent',
      'MessageEvent',
      'PresenceEvent',
      'ReactionEvent',
      'RealmUserAddEvent',
      'RealmUserUpdateEvent',
      'SubscriptionAddEvent',
      'SubscriptionPeerAddEvent',
      'SubscriptionPeerRemoveEvent',
      'SubscriptionUpdateEvent',
      'TypingEvent',
      'UpdateMessageEvent',
      'UpdateMessageFlagsAddEvent',
      'UpdateMessageFlagsRemoveEvent',
      'UserGroupAddMembersEvent',
      'UserSettingsUpdateEvent',
      'UserTopicEvent',
    ]),
  );
});

test("the answers of the app's other calls carry what it requires", async () => {
  const answers: [string, { status: number; body: unknown }][] = [];
  const call = async (className: string, response: Promise<{ status: number; body: any }>) => {
    const answer = await response;
    answers.push([className, answer]);
    return answer.body;
  };
  // Logging in: the server's settings, then the user's key for their password.
  await call('GetServerSettingsResult', stack.anonymous().get('/api/v1/server_settings'));
  await call(
    'FetchApiKeyResult',
    stack.anonymous().post('/api/v1/fetch_api_key', { username: app.deliveryEmail, password: 'mobile password' }),
  );
  await call('GetOwnUserResult', app.client.get('/api/v1/users/me'));
  const sent = await call(
    'SendMessageResult',
    app.client.post('/api/v1/messages', { type: 'stream', to: 'general', topic: 'from the app', content: 'sent' }),
  );
  const fetched = await call(
    'GetMessageResult',
    app.client.get(`/api/v1/messages/${sent.id}`, { apply_markdown: true }),
  );
  answers.push(['StreamMessage', { status: 200, body: fetched.message }]);
  await call(
    'UpdateMessageFlagsResult',
    app.client.post('/api/v1/messages/flags', { messages: [sent.id], op: 'add', flag: 'starred' }),
  );
  await call(
    'UpdateMessageFlagsForNarrowResult',
    app.client.post('/api/v1/messages/flags/narrow', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 100,
      narrow: [],
      op: 'add',
      flag: 'read',
    }),
  );
  await call('GetChannelTopicsResult', app.client.get(`/api/v1/users/me/${streamId}/topics`));
  await call(
    'UpdatePresenceResult',
    app.client.post('/api/v1/users/me/presence', { status: 'active', slim_presence: true }),
  );
  const form = new FormData();
  form.append('file', new Blob(['a file from the app']), 'notes.txt');
  const multipart = new Request('http://multipart.invalid', { method: 'POST', body: form });
  const uploaded = await call(
    'UploadFileResult',
    app.client.post(
      '/api/v1/user_uploads',
      {},
      {
        body: Buffer.from(await multipart.arrayBuffer()),
        headers: { 'content-type': multipart.headers.get('content-type')! },
      },
    ),
  );
  // Opening a file from a message: a temporary URL, handed to the system's viewer.
  const temporary = await call('GetFileTemporaryUrlResult', app.client.get(`/api/v1${uploaded.url}`));
  expect((await stack.anonymous().get(temporary.url, {}, { validate: false })).raw.toString()).toBe(
    'a file from the app',
  );

  expect(
    answers
      .filter(([, answer]) => answer.status !== 200)
      .map(([className, answer]) => `${className}: ${answer.status}`),
  ).toEqual([]);
  expect(answers.flatMap(([className, answer]) => mobileAppViolations(answer.body, className))).toEqual([]);
});

test('the emoji table is served at server_emoji_data_url, and its names and codes make reactions', async () => {
  const { body: snapshot } = await register(app);
  const url = new URL(snapshot.server_emoji_data_url);
  expect(url.origin).toBe(snapshot.realm_url);
  // The app fetches it like any file of the realm, with or without credentials.
  const anonymous = await stack.anonymous().get(url.pathname, {}, { validate: false });
  expect(anonymous.status).toBe(200);
  expect(anonymous.headers['content-type']).toMatch(/^application\/json/);
  expect(mobileAppViolations(anonymous.body, 'ServerEmojiData')).toEqual([]);
  const codeToNames = anonymous.body.code_to_names as Record<string, string[]>;
  expect(Object.keys(codeToNames).length).toBeGreaterThan(1500);
  expect(codeToNames['1f44d']).toEqual(['+1', 'thumbs_up', 'like']); // Zulip's names, canonical first
  expect(Object.values(codeToNames).every((names) => names.length > 0)).toBe(true);

  const message = await admin.client.post('/api/v1/messages', {
    type: 'stream',
    to: 'general',
    topic: 'emoji',
    content: 'react to me',
  });
  const [code, [name]] = Object.entries(codeToNames).find(([, names]) => names.includes('tada'))!;
  const reacted = await app.client.post(`/api/v1/messages/${message.body.id}/reactions`, {
    emoji_name: name,
    emoji_code: code,
    reaction_type: 'unicode_emoji',
  });
  expect(reacted.status).toBe(200);
  const fetched = await app.client.get(`/api/v1/messages/${message.body.id}`);
  expect(fetched.body.message.reactions).toEqual([
    expect.objectContaining({ emoji_name: name, emoji_code: code, reaction_type: 'unicode_emoji', user_id: app.id }),
  ]);
});

test('realm_wildcard_mention_policy follows who may mention many users', async () => {
  expect((await register(app)).body.realm_wildcard_mention_policy).toBe(5); // administrators, Zulip's default
  await stack.setRealmGroupSetting('can_mention_many_users_group', 'role:members');
  expect((await register(app)).body.realm_wildcard_mention_policy).toBe(2);
  await stack.setRealmGroupSetting('can_mention_many_users_group', 'role:owners');
  // No legacy value for owners: "everyone", a superset of who may, as Zulip answers.
  expect((await register(app)).body.realm_wildcard_mention_policy).toBe(1);
});
