// PATCH /realm (Zulip's update_realm): administrators change the organisation's settings, owners
// the owner-only ones; each change is a realm event to everyone and shows in the next register.
import { Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue, type ApiClient, type Params } from '@teamchat/testing';
import { REALM_PROPERTIES } from '../src/lib/realm-settings';
import { activeIds, createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events', 'messages'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const realmState = async (client: ApiClient) =>
  (await registerEventQueue(client, { fetch_event_types: ['realm'] })).registration;

const patchRealm = (client: ApiClient, params: Params) => client.patch('/api/v1/realm', params);

test('members and moderators are refused; administrators may not change owner-only settings', async () => {
  for (const user of [cast.member, cast.moderator, cast.guest]) {
    expectError(
      await patchRealm(user.client, { name: 'Taken over' }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  }
  const members = await systemGroupId(stack, 'role:members');
  const ownerOnly: Params[] = [
    { invite_required: false },
    { waiting_period_threshold: 3 },
    { message_retention_days: 30 },
    { emails_restricted_to_domains: true },
    { disallow_disposable_email_addresses: false },
    { can_create_groups: { new: members } },
    { can_invite_users_group: { new: members } },
    { create_multiuse_invite_group: { new: members } },
    { authentication_methods: { Email: true } },
  ];
  for (const params of ownerOnly) {
    expectError(
      await patchRealm(cast.admin.client, params),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
  }
  // Nothing changed on the way.
  expect(await realmState(cast.member.client)).toMatchObject({
    realm_name: stack.realm.name,
    realm_invite_required: stack.realm.invite_required,
    realm_waiting_period_threshold: 0,
  });
});

test('an administrator changes plain settings: realm events to everyone, the answer, and register', async () => {
  const queue = await registerEventQueue(cast.member.client, { event_types: ['realm'] });
  const captured = await captureEvents(stack, async () => {
    const response = await patchRealm(cast.admin.client, {
      name: 'Renamed organisation',
      description: 'We **talk** here.',
      allow_message_editing: false,
      message_content_edit_limit_seconds: 'unlimited',
      message_content_delete_limit_seconds: 3600,
      message_edit_history_visibility_policy: 'moves',
      default_language: 'de',
      video_chat_provider: 0,
      giphy_rating: 4,
      enable_read_receipts: true,
      inline_url_embed_preview: false, // already so: no event
    });
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      name: 'updated',
      description: 'updated',
      allow_message_editing: false,
      message_content_edit_limit_seconds: null,
      message_content_delete_limit_seconds: 3600,
      message_edit_history_visibility_policy: 'updated',
      default_language: 'updated',
      video_chat_provider: 0,
      giphy_rating: 4,
      enable_read_receipts: true,
    });
  });
  const expected = [
    { type: 'realm', op: 'update', property: 'name', value: 'Renamed organisation' },
    { type: 'realm', op: 'update', property: 'description', value: 'We **talk** here.' },
    { type: 'realm', op: 'update', property: 'default_language', value: 'de' },
    { type: 'realm', op: 'update_dict', property: 'default', data: { allow_message_editing: false } },
    {
      type: 'realm',
      op: 'update_dict',
      property: 'default',
      data: { message_content_edit_limit_seconds: null },
    },
    { type: 'realm', op: 'update', property: 'message_content_delete_limit_seconds', value: 3600 },
    { type: 'realm', op: 'update', property: 'message_edit_history_visibility_policy', value: 'moves' },
    { type: 'realm', op: 'update', property: 'video_chat_provider', value: 0 },
    { type: 'realm', op: 'update', property: 'giphy_rating', value: 4 },
    { type: 'realm', op: 'update', property: 'enable_read_receipts', value: true },
  ];
  const events = ofType(captured, 'realm');
  expect(events.map((e) => e.event)).toEqual(expected);
  for (const event of events) expect(event.recipientIds).toEqual(await activeIds(stack));
  // A member's queue receives them (and the client checks each against zulip.yaml).
  expect((await queue.next(expected.length)).map(({ id: _id, ...event }) => event)).toEqual(expected);

  expect(await realmState(cast.guest.client)).toMatchObject({
    realm_name: 'Renamed organisation',
    realm_description: 'We **talk** here.',
    realm_allow_message_editing: false,
    realm_message_content_edit_limit_seconds: null,
    realm_message_content_delete_limit_seconds: 3600,
    realm_message_edit_history_visibility_policy: 'moves',
    realm_default_language: 'de',
    realm_video_chat_provider: 0,
    realm_giphy_rating: 4,
    realm_enable_read_receipts: true,
    realm_inline_url_embed_preview: false,
  });
});

test('owners change the owner-only settings; the waiting period moves members in and out of role:fullmembers', async () => {
  const fullMembers = await systemGroupId(stack, 'role:fullmembers');
  const newcomer = await stack.createUser({ role: Role.MEMBER });
  const veteran = await stack.createUser({ role: Role.MEMBER });
  await stack.db.userProfile.update({
    where: { id: veteran.id },
    data: { date_joined: new Date(Date.now() - 10 * 86_400_000) },
  });
  const isFullMember = async (userId: number) =>
    (await stack.db.userGroupMembership.count({ where: { user_group_id: fullMembers, user_profile_id: userId } })) ===
    1;
  expect(await isFullMember(newcomer.id)).toBe(true);

  const captured = await captureEvents(stack, async () => {
    const response = await patchRealm(cast.owner.client, {
      invite_required: !stack.realm.invite_required,
      waiting_period_threshold: 5,
      message_retention_days: 90,
      emails_restricted_to_domains: true,
    });
    expect(response.status).toBe(200);
  });
  expect(ofType(captured, 'realm').map((e) => e.event)).toEqual([
    { type: 'realm', op: 'update', property: 'invite_required', value: !stack.realm.invite_required },
    { type: 'realm', op: 'update', property: 'waiting_period_threshold', value: 5 },
    { type: 'realm', op: 'update', property: 'message_retention_days', value: 90 },
    { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: true },
  ]);
  const removed = ofType(captured, 'user_group', 'remove_members');
  expect(removed).toHaveLength(1);
  expect(removed[0].event).toMatchObject({ group_id: fullMembers });
  expect(removed[0].event.user_ids).toContain(newcomer.id);
  expect(removed[0].event.user_ids).not.toContain(veteran.id);
  expect(await isFullMember(newcomer.id)).toBe(false);
  expect(await isFullMember(veteran.id)).toBe(true);

  expect(await realmState(cast.member.client)).toMatchObject({
    realm_invite_required: !stack.realm.invite_required,
    realm_waiting_period_threshold: 5,
    realm_message_retention_days: 90,
    realm_emails_restricted_to_domains: true,
  });

  // Back to no waiting period: the newcomer is a full member again.
  const back = await captureEvents(stack, () =>
    patchRealm(cast.owner.client, { waiting_period_threshold: 0, message_retention_days: 'unlimited' }),
  );
  expect(ofType(back, 'user_group', 'add_members')[0].event.user_ids).toContain(newcomer.id);
  expect(await isFullMember(newcomer.id)).toBe(true);
  expect((await realmState(cast.member.client)).realm_message_retention_days).toBe(-1);
});

test('group settings take {new, old}: realm/update_dict events, anonymous groups, Zulip’s rules', async () => {
  const [members, moderators, admins, everyone, internet, nobody] = await Promise.all([
    systemGroupId(stack, 'role:members'),
    systemGroupId(stack, 'role:moderators'),
    systemGroupId(stack, 'role:administrators'),
    systemGroupId(stack, 'role:everyone'),
    systemGroupId(stack, 'role:internet'),
    systemGroupId(stack, 'role:nobody'),
  ]);
  const before = await realmState(cast.member.client);
  expect(before.realm_can_add_custom_emoji_group).toBe(members);

  const queue = await registerEventQueue(cast.member.client, { event_types: ['realm'] });
  const anonymous = { direct_members: [cast.member.id], direct_subgroups: [admins] };
  const captured = await captureEvents(stack, async () => {
    const response = await patchRealm(cast.admin.client, {
      can_add_custom_emoji_group: { new: anonymous, old: members },
      can_mention_many_users_group: { new: { direct_members: [], direct_subgroups: [moderators] } },
      can_resolve_topics_group: { new: everyone }, // unchanged: no event
      can_set_topics_policy_group: { new: admins },
    });
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      can_add_custom_emoji_group: anonymous,
      can_mention_many_users_group: moderators,
      can_set_topics_policy_group: admins,
    });
  });
  const expected = [
    { type: 'realm', op: 'update_dict', property: 'default', data: { can_add_custom_emoji_group: anonymous } },
    { type: 'realm', op: 'update_dict', property: 'default', data: { can_mention_many_users_group: moderators } },
    { type: 'realm', op: 'update_dict', property: 'default', data: { can_set_topics_policy_group: admins } },
  ];
  const events = ofType(captured, 'realm');
  expect(events.map((e) => e.event)).toEqual(expected);
  expect(events[0].recipientIds).toEqual(await activeIds(stack));
  expect((await queue.next(expected.length)).map(({ id: _id, ...event }) => event)).toEqual(expected);
  expect(await realmState(cast.member.client)).toMatchObject({
    realm_can_add_custom_emoji_group: anonymous,
    realm_can_mention_many_users_group: moderators,
    realm_wildcard_mention_policy: 7,
    realm_can_set_topics_policy_group: admins,
  });

  // Back to a named group: the anonymous group goes.
  const anonymousGroupId = (
    await stack.db.groupSetting.findFirstOrThrow({
      where: { owner_kind: 'realm', owner_id: stack.realm.id, name: 'can_add_custom_emoji_group' },
    })
  ).group_id;
  expect((await patchRealm(cast.admin.client, { can_add_custom_emoji_group: { new: members } })).status).toBe(200);
  expect(await stack.db.userGroup.findUnique({ where: { id: anonymousGroupId } })).toBeNull();

  const refusals: [Params, string, string][] = [
    [
      { can_add_custom_emoji_group: { new: everyone, old: anonymous } },
      'EXPECTATION_MISMATCH',
      "'old' value does not match the expected value.",
    ],
    [
      { can_mention_many_users_group: { new: internet } },
      'BAD_REQUEST',
      "'can_mention_many_users_group' setting cannot be set to 'role:internet' group.",
    ],
    [
      { can_add_custom_emoji_group: { new: everyone } },
      'BAD_REQUEST',
      "'can_add_custom_emoji_group' setting cannot be set to 'role:everyone' group.",
    ],
    [
      { can_create_web_public_channel_group: { new: members } },
      'BAD_REQUEST',
      "'can_create_web_public_channel_group' setting cannot be set to 'role:members' group.",
    ],
    [
      { can_access_all_users_group: { new: { direct_members: [cast.member.id], direct_subgroups: [] } } },
      'SYSTEM_GROUP_REQUIRED',
      "'can_access_all_users_group' must be a system user group.",
    ],
    [
      { can_access_all_users_group: { new: nobody } },
      'BAD_REQUEST',
      "'can_access_all_users_group' setting cannot be set to 'role:nobody' group.",
    ],
    [{ can_delete_any_message_group: { new: 987654 } }, 'BAD_REQUEST', 'Invalid user group'],
    [
      { can_delete_any_message_group: { new: { direct_members: [987654], direct_subgroups: [] } } },
      'BAD_REQUEST',
      'Invalid user ID: 987654',
    ],
  ];
  for (const [params, code, msg] of refusals) expectError(await patchRealm(cast.owner.client, params), 400, code, msg);
  // Owner-only group settings, by their owner.
  expect((await patchRealm(cast.owner.client, { can_manage_all_groups: { new: admins } })).status).toBe(200);
  expectError(
    await patchRealm(cast.owner.client, { can_manage_all_groups: { new: nobody } }),
    400,
    'BAD_REQUEST',
    "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
  );
  expect((await realmState(cast.member.client)).realm_can_manage_all_groups).toBe(admins);
});

test('bad values get Zulip’s errors and change nothing', async () => {
  const publicChannel = await stack.createStream({ name: 'realm-settings-public' });
  const refusals: [Params, string, string][] = [
    [{ name: 'x'.repeat(41) }, 'BAD_REQUEST', 'name is too long (limit: 40 characters)'],
    [{ description: 'x'.repeat(1001) }, 'BAD_REQUEST', 'description is too long (limit: 1000 characters)'],
    [{ default_language: 'xx' }, 'BAD_REQUEST', "Invalid language 'xx'"],
    [{ video_chat_provider: 7 }, 'BAD_REQUEST', 'Invalid video_chat_provider 7'],
    [{ giphy_rating: 9 }, 'BAD_REQUEST', 'Invalid giphy_rating 9'],
    [
      { message_content_edit_limit_seconds: -5 },
      'REQUEST_VARIABLE_INVALID',
      "Bad value for 'message_content_edit_limit_seconds': -5",
    ],
    [
      { move_messages_within_stream_limit_seconds: 'soon' },
      'REQUEST_VARIABLE_INVALID',
      "Bad value for 'move_messages_within_stream_limit_seconds': soon",
    ],
    [
      { message_edit_history_visibility_policy: 'some' },
      'BAD_REQUEST',
      'Invalid message_edit_history_visibility_policy',
    ],
    [{ digest_weekday: 7 }, 'BAD_REQUEST', 'Invalid digest_weekday'],
    [{ allow_message_editing: 'maybe' }, 'BAD_REQUEST', 'allow_message_editing is not valid JSON'],
    [{ jitsi_server_url: JSON.stringify('not a url') }, 'BAD_REQUEST', 'jitsi_server_url is not an allowed_type'],
    [{ topics_policy: 'empty_topic_only' }, 'BAD_REQUEST', 'Invalid topics_policy'],
    [{ new_stream_announcements_stream_id: 987654 }, 'BAD_REQUEST', 'Invalid channel ID'],
    [{ signup_announcements_stream_id: 2 ** 40 }, 'BAD_REQUEST', 'Invalid channel ID'],
    [{ moderation_request_channel_id: publicChannel.id }, 'BAD_REQUEST', 'Moderation request channel must be private.'],
    [{ waiting_period_threshold: -1 }, 'BAD_REQUEST', 'waiting_period_threshold is too small'],
    [
      { authentication_methods: { Email: false } },
      'BAD_REQUEST',
      'At least one authentication method must be enabled.',
    ],
    [
      { authentication_methods: { Email: true, GitHub: true } },
      'BAD_REQUEST',
      "Invalid authentication method: GitHub. Valid methods are: ['Email']",
    ],
    [{ string_id: 'elsewhere' }, 'BAD_REQUEST', 'Must be a demo organization.'],
  ];
  const before = await realmState(cast.member.client);
  // A bad value anywhere refuses the whole request: the valid name beside it is not applied.
  for (const [params, code, msg] of refusals) {
    expectError(await patchRealm(cast.owner.client, { name: 'Half applied', ...params }), 400, code, msg);
  }
  const after = await realmState(cast.member.client);
  for (const state of [before, after]) {
    delete state.queue_id;
    delete state.last_event_id;
  }
  expect(after).toEqual(before);
});

test('channel settings, topics policy and the 10.2 web app’s mandatory_topics', async () => {
  const channel = await stack.createStream({ name: 'realm-settings-announcements' });
  const privateChannel = await stack.createStream({ name: 'realm-settings-moderation', inviteOnly: true });
  const captured = await captureEvents(stack, async () => {
    const response = await patchRealm(cast.admin.client, {
      new_stream_announcements_stream_id: channel.id,
      moderation_request_channel_id: privateChannel.id,
      mandatory_topics: true,
    });
    expect(response.status).toBe(200);
  });
  expect(ofType(captured, 'realm').map((e) => e.event)).toEqual([
    { type: 'realm', op: 'update', property: 'mandatory_topics', value: true },
    { type: 'realm', op: 'update', property: 'topics_policy', value: 'disable_empty_topic' },
    { type: 'realm', op: 'update', property: 'moderation_request_channel_id', value: privateChannel.id },
    { type: 'realm', op: 'update', property: 'new_stream_announcements_stream_id', value: channel.id },
  ]);
  expect(await realmState(cast.member.client)).toMatchObject({
    realm_new_stream_announcements_stream_id: channel.id,
    realm_moderation_request_channel_id: privateChannel.id,
    realm_mandatory_topics: true,
    realm_topics_policy: 'disable_empty_topic',
  });

  // A message to the channel now needs a topic.
  const send = await cast.member.client.post('/api/v1/messages', {
    type: 'stream',
    to: channel.name,
    topic: '',
    content: 'no topic',
  });
  expectError(send, 400, 'BAD_REQUEST', 'Sending messages to the general chat topic is not allowed in this channel.');

  // topics_policy, as newer clients set it, moves mandatory_topics along; -1 clears a channel.
  await patchRealm(cast.admin.client, { topics_policy: 'allow_empty_topic', new_stream_announcements_stream_id: -1 });
  expect(await realmState(cast.member.client)).toMatchObject({
    realm_new_stream_announcements_stream_id: -1,
    realm_mandatory_topics: false,
    realm_topics_policy: 'allow_empty_topic',
  });
});

test('every plain setting round-trips: register shows what PATCH /realm set', async () => {
  // A value other than the current one for each setting (REALM_PROPERTIES), and register's reading of it.
  const changes: [string, Params[string], unknown][] = [
    ['name', 'Round trip', 'Round trip'],
    ['description', 'Plain *words*', 'Plain *words*'],
    ['invite_required', !stack.realm.invite_required, !stack.realm.invite_required],
    ['waiting_period_threshold', 2, 2],
    ['enable_spectator_access', true, true],
    ['message_retention_days', 400, 400],
    ['default_language', 'fr', 'fr'],
    ['emails_restricted_to_domains', true, true],
    ['disallow_disposable_email_addresses', false, false],
    ['require_unique_names', true, true],
    ['name_changes_disabled', true, true],
    ['email_changes_disabled', true, true],
    ['avatar_changes_disabled', true, true],
    ['inline_image_preview', false, false],
    ['inline_url_embed_preview', true, true],
    ['allow_message_editing', true, true],
    ['message_content_edit_limit_seconds', 1234, 1234],
    ['message_content_delete_limit_seconds', 'unlimited', null],
    ['move_messages_within_stream_limit_seconds', 'unlimited', null],
    ['move_messages_between_streams_limit_seconds', 86400, 86400],
    ['message_edit_history_visibility_policy', 'none', 'none'],
    ['send_welcome_emails', false, false],
    ['digest_emails_enabled', true, true],
    ['message_content_allowed_in_email_notifications', false, false],
    ['video_chat_provider', 1, 1],
    ['jitsi_server_url', JSON.stringify('https://jitsi.example.com'), 'https://jitsi.example.com'],
    ['giphy_rating', 1, 1],
    ['default_code_block_language', 'python', 'python'],
    ['digest_weekday', 5, 5],
    ['org_type', 35, 35],
    ['want_advertise_in_communities_directory', true, true],
    ['enable_read_receipts', false, false],
    ['enable_guest_user_dm_warning', false, false],
    ['enable_guest_user_indicator', false, false],
  ];
  // Every setting: topics_policy and mandatory_topics have their own test above.
  expect(new Set([...changes.map(([name]) => name), 'topics_policy', 'mandatory_topics'])).toEqual(
    new Set(Object.keys(REALM_PROPERTIES)),
  );
  const response = await patchRealm(
    cast.owner.client,
    Object.fromEntries(changes.map(([name, value]) => [name, value])),
  );
  expect(response.status).toBe(200);
  const state = await realmState(cast.member.client);
  for (const [name, , shown] of changes) expect([name, state[`realm_${name}`]]).toEqual([name, shown]);
  // What register derives from them, as Zulip's does.
  expect(state).toMatchObject({ realm_allow_edit_history: false, jitsi_server_url: 'https://jitsi.example.com' });
  // "default" stores no URL: the server's own Jitsi (none on this server).
  await patchRealm(cast.owner.client, { jitsi_server_url: JSON.stringify('default') });
  const reset = await realmState(cast.member.client);
  expect(reset.realm_jitsi_server_url).toBeNull();
  expect(reset).not.toHaveProperty('jitsi_server_url');
});
