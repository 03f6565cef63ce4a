// The users domain's part of POST /register, and its events arriving through /events, for
// every role (the register answer is checked against zulip.yaml by the test client).
import { EmailVisibility, Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { registerEventQueue } from '@teamchat/testing';
import { createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const USER_KEYS = [
  'realm_users',
  'realm_non_active_users',
  'cross_realm_bots',
  'realm_user_groups',
  'user_settings',
  'custom_profile_fields',
  'custom_profile_field_types',
  'navigation_views',
  'realm_linkifiers',
  'realm_filters',
  'realm_bots',
  'presences',
  'realm_name',
  'realm_create_multiuse_invite_group',
  'realm_can_access_all_users_group',
];

test.each(['owner', 'admin', 'moderator', 'member', 'guest', 'bot'] as const)(
  'register as %s: the users keys, valid against zulip.yaml',
  async (role) => {
    const queue = await registerEventQueue(cast[role].client, { client_capabilities: { user_settings_object: true } });
    const state = queue.registration;
    for (const key of USER_KEYS) expect(state).toHaveProperty(key);
    expect(state).toMatchObject({
      user_id: cast[role].id,
      email: cast[role].email,
      delivery_email: cast[role].deliveryEmail,
      is_admin: role === 'owner' || role === 'admin',
      is_owner: role === 'owner',
      is_moderator: role === 'moderator', // the role itself, as Zulip's UserProfile.is_moderator
      is_guest: role === 'guest',
      realm_filters: [],
      realm_create_multiuse_invite_group: await systemGroupId(stack, 'role:administrators'),
    });
    expect(state.realm_users.map((u: { user_id: number }) => u.user_id)).toContain(cast.owner.id);
    expect(state).not.toHaveProperty('enable_sounds');
    // Administrators see every bot; others only their own.
    const bots = state.realm_bots.map((bot: { user_id: number }) => bot.user_id);
    expect(bots.includes(cast.bot.id)).toBe(['owner', 'admin', 'member'].includes(role));
  },
);

test('hidden emails stay hidden in realm_users; legacy settings keys for old clients', async () => {
  const hidden = await stack.createUser({
    email: 'register-hidden@example.com',
    emailAddressVisibility: EmailVisibility.ADMINS,
  });
  await cast.admin.client.post('/api/v1/navigation_views', { fragment: 'inbox', is_pinned: false });
  const member = (await registerEventQueue(cast.member.client, { client_gravatar: false })).registration;
  const admin = (await registerEventQueue(cast.admin.client)).registration;
  expect(member.realm_users.find((u: { user_id: number }) => u.user_id === hidden.id).delivery_email).toBeNull();
  expect(admin.realm_users.find((u: { user_id: number }) => u.user_id === hidden.id).delivery_email).toBe(
    'register-hidden@example.com',
  );
  expect(admin.navigation_views).toEqual([{ fragment: 'inbox', is_pinned: false, name: null }]);
  expect(member.enable_sounds).toBe(true);
  expect(member.emojiset).toBe('google');
});

test('events of the users domain reach the queues', async () => {
  const queue = await registerEventQueue(cast.member.client, {
    event_types: ['navigation_view', 'user_group', 'realm_linkifiers', 'realm_user'],
  });
  await cast.member.client.post('/api/v1/navigation_views', { fragment: 'recent', is_pinned: true });
  await cast.admin.client.post('/api/v1/realm/filters', {
    pattern: 'T-(?P<id>\\d+)',
    url_template: 'https://tickets.example/{id}',
  });
  await cast.admin.client.patch(`/api/v1/users/${cast.guest.id}`, { full_name: 'Guest Renamed' });
  const groupId = (
    await cast.member.client.post('/api/v1/user_groups/create', {
      name: 'event team',
      description: '',
      members: [cast.member.id],
    })
  ).body.group_id;
  const events = await queue.next(4);
  expect(events.map((e) => e.type)).toEqual(['navigation_view', 'realm_linkifiers', 'realm_user', 'user_group']);
  expect(events[0]).toMatchObject({ op: 'add', navigation_view: { fragment: 'recent', is_pinned: true, name: null } });
  expect(events[2]).toMatchObject({ op: 'update', person: { user_id: cast.guest.id, full_name: 'Guest Renamed' } });
  expect(events[3]).toMatchObject({ op: 'add', group: { id: groupId, members: [cast.member.id] } });
  // A role change shows in a fresh register.
  await cast.owner.client.patch(`/api/v1/users/${cast.moderator.id}`, { role: Role.MEMBER });
  const state = (await registerEventQueue(cast.moderator.client)).registration;
  expect(state.is_moderator).toBe(false);
});

test('register reports presence as a ping does, read inside its snapshot', async () => {
  const ping = await cast.member.client.post('/api/v1/users/me/presence', { status: 'active', slim_presence: true });
  expect(ping.status).toBe(200);
  const state = (await registerEventQueue(cast.admin.client, { slim_presence: true })).registration;
  expect(state.presences[String(cast.member.id)]).toEqual(ping.body.presences[String(cast.member.id)]);
  expect(state.presence_last_update_id).toBeGreaterThanOrEqual(ping.body.presence_last_update_id);
  const legacy = (await registerEventQueue(cast.admin.client)).registration;
  expect(legacy.presences[cast.member.email]).toMatchObject({
    website: { status: 'active', timestamp: ping.body.presences[String(cast.member.id)].active_timestamp },
  });
});
