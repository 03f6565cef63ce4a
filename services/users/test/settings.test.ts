// PATCH /settings: one's own name, password, display and notification settings; what register
// reports afterwards and the events each change sends (modern and legacy forms).
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
});
afterAll(() => stack.close());

const modern = { client_capabilities: { user_settings_object: true } };

describe('PATCH /settings', () => {
  test('display and notification settings: stored, reported by register, announced as user_settings', async () => {
    const user = await stack.createUser();
    const queue = await registerEventQueue(user.client, {
      ...modern,
      event_types: ['user_settings', 'update_display_settings', 'update_global_notifications'],
    });
    expect(queue.registration.user_settings).toMatchObject({
      twenty_four_hour_time: false,
      color_scheme: 1,
      enable_sounds: true,
      emojiset: 'google',
    });

    const response = await user.client.patch('/api/v1/settings', {
      twenty_four_hour_time: true,
      color_scheme: 3,
      emojiset: 'text',
      web_home_view: 'all_messages',
      enable_sounds: false,
      wildcard_mentions_notify: false,
      enable_offline_email_notifications: false,
      notification_sound: 'ding',
      email_notifications_batching_period_seconds: 600,
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ result: 'success', msg: '' });

    const events = await queue.next(9);
    expect(events.map(({ id: _id, ...event }) => event)).toEqual([
      { type: 'user_settings', op: 'update', property: 'twenty_four_hour_time', value: true },
      { type: 'user_settings', op: 'update', property: 'color_scheme', value: 3 },
      { type: 'user_settings', op: 'update', property: 'web_home_view', value: 'all_messages' },
      { type: 'user_settings', op: 'update', property: 'emojiset', value: 'text' },
      { type: 'user_settings', op: 'update', property: 'notification_sound', value: 'ding' },
      { type: 'user_settings', op: 'update', property: 'enable_sounds', value: false },
      { type: 'user_settings', op: 'update', property: 'email_notifications_batching_period_seconds', value: 600 },
      { type: 'user_settings', op: 'update', property: 'enable_offline_email_notifications', value: false },
      { type: 'user_settings', op: 'update', property: 'wildcard_mentions_notify', value: false },
    ]);
    // The legacy forms are not sent to a client declaring user_settings_object.
    await settleEvents(stack);
    expect(await queue.drain()).toEqual([]);

    const state = (await registerEventQueue(user.client, modern)).registration.user_settings;
    expect(state).toMatchObject({
      twenty_four_hour_time: true,
      color_scheme: 3,
      emojiset: 'text',
      web_home_view: 'all_messages',
      enable_sounds: false,
      wildcard_mentions_notify: false,
      enable_offline_email_notifications: false,
      notification_sound: 'ding',
      email_notifications_batching_period_seconds: 600,
    });
    // Legacy clients read the same stored values at the top level.
    const legacy = (await registerEventQueue(user.client)).registration;
    expect(legacy).toMatchObject({
      twenty_four_hour_time: true,
      color_scheme: 3,
      enable_sounds: false,
      wildcard_mentions_notify: false,
    });
  });

  test('legacy clients get update_display_settings and update_global_notifications too', async () => {
    const user = await stack.createUser();
    const queue = await registerEventQueue(user.client, {
      event_types: ['user_settings', 'update_display_settings', 'update_global_notifications'],
    });
    await user.client.patch('/api/v1/settings', {
      high_contrast_mode: true,
      enable_desktop_notifications: false,
      default_language: 'de',
    });
    const events = (await queue.next(6)).map(({ id: _id, ...event }) => event);
    expect(events).toEqual(
      expect.arrayContaining([
        { type: 'user_settings', op: 'update', property: 'high_contrast_mode', value: true },
        { type: 'update_display_settings', user: user.email, setting_name: 'high_contrast_mode', setting: true },
        { type: 'user_settings', op: 'update', property: 'enable_desktop_notifications', value: false },
        {
          type: 'update_global_notifications',
          user: user.email,
          notification_name: 'enable_desktop_notifications',
          setting: false,
        },
        { type: 'user_settings', op: 'update', property: 'default_language', value: 'de', language_name: 'German' },
        {
          type: 'update_display_settings',
          user: user.email,
          setting_name: 'default_language',
          setting: 'de',
          language_name: 'German',
        },
      ]),
    );
    const { body } = await user.client.get('/api/v1/users/me');
    expect(body.full_name).toBe(user.profile.full_name);
    const state = (await registerEventQueue(user.client, modern)).registration.user_settings;
    expect(state).toMatchObject({
      high_contrast_mode: true,
      enable_desktop_notifications: false,
      default_language: 'de',
    });
  });

  test('an unchanged value sends nothing', async () => {
    const user = await stack.createUser();
    const queue = await registerEventQueue(user.client, modern);
    const response = await user.client.patch('/api/v1/settings', {
      enable_sounds: true,
      color_scheme: 1,
      full_name: user.profile.full_name,
    });
    expect(response.status).toBe(200);
    await settleEvents(stack);
    expect(await queue.drain()).toEqual([]);
  });

  test('timezone: realm_user update (with the deprecated email) to everyone who can access the user', async () => {
    const user = await stack.createUser({ timezone: 'UTC' });
    const other = await stack.createUser();
    const own = await registerEventQueue(user.client, {
      ...modern,
      event_types: ['user_settings', 'realm_user', 'update_display_settings'],
    });
    const observer = await registerEventQueue(other.client, {
      ...modern,
      event_types: ['realm_user', 'user_settings'],
    });
    expect((await user.client.patch('/api/v1/settings', { timezone: 'Asia/Kolkata' })).status).toBe(200);
    const ownEvents = (await own.next(2)).map(({ id: _id, ...event }) => event);
    expect(ownEvents).toEqual([
      { type: 'user_settings', op: 'update', property: 'timezone', value: 'Asia/Kolkata' },
      { type: 'realm_user', op: 'update', person: { email: user.email, user_id: user.id, timezone: 'Asia/Kolkata' } },
    ]);
    const [seen] = await observer.next(1);
    expect(seen).toMatchObject({
      type: 'realm_user',
      op: 'update',
      person: { user_id: user.id, timezone: 'Asia/Kolkata' },
    });
    await settleEvents(stack);
    expect(await observer.drain()).toEqual([]);
    const { body } = await other.client.get(`/api/v1/users/${user.id}`);
    expect(body.user.timezone).toBe('Asia/Kolkata');
  });

  test('full_name: stripped, checked, realm_user update to those who can access', async () => {
    const user = await stack.createUser({ fullName: 'Old Name' });
    const other = await stack.createUser();
    const observer = await registerEventQueue(other.client, { event_types: ['realm_user'] });
    expect((await user.client.patch('/api/v1/settings', { full_name: '  New Name  ' })).status).toBe(200);
    const [event] = await observer.next(1);
    expect(event).toMatchObject({
      type: 'realm_user',
      op: 'update',
      person: { user_id: user.id, full_name: 'New Name' },
    });
    expect((await user.client.get('/api/v1/users/me')).body.full_name).toBe('New Name');

    expectError(await user.client.patch('/api/v1/settings', { full_name: 'x' }), 400, 'BAD_REQUEST', 'Name too short!');
    expectError(
      await user.client.patch('/api/v1/settings', { full_name: 'Bad*Name' }),
      400,
      'BAD_REQUEST',
      'Invalid characters in name!',
    );
    expectError(
      await user.client.patch('/api/v1/settings', { full_name: 'a'.repeat(101) }),
      400,
      'BAD_REQUEST',
      'Name too long!',
    );
  });

  test('password: the old one must match, the new one must not be too weak', async () => {
    const user = await stack.createUser({ email: 'settings-pw@example.com', password: 'first-password' });
    expectError(
      await user.client.patch('/api/v1/settings', { old_password: 'nope', new_password: 'second-password' }),
      400,
      'BAD_REQUEST',
      'Wrong password!',
    );
    expectError(
      await user.client.patch('/api/v1/settings', { old_password: 'first-password', new_password: 'abc' }),
      400,
      'BAD_REQUEST',
      'New password is too weak!',
    );
    expect(
      (await user.client.patch('/api/v1/settings', { old_password: 'first-password', new_password: 'second-password' }))
        .status,
    ).toBe(200);
    const login = await stack
      .anonymous()
      .post('/api/v1/fetch_api_key', { username: 'settings-pw@example.com', password: 'second-password' });
    expect(login.status).toBe(200);
    const old = await stack
      .anonymous()
      .post('/api/v1/fetch_api_key', { username: 'settings-pw@example.com', password: 'first-password' });
    expect(old.status).toBe(401);
  });

  test.each([
    [{ color_scheme: 7 }, 'Invalid color_scheme'],
    [{ color_scheme: '"dark"' }, 'color_scheme is not an integer'],
    [{ twenty_four_hour_time: 'yes' }, 'twenty_four_hour_time is not valid JSON'],
    [{ enable_sounds: 1 }, 'enable_sounds is not a boolean'],
    [{ emojiset: 'apple' }, 'Invalid emojiset'],
    [{ web_home_view: 'home' }, 'Invalid web_home_view'],
    [{ web_animate_image_previews: 'sometimes' }, 'Invalid web_animate_image_previews'],
    [{ default_language: 'xx' }, 'Invalid default_language'],
    [{ timezone: 'Mars/Olympus' }, 'timezone is not a recognized time zone'],
    [{ timezone: 'europe/paris' }, 'timezone is not a recognized time zone'],
    [{ notification_sound: 'boing' }, "Invalid notification sound 'boing'"],
    [{ email_notifications_batching_period_seconds: 0 }, 'Invalid email batching period: 0 seconds'],
    [{ email_notifications_batching_period_seconds: 700000 }, 'Invalid email batching period: 700000 seconds'],
    [{ desktop_icon_count_display: 5 }, 'Invalid desktop_icon_count_display'],
  ])('%j is refused: %s', async (params, message) => {
    const user = await stack.createUser();
    expectError(await user.client.patch('/api/v1/settings', params), 400, 'BAD_REQUEST', message);
  });

  test('a refused setting changes nothing, even next to valid ones', async () => {
    const user = await stack.createUser();
    expectError(
      await user.client.patch('/api/v1/settings', { enable_sounds: false, color_scheme: 9 }),
      400,
      'BAD_REQUEST',
      'Invalid color_scheme',
    );
    const state = (await registerEventQueue(user.client, modern)).registration.user_settings;
    expect(state.enable_sounds).toBe(true);
  });

  test('notification_sound "none" is allowed; unknown parameters are reported as ignored', async () => {
    const user = await stack.createUser();
    const response = await user.client.patch('/api/v1/settings', {
      notification_sound: 'none',
      dense_mode: true,
      email: 'new@example.com',
    });
    expect(response.status).toBe(200);
    expect(response.body.ignored_parameters_unsupported).toEqual(['dense_mode', 'email']);
  });

  test('bots are refused; every human role may change their own settings', async () => {
    const owner = await stack.createUser({ role: Role.OWNER });
    const bot = await stack.createUser({ email: 'settings-bot@example.com', botType: 1, botOwnerId: owner.id });
    expectError(
      await bot.client.patch('/api/v1/settings', { enable_sounds: false }),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
    for (const role of [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST]) {
      const user: TestUser = await stack.createUser({ role });
      expect((await user.client.patch('/api/v1/settings', { left_side_userlist: true })).status).toBe(200);
    }
  });

  test('without credentials: 401', async () => {
    expectError(await stack.anonymous().patch('/api/v1/settings', { enable_sounds: false }), 401, 'UNAUTHORIZED');
  });
});
