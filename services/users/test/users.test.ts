import { EmailVisibility, Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, validateSuccessResponse } from '@teamchat/testing';
import { activeIds, createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const ROLES = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot'] as const;

describe('GET /users/{email}', () => {
  test('a user whose email everyone may see is found by it, with every by-email field', async () => {
    const target = await stack.createUser({
      email: 'open@example.com',
      fullName: 'Open Person',
      timezone: 'Asia/Tokyo',
    });
    for (const role of ROLES) {
      const response = await cast[role].client.get('/api/v1/users/open@example.com', { client_gravatar: false });
      expect(response.status).toBe(200);
      expect(response.body.user).toEqual({
        user_id: target.id,
        email: 'open@example.com',
        delivery_email: 'open@example.com',
        full_name: 'Open Person',
        role: 400,
        is_owner: false,
        is_admin: false,
        is_guest: false,
        is_bot: false,
        is_active: true,
        timezone: 'Asia/Tokyo',
        date_joined: target.profile.date_joined.toISOString(),
        avatar_url: expect.stringMatching(/^https:\/\/secure\.gravatar\.com\/avatar\//),
        avatar_version: 1,
      });
    }
  });

  // Which roles may look a user up by real email, per email_address_visibility (Zulip's
  // ROLE_TO_ACCESSIBLE_EMAIL_ADDRESS_VISIBILITY_IDS).
  const visibilityCases: [number, string, (typeof ROLES)[number][]][] = [
    [EmailVisibility.MEMBERS, 'members', ['owner', 'admin', 'moderator', 'member']],
    [EmailVisibility.MODERATORS, 'moderators', ['owner', 'admin', 'moderator']],
    [EmailVisibility.ADMINS, 'admins', ['owner', 'admin']],
    [EmailVisibility.NOBODY, 'nobody', []],
  ];
  test.each(visibilityCases)(
    'email visibility %i (%s): the real email works only for %j',
    async (visibility, label, allowed) => {
      const target = await stack.createUser({
        email: `hidden-${label}@example.com`,
        emailAddressVisibility: visibility,
      });
      expect(target.email).toBe(`user${target.id}@127.0.0.1`);
      for (const role of ROLES) {
        // The bot is a member: it sees what members see.
        const canSee = allowed.includes(role === 'bot' ? 'member' : role);
        const byReal = await cast[role].client.get(`/api/v1/users/hidden-${label}@example.com`);
        if (canSee) {
          expect(byReal.status).toBe(200);
          expect(byReal.body.user).toMatchObject({
            user_id: target.id,
            email: target.email,
            delivery_email: `hidden-${label}@example.com`,
          });
        } else {
          expectError(byReal, 400, 'BAD_REQUEST', 'No such user');
        }
        // The placeholder address works for everyone; delivery_email follows the same rule.
        const byPlaceholder = await cast[role].client.get(`/api/v1/users/${target.email}`);
        expect(byPlaceholder.status).toBe(200);
        expect(byPlaceholder.body.user.delivery_email).toBe(canSee ? `hidden-${label}@example.com` : null);
      }
    },
  );

  test('an unknown address is "No such user", like a hidden one', async () => {
    expectError(
      await cast.member.client.get('/api/v1/users/nobody-here@example.com'),
      400,
      'BAD_REQUEST',
      'No such user',
    );
    expectError(await cast.member.client.get('/api/v1/users/user999999@127.0.0.1'), 400, 'BAD_REQUEST', 'No such user');
  });

  test('client_gravatar (default true) nulls external avatars only of users whose email everyone may see', async () => {
    const open = await stack.createUser({ email: 'gravatar-open@example.com' });
    const hidden = await stack.createUser({
      email: 'gravatar-hidden@example.com',
      emailAddressVisibility: EmailVisibility.ADMINS,
    });
    expect((await cast.member.client.get('/api/v1/users/gravatar-open@example.com')).body.user.avatar_url).toBeNull();
    expect(
      (await cast.member.client.get('/api/v1/users/gravatar-open@example.com', { client_gravatar: false })).body.user
        .avatar_url,
    ).toMatch(/gravatar/);
    // The spec's neutral name is not Zulip's parameter: unknown, so ignored and reported.
    const neutral = await cast.member.client.get(`/api/v1/users/${open.id}`, { client_extavatar: false });
    expect(neutral.body.ignored_parameters_unsupported).toEqual(['client_extavatar']);
    expect((await cast.admin.client.get(`/api/v1/users/${hidden.email}`)).body.user.avatar_url).toMatch(/gravatar/);
  });

  test('include_custom_profile_fields adds profile_data for humans, never for bots', async () => {
    const field = await stack.db.customProfileField.create({
      data: { realm_id: stack.realm.id, name: 'Team', field_type: 1 },
    });
    const target = await stack.createUser({ email: 'profiled@example.com' });
    await stack.db.customProfileFieldValue.create({
      data: { user_profile_id: target.id, field_id: field.id, value: 'Blue', rendered_value: '<p>Blue</p>' },
    });
    await stack.fixtureWritten();
    const withFields = await cast.member.client.get('/api/v1/users/profiled@example.com', {
      include_custom_profile_fields: true,
    });
    expect(withFields.body.user.profile_data).toEqual({ [field.id]: { value: 'Blue', rendered_value: '<p>Blue</p>' } });
    expect((await cast.member.client.get('/api/v1/users/profiled@example.com')).body.user).not.toHaveProperty(
      'profile_data',
    );
    const bot = await cast.member.client.get(`/api/v1/users/${cast.bot.id}`, { include_custom_profile_fields: true });
    expect(bot.body.user).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: cast.member.id });
    expect(bot.body.user).not.toHaveProperty('profile_data');
  });
});

describe('GET /users and GET /users/{user_id}', () => {
  test('every user of the realm, bots with their type and owner, deactivated ones too', async () => {
    const gone = await stack.createUser({ email: 'gone-listed@example.com' });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    await stack.fixtureWritten();
    const { body } = await cast.admin.client.get('/api/v1/users');
    const all = await stack.db.userProfile.findMany({ where: { realm_id: stack.realm.id } });
    expect(body.members.map((m: { user_id: number }) => m.user_id).sort((a: number, b: number) => a - b)).toEqual(
      all.map((u) => u.id).sort((a, b) => a - b),
    );
    expect(body.members.find((m: { user_id: number }) => m.user_id === gone.id).is_active).toBe(false);
    expect(body.members.find((m: { user_id: number }) => m.user_id === cast.bot.id)).toMatchObject({
      bot_type: 1,
      bot_owner_id: cast.member.id,
    });
  });

  test('GET /users/{id}: any user, deactivated or bot; unknown ids are "No such user"', async () => {
    const { body } = await cast.guest.client.get(`/api/v1/users/${cast.owner.id}`);
    expect(body.user).toMatchObject({ user_id: cast.owner.id, role: 100, is_owner: true, is_admin: true });
    expectError(await cast.member.client.get('/api/v1/users/987654'), 400, 'BAD_REQUEST', 'No such user');
  });

  test('a guest restricted by can_access_all_users_group sees only users sharing a channel or DMs', async () => {
    const realm = await stack.createRealm('restricted', 'restricted.example.test');
    const membersGroup = await systemGroupId(stack, 'role:members', realm.id);
    await stack.db.groupSetting.updateMany({
      where: { owner_kind: 'realm', owner_id: realm.id, name: 'can_access_all_users_group' },
      data: { group_id: membersGroup },
    });
    const guest = await stack.createUser({ realm, email: 'guest@restricted.test', role: Role.GUEST });
    const colleague = await stack.createUser({ realm, email: 'colleague@restricted.test' });
    const pen = await stack.createUser({ realm, email: 'penpal@restricted.test' });
    const stranger = await stack.createUser({ realm, email: 'stranger@restricted.test' });
    const stream = await stack.createStream({ realm, name: 'shared', subscribers: [guest.id, colleague.id] });
    expect(stream.id).toBeGreaterThan(0);
    await stack.db.message.create({
      data: {
        realm_id: realm.id,
        sender_id: pen.id,
        content: 'hi',
        dm_key: [guest.id, pen.id].sort((a, b) => a - b).join(','),
      },
    });
    await stack.fixtureWritten(realm.id);

    const { body } = await guest.client.get('/api/v1/users');
    const byId = new Map(body.members.map((m: { user_id: number }) => [m.user_id, m]));
    expect(byId.get(colleague.id)).toMatchObject({ full_name: colleague.profile.full_name });
    expect(byId.get(pen.id)).toMatchObject({ full_name: pen.profile.full_name });
    expect(byId.get(stranger.id)).toMatchObject({
      full_name: 'Unknown user',
      email: `user${stranger.id}@restricted.example.test`,
      delivery_email: null,
    });
    expectError(await guest.client.get(`/api/v1/users/${stranger.id}`), 400, 'BAD_REQUEST', 'Insufficient permission');
    expect((await colleague.client.get(`/api/v1/users/${stranger.id}`)).status).toBe(200);

    // Presence: the guest sees itself and those it may see, in both formats; a member sees all.
    for (const user of [colleague, pen, stranger])
      expect((await user.client.post('/api/v1/users/me/presence', { status: 'active', ping_only: true })).status).toBe(
        200,
      );
    const slim = await guest.client.post('/api/v1/users/me/presence', { status: 'active', slim_presence: true });
    expect(
      Object.keys(slim.body.presences)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual([guest.id, colleague.id, pen.id].sort((a, b) => a - b));
    const legacy = await guest.client.post('/api/v1/users/me/presence', { status: 'active' });
    expect(Object.keys(legacy.body.presences).sort()).toEqual([guest.email, colleague.email, pen.email].sort());
    const seenByMember = await colleague.client.post('/api/v1/users/me/presence', {
      status: 'active',
      slim_presence: true,
    });
    expect(
      Object.keys(seenByMember.body.presences)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual([guest.id, colleague.id, pen.id, stranger.id].sort((a, b) => a - b));
  });
});

describe('PATCH /users/{user_id}', () => {
  test('an administrator changes a role: system groups follow, with realm_user and user_group events', async () => {
    const target = await stack.createUser({ email: 'promoted@example.com' });
    const members = await systemGroupId(stack, 'role:members');
    const fullMembers = await systemGroupId(stack, 'role:fullmembers');
    const moderators = await systemGroupId(stack, 'role:moderators');
    const captured = await captureEvents(stack, async () => {
      const response = await cast.admin.client.patch(`/api/v1/users/${target.id}`, { role: Role.MODERATOR });
      expect(response.body).toEqual({ result: 'success', msg: '' });
      const groups = await stack.db.userGroupMembership.findMany({
        where: { user_profile_id: target.id },
        select: { user_group_id: true },
      });
      expect(groups.map((g) => g.user_group_id)).toEqual([moderators]);
    });

    const everyone = await activeIds(stack);
    const [roleEvent] = ofType(captured, 'realm_user');
    expect(roleEvent.event).toEqual({
      type: 'realm_user',
      op: 'update',
      person: { user_id: target.id, role: Role.MODERATOR },
    });
    expect(roleEvent.recipientIds).toEqual(everyone);
    const groupEvents = ofType(captured, 'user_group').map((e) => e.event);
    expect(groupEvents).toEqual(
      expect.arrayContaining([
        { type: 'user_group', op: 'remove_members', group_id: members, user_ids: [target.id] },
        { type: 'user_group', op: 'remove_members', group_id: fullMembers, user_ids: [target.id] },
        { type: 'user_group', op: 'add_members', group_id: moderators, user_ids: [target.id] },
      ]),
    );
    expect(groupEvents).toHaveLength(3);
    // The new role counts at once: the gateway forgot the cached role with the key.
    expect((await target.client.get('/api/v1/users/me')).body.role).toBe(Role.MODERATOR);
  });

  test('who may change roles: owners for the owner role, administrators otherwise', async () => {
    const target = await stack.createUser({ email: 'role-target@example.com' });
    expectError(
      await cast.member.client.patch(`/api/v1/users/${target.id}`, { role: Role.MODERATOR }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.moderator.client.patch(`/api/v1/users/${target.id}`, { role: Role.MEMBER }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.guest.client.patch(`/api/v1/users/${target.id}`, { role: Role.GUEST }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${target.id}`, { role: Role.OWNER }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${cast.owner.id}`, { role: Role.MEMBER }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${target.id}`, { role: 250 }),
      400,
      'BAD_REQUEST',
      'Invalid role',
    );
    expect((await cast.owner.client.patch(`/api/v1/users/${target.id}`, { role: Role.OWNER })).status).toBe(200);
    expect((await cast.owner.client.patch(`/api/v1/users/${target.id}`, { role: Role.GUEST })).status).toBe(200);
    const everyone = await systemGroupId(stack, 'role:everyone');
    const memberships = await stack.db.userGroupMembership.findMany({ where: { user_profile_id: target.id } });
    expect(memberships.map((m) => m.user_group_id)).toEqual([everyone]);
  });

  test('the only owner cannot stop being one', async () => {
    const realm = await stack.createRealm('soleowner', 'soleowner.example.test');
    const owner = await stack.createUser({ realm, email: 'sole@soleowner.test', role: Role.OWNER });
    expectError(
      await owner.client.patch(`/api/v1/users/${owner.id}`, { role: Role.ADMINISTRATOR }),
      400,
      'BAD_REQUEST',
      'The owner permission cannot be removed from the only organization owner.',
    );
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: owner.id } })).role).toBe(Role.OWNER);
  });

  test('full_name: checked as Zulip does, announced to everyone', async () => {
    const target = await stack.createUser({ email: 'renamed@example.com' });
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${target.id}`, { full_name: 'A' }),
      400,
      'BAD_REQUEST',
      'Name too short!',
    );
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${target.id}`, { full_name: 'x'.repeat(101) }),
      400,
      'BAD_REQUEST',
      'Name too long!',
    );
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${target.id}`, { full_name: 'Bad *name*' }),
      400,
      'BAD_REQUEST',
      'Invalid characters in name!',
    );
    expectError(
      await cast.admin.client.patch(`/api/v1/users/${target.id}`, { full_name: 'Someone|12' }),
      400,
      'BAD_REQUEST',
      'Invalid format!',
    );
    const captured = await captureEvents(stack, async () => {
      expect((await cast.admin.client.patch(`/api/v1/users/${target.id}`, { full_name: '  New Name ' })).status).toBe(
        200,
      );
      expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: target.id } })).full_name).toBe('New Name');
    });
    const [event] = ofType(captured, 'realm_user');
    expect(event.event).toEqual({
      type: 'realm_user',
      op: 'update',
      person: { user_id: target.id, full_name: 'New Name' },
    });
  });

  test("a bot's owner may rename it but not change its role", async () => {
    expect((await cast.member.client.patch(`/api/v1/users/${cast.bot.id}`, { full_name: 'Renamed Bot' })).status).toBe(
      200,
    );
    expectError(
      await cast.member.client.patch(`/api/v1/users/${cast.bot.id}`, { role: Role.ADMINISTRATOR }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  });

  test('nothing changes when one part of the request is refused', async () => {
    const target = await stack.createUser({ email: 'atomic@example.com', fullName: 'Atomic Person' });
    const response = await cast.admin.client.patch(`/api/v1/users/${target.id}`, {
      role: Role.MODERATOR,
      profile_data: [{ id: 999999, value: 'x' }],
    });
    expectError(response, 400, 'BAD_REQUEST', 'Field id 999999 not found.');
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: target.id } })).role).toBe(Role.MEMBER);
  });
});

describe('DELETE /users/me', () => {
  test('the only owner: CANNOT_DEACTIVATE_LAST_USER with entity and is_last_owner', async () => {
    const realm = await stack.createRealm('lastowner', 'lastowner.example.test');
    const owner = await stack.createUser({ realm, email: 'owner@lastowner.test', role: Role.OWNER });
    await stack.createUser({ realm, email: 'member@lastowner.test' });
    const response = await owner.client.delete('/api/v1/users/me');
    expectError(response, 400, 'CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only organization owner.');
    expect(response.body).toMatchObject({ entity: 'organization owner', is_last_owner: true });
  });

  test('the only user: is_last_owner false', async () => {
    const realm = await stack.createRealm('lastuser', 'lastuser.example.test');
    const only = await stack.createUser({ realm, email: 'only@lastuser.test', role: Role.MEMBER });
    const response = await only.client.delete('/api/v1/users/me');
    expectError(response, 400, 'CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only user.');
    expect(response.body).toMatchObject({ entity: 'user', is_last_owner: false });
  });

  test('a member leaves: their bots go too, events reach those who can see them, their keys stop working', async () => {
    const leaver = await stack.createUser({ email: 'leaver@example.com' });
    const bot = await stack.createUser({ email: 'leaver-bot@example.com', botType: 1, botOwnerId: leaver.id });
    // Warm the gateway's cache of both keys first: deactivation must invalidate it.
    expect((await leaver.client.get('/api/v1/users/me')).status).toBe(200);
    expect((await bot.client.get('/api/v1/users/me')).status).toBe(200);
    const captured = await captureEvents(stack, async () => {
      expect((await leaver.client.delete('/api/v1/users/me')).body).toEqual({ result: 'success', msg: '' });
      const rows = await stack.db.userProfile.findMany({ where: { id: { in: [leaver.id, bot.id] } } });
      expect(rows.every((row) => !row.is_active)).toBe(true);
      expectError(await leaver.client.get('/api/v1/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
      expectError(await bot.client.get('/api/v1/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    });

    const everyone = await activeIds(stack);
    const updates = ofType(captured, 'realm_user');
    expect(updates.map((e) => e.event)).toEqual([
      { type: 'realm_user', op: 'update', person: { user_id: leaver.id, is_active: false } },
      { type: 'realm_user', op: 'update', person: { user_id: bot.id, is_active: false } },
    ]);
    for (const update of updates) expect(update.recipientIds).toEqual(everyone);
    const [botEvent] = ofType(captured, 'realm_bot');
    expect(botEvent.event).toEqual({ type: 'realm_bot', op: 'update', bot: { user_id: bot.id, is_active: false } });
  });

  test('in a restricted realm, only those who still see the user hear of it; channel-only guests get realm_user remove', async () => {
    const realm = await stack.createRealm('restricted2', 'restricted2.example.test');
    const membersGroup = await systemGroupId(stack, 'role:members', realm.id);
    await stack.db.groupSetting.updateMany({
      where: { owner_kind: 'realm', owner_id: realm.id, name: 'can_access_all_users_group' },
      data: { group_id: membersGroup },
    });
    const owner = await stack.createUser({ realm, email: 'owner@restricted2.test', role: Role.OWNER });
    const leaver = await stack.createUser({ realm, email: 'leaver@restricted2.test' });
    const guest = await stack.createUser({ realm, email: 'guest@restricted2.test', role: Role.GUEST });
    // A guest who knew the leaver through a shared channel, and one who exchanged DMs with them.
    const channelGuest = await stack.createUser({ realm, email: 'channel-guest@restricted2.test', role: Role.GUEST });
    const penPal = await stack.createUser({ realm, email: 'penpal@restricted2.test', role: Role.GUEST });
    await stack.createStream({ realm, name: 'shared with a guest', subscribers: [leaver.id, channelGuest.id] });
    await stack.db.message.create({
      data: {
        realm_id: realm.id,
        sender_id: penPal.id,
        content: 'hello',
        dm_key: [leaver.id, penPal.id].sort((a, b) => a - b).join(','),
      },
    });
    await stack.fixtureWritten(realm.id);
    expect((await channelGuest.client.get(`/api/v1/users/${leaver.id}`)).status).toBe(200);

    const captured = await captureEvents(stack, async () => {
      expect((await leaver.client.delete('/api/v1/users/me')).status).toBe(200);
    });
    const [update, remove, ...others] = ofType(captured, 'realm_user');
    expect(others).toEqual([]);
    expect(update.event).toEqual({
      type: 'realm_user',
      op: 'update',
      person: { user_id: leaver.id, is_active: false },
    });
    expect(update.recipientIds).toEqual([owner.id, penPal.id].sort((a, b) => a - b));
    // Channels show guests active users only: the channel-only guest loses the leaver.
    expect(remove.event).toEqual({
      type: 'realm_user',
      op: 'remove',
      person: { user_id: leaver.id, full_name: 'Unknown user' },
    });
    expect(remove.recipientIds).toEqual([channelGuest.id]);
    // As a client would receive it: a valid GET /events answer.
    validateSuccessResponse('GET', '/api/v1/events', 200, {
      result: 'success',
      msg: '',
      queue_id: 'q',
      events: [{ ...remove.event, id: 0 }],
    });
    expectError(
      await channelGuest.client.get(`/api/v1/users/${leaver.id}`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expect((await penPal.client.get(`/api/v1/users/${leaver.id}`)).body.user).toMatchObject({
      user_id: leaver.id,
      is_active: false,
    });

    const removals = ofType(captured, 'user_group');
    const fullMembers = await systemGroupId(stack, 'role:fullmembers', realm.id);
    expect(removals.map((e) => e.event)).toEqual(
      [membersGroup, fullMembers]
        .sort((a, b) => a - b)
        .map((groupId) => ({ type: 'user_group', op: 'remove_members', group_id: groupId, user_ids: [leaver.id] })),
    );
    for (const removal of removals)
      expect(removal.recipientIds).toEqual([guest.id, channelGuest.id].sort((a, b) => a - b));
  });
});
