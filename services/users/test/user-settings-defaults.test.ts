// The organisation's defaults for new users: PATCH /realm/user_settings_defaults (administrators),
// realm_user_settings_defaults events and register section, and new accounts starting with them.
import { EmailVisibility } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue, type ApiClient } from '@teamchat/testing';
import { activeIds, createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const defaultsOf = async (client: ApiClient) =>
  (await registerEventQueue(client, { fetch_event_types: ['realm_user_settings_defaults'] })).registration
    .realm_user_settings_defaults;

test('administrators change the defaults: one event per changed setting, register shows them', async () => {
  const before = await defaultsOf(cast.member.client);
  expect(before).toMatchObject({ left_side_userlist: false, emojiset: 'google', email_address_visibility: 1 });
  const captured = await captureEvents(stack, async () => {
    const response = await cast.admin.client.patch('/api/v1/realm/user_settings_defaults', {
      twenty_four_hour_time: true,
      left_side_userlist: true,
      emojiset: 'text',
      email_address_visibility: EmailVisibility.ADMINS,
      enable_login_emails: false,
      enter_sends: false, // already the default: no event
    });
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      ignored_parameters_unsupported: ['enable_login_emails'],
    });
  });
  const events = ofType(captured, 'realm_user_settings_defaults');
  expect(events.map((e) => e.event)).toEqual([
    { type: 'realm_user_settings_defaults', op: 'update', property: 'email_address_visibility', value: 3 },
    { type: 'realm_user_settings_defaults', op: 'update', property: 'emojiset', value: 'text' },
    { type: 'realm_user_settings_defaults', op: 'update', property: 'left_side_userlist', value: true },
    { type: 'realm_user_settings_defaults', op: 'update', property: 'twenty_four_hour_time', value: true },
  ]);
  expect(events[0].recipientIds).toEqual(await activeIds(stack));
  expect(await defaultsOf(cast.guest.client)).toEqual({
    ...before,
    twenty_four_hour_time: true,
    left_side_userlist: true,
    emojiset: 'text',
    email_address_visibility: 3,
  });

  // Existing users keep their own settings.
  const own = (await registerEventQueue(cast.member.client, { fetch_event_types: ['user_settings'] })).registration;
  expect(own.user_settings).toMatchObject({ left_side_userlist: false, emojiset: 'google' });

  // New accounts start with the defaults.
  const newcomer = await stack.createUser();
  const settings = (await registerEventQueue(newcomer.client, { fetch_event_types: ['user_settings'] })).registration
    .user_settings;
  expect(settings).toMatchObject({
    twenty_four_hour_time: true,
    left_side_userlist: true,
    emojiset: 'text',
    email_address_visibility: 3,
    enable_login_emails: true,
  });
  const row = await stack.db.userProfile.findUniqueOrThrow({ where: { id: newcomer.id } });
  expect(row.email_address_visibility).toBe(3);
  // An explicit choice at creation still wins over the default.
  const chosen = await stack.createUser({ emailAddressVisibility: EmailVisibility.EVERYONE });
  expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: chosen.id } })).email_address_visibility).toBe(1);

  // Back to Zulip's defaults, so the other tests see an untouched organisation.
  await cast.admin.client.patch('/api/v1/realm/user_settings_defaults', {
    twenty_four_hour_time: false,
    left_side_userlist: false,
    emojiset: 'google',
    email_address_visibility: 1,
  });
  expect(await defaultsOf(cast.member.client)).toEqual(before);
});

test('only administrators', async () => {
  for (const user of [cast.moderator, cast.member]) {
    expectError(
      await user.client.patch('/api/v1/realm/user_settings_defaults', { enter_sends: true }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  }
  expect((await cast.owner.client.patch('/api/v1/realm/user_settings_defaults', {})).status).toBe(200);
});

test.each([
  [{ emojiset: 'apple' }, 'Invalid emojiset'],
  [{ color_scheme: 7 }, 'Invalid color_scheme'],
  [{ email_address_visibility: 9 }, 'Invalid email_address_visibility'],
  [{ notification_sound: 'gong' }, "Invalid notification sound 'gong'"],
  [{ email_notifications_batching_period_seconds: 0 }, 'Invalid email batching period: 0 seconds'],
  [{ enter_sends: 'yes' }, 'enter_sends is not valid JSON'],
])('%j is refused: %s', async (params, message) => {
  expectError(
    await cast.admin.client.patch('/api/v1/realm/user_settings_defaults', params),
    400,
    'BAD_REQUEST',
    message,
  );
});
