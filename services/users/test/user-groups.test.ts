import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type ApiResponse, captureEvents, expectError, ofType, type Params } from '@teamchat/testing';
import { activeIds, createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
let groupCounter = 0;
beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
});
afterAll(() => stack.close());

async function createGroup(by: TestUser, extra: Params = {}): Promise<number> {
  const response = await by.client.post('/api/v1/user_groups/create', {
    name: `group ${++groupCounter}`,
    description: 'A group',
    members: [],
    ...extra,
  });
  expect(response.status).toBe(200);
  return response.body.group_id;
}

async function setRealmSetting(name: string, groupId: number) {
  await stack.db.groupSetting.updateMany({
    where: { owner_kind: 'realm', owner_id: stack.realm.id, name },
    data: { group_id: groupId },
  });
}

async function groupDict(id: number, viewer: TestUser = cast.owner) {
  const { body } = await viewer.client.get('/api/v1/user_groups', { include_deactivated_groups: true });
  return body.user_groups.find((group: { id: number }) => group.id === id);
}

describe('GET /user_groups', () => {
  test('the system groups with their settings; members and administrators only', async () => {
    const { body } = await cast.member.client.get('/api/v1/user_groups');
    const nobody = await systemGroupId(stack, 'role:nobody');
    const owners = body.user_groups.find((group: { name: string }) => group.name === 'role:owners');
    expect(owners).toEqual({
      id: await systemGroupId(stack, 'role:owners'),
      name: 'role:owners',
      description: 'Owners of this organization',
      creator_id: null,
      date_created: expect.any(Number),
      members: [cast.owner.id],
      direct_subgroup_ids: [],
      is_system_group: true,
      can_add_members_group: nobody,
      can_join_group: nobody,
      can_leave_group: nobody,
      can_manage_group: nobody,
      can_mention_group: nobody,
      can_remove_members_group: nobody,
      deactivated: false,
    });
    const admins = body.user_groups.find((group: { name: string }) => group.name === 'role:administrators');
    expect(admins.direct_subgroup_ids).toEqual([owners.id]);
    expectError(await cast.guest.client.get('/api/v1/user_groups'), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    expectError(
      await cast.bot.client.get('/api/v1/user_groups'),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
    expect((await cast.moderator.client.get('/api/v1/user_groups')).status).toBe(200);
  });
});

describe('POST /user_groups/create', () => {
  test('a member creates a group: defaults hold the creator, and everyone hears of it', async () => {
    let response!: ApiResponse;
    const captured = await captureEvents(stack, async () => {
      response = await cast.member.client.post('/api/v1/user_groups/create', {
        name: 'backend',
        description: 'Backend team',
        members: [cast.member.id, cast.moderator.id],
        subgroups: [await systemGroupId(stack, 'role:moderators')],
        can_mention_group: await systemGroupId(stack, 'role:members'),
      });
      expect(response.status).toBe(200);
    });
    const id = response.body.group_id;
    const everyone = await systemGroupId(stack, 'role:everyone');
    const nobody = await systemGroupId(stack, 'role:nobody');
    const expected = {
      id,
      name: 'backend',
      description: 'Backend team',
      creator_id: cast.member.id,
      date_created: expect.any(Number),
      members: [cast.moderator.id, cast.member.id].sort((a, b) => a - b),
      direct_subgroup_ids: [await systemGroupId(stack, 'role:moderators')],
      is_system_group: false,
      can_add_members_group: { direct_members: [cast.member.id], direct_subgroups: [] },
      can_join_group: nobody,
      can_leave_group: everyone,
      can_manage_group: { direct_members: [cast.member.id], direct_subgroups: [] },
      can_mention_group: await systemGroupId(stack, 'role:members'),
      can_remove_members_group: { direct_members: [cast.member.id], direct_subgroups: [] },
      deactivated: false,
    };
    expect(await groupDict(id)).toEqual(expected);
    const [event] = ofType(captured, 'user_group');
    expect(event.event).toEqual({ type: 'user_group', op: 'add', group: expected });
    expect(event.recipientIds).toEqual(await activeIds(stack));
  });

  test('invalid members, names and settings are refused with Zulip wording, creating nothing', async () => {
    const gone = await stack.createUser({ email: 'gone-member@example.com' });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    const create = (params: Params) =>
      cast.member.client.post('/api/v1/user_groups/create', {
        name: 'refused',
        description: '',
        members: [],
        ...params,
      });
    const before = await stack.db.userGroup.count();
    expectError(await create({ members: [987654] }), 400, 'BAD_REQUEST', 'Invalid user ID: 987654');
    expectError(await create({ members: [gone.id] }), 400, 'BAD_REQUEST', `Invalid user ID: ${gone.id}`);
    expectError(await create({ name: '  ' }), 400, 'BAD_REQUEST', "User group name can't be empty!");
    expectError(await create({ name: 'role:mine' }), 400, 'BAD_REQUEST', "User group name cannot start with 'role:'.");
    expectError(await create({ name: '@mention' }), 400, 'BAD_REQUEST', "User group name cannot start with '@'.");
    expectError(
      await create({ name: 'x'.repeat(101) }),
      400,
      'BAD_REQUEST',
      'User group name cannot exceed 100 characters.',
    );
    expectError(
      await create({ name: 'role:owners' }),
      400,
      'BAD_REQUEST',
      "User group name cannot start with 'role:'.",
    );
    expectError(
      await create({ can_manage_group: await systemGroupId(stack, 'role:everyone') }),
      400,
      'BAD_REQUEST',
      "'can_manage_group' setting cannot be set to 'role:everyone' group.",
    );
    expectError(
      await create({ can_manage_group: await systemGroupId(stack, 'role:internet') }),
      400,
      'BAD_REQUEST',
      "'can_manage_group' setting cannot be set to 'role:internet' group.",
    );
    expectError(
      await create({ can_mention_group: await systemGroupId(stack, 'role:internet') }),
      400,
      'BAD_REQUEST',
      "'can_mention_group' setting cannot be set to 'role:internet' group.",
    );
    expectError(
      await create({ can_mention_group: await systemGroupId(stack, 'role:owners') }),
      400,
      'BAD_REQUEST',
      "'can_mention_group' setting cannot be set to 'role:owners' group.",
    );
    expectError(await create({ can_join_group: 987654 }), 400, 'BAD_REQUEST', 'Invalid user group');
    expectError(
      await create({ can_join_group: { direct_members: [987654], direct_subgroups: [] } }),
      400,
      'BAD_REQUEST',
      'Invalid user ID: 987654',
    );
    expectError(await create({ subgroups: [987654] }), 400, 'BAD_REQUEST', 'Invalid user group ID: 987654');
    expectError(await create({ members: 'x' }), 400, 'BAD_REQUEST', 'members is not valid JSON');
    await createGroup(cast.member, { name: 'taken' });
    expectError(await create({ name: 'taken' }), 400, 'BAD_REQUEST', "User group 'taken' already exists.");
    // Only "taken" and the three anonymous groups holding its creator's settings were made.
    expect(await stack.db.userGroup.count()).toBe(before + 4);
    expect(await stack.db.userGroup.findFirst({ where: { name: 'refused' } })).toBeNull();
  });

  test('who may create groups: can_create_groups, never guests or bots', async () => {
    expectError(
      await cast.guest.client.post('/api/v1/user_groups/create', { name: 'g', description: '', members: [] }),
      400,
      'BAD_REQUEST',
      'Not allowed for guest users',
    );
    expectError(
      await cast.bot.client.post('/api/v1/user_groups/create', { name: 'g', description: '', members: [] }),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
    await setRealmSetting('can_create_groups', await systemGroupId(stack, 'role:administrators'));
    try {
      expectError(
        await cast.moderator.client.post('/api/v1/user_groups/create', { name: 'g', description: '', members: [] }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
      expect(
        (await cast.admin.client.post('/api/v1/user_groups/create', { name: 'by admin', description: '', members: [] }))
          .status,
      ).toBe(200);
    } finally {
      await setRealmSetting('can_create_groups', await systemGroupId(stack, 'role:members'));
    }
  });
});

describe('POST /user_groups/{id}/members', () => {
  test('the manager adds and removes members; events for each change', async () => {
    const id = await createGroup(cast.member);
    const captured = await captureEvents(stack, async () => {
      expect(
        (await cast.member.client.post(`/api/v1/user_groups/${id}/members`, { add: [cast.guest.id, cast.admin.id] }))
          .status,
      ).toBe(200);
      expect(
        (await cast.member.client.post(`/api/v1/user_groups/${id}/members`, { delete: [cast.admin.id] })).status,
      ).toBe(200);
      expect((await groupDict(id)).members).toEqual([cast.guest.id]);
    });
    const events = ofType(captured, 'user_group');
    expect(events.map((e) => e.event)).toEqual([
      { type: 'user_group', op: 'add_members', group_id: id, user_ids: [cast.guest.id, cast.admin.id] },
      { type: 'user_group', op: 'remove_members', group_id: id, user_ids: [cast.admin.id] },
    ]);
  });

  test('refusals: nothing to do, strangers, system groups, duplicates, absent and deactivated users', async () => {
    const id = await createGroup(cast.member, { members: [cast.member.id] });
    const gone = await stack.createUser({ email: 'gone-add@example.com' });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    const edit = (user: TestUser, params: Params, group = id) =>
      user.client.post(`/api/v1/user_groups/${group}/members`, params);
    expectError(
      await edit(cast.member, {}),
      400,
      'BAD_REQUEST',
      'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
    );
    expectError(await edit(cast.moderator, { add: [cast.admin.id] }), 400, 'BAD_REQUEST', 'Insufficient permission');
    expectError(await edit(cast.admin, { add: [cast.admin.id] }), 400, 'BAD_REQUEST', 'Insufficient permission');
    expectError(await edit(cast.guest, { add: [cast.admin.id] }), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    expectError(
      await edit(cast.bot, { add: [cast.admin.id] }),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
    expectError(
      await edit(cast.owner, { add: [cast.admin.id] }, await systemGroupId(stack, 'role:members')),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await edit(cast.member, { add: [cast.member.id] }),
      400,
      'BAD_REQUEST',
      `User ${cast.member.id} is already a member of this group`,
    );
    expectError(await edit(cast.member, { add: [gone.id] }), 400, 'BAD_REQUEST', `Invalid user ID: ${gone.id}`);
    expectError(
      await edit(cast.member, { delete: [cast.admin.id] }),
      400,
      'BAD_REQUEST',
      `There is no member '${cast.admin.id}' in this user group`,
    );
    expectError(await edit(cast.member, { add: [cast.admin.id] }, 987654), 400, 'BAD_REQUEST', 'Invalid user group');
    // One refused part refuses the whole request.
    expectError(
      await edit(cast.member, { add: [cast.admin.id], delete: [cast.owner.id] }),
      400,
      'BAD_REQUEST',
      `There is no member '${cast.owner.id}' in this user group`,
    );
    expect((await groupDict(id)).members).toEqual([cast.member.id]);
    // Owners hold can_manage_all_groups by default.
    expect((await edit(cast.owner, { add: [cast.admin.id] })).status).toBe(200);
  });

  test('joining and leaving oneself: can_join_group and can_leave_group, with the guest rule', async () => {
    const id = await createGroup(cast.member, {
      members: [cast.guest.id],
      can_join_group: { direct_members: [cast.moderator.id, cast.guest.id], direct_subgroups: [] },
      can_leave_group: await systemGroupId(stack, 'role:everyone'),
    });
    expect(
      (await cast.moderator.client.post(`/api/v1/user_groups/${id}/members`, { add: [cast.moderator.id] })).status,
    ).toBe(200);
    // can_join_group may not be given to everyone: guests never hold it, even when named.
    const guestGroup = await createGroup(cast.member, {
      can_join_group: { direct_members: [cast.guest.id], direct_subgroups: [] },
    });
    expectError(
      await cast.guest.client.post(`/api/v1/user_groups/${guestGroup}/members`, { add: [cast.guest.id] }),
      400,
      'BAD_REQUEST',
      'Not allowed for guest users',
    );
    expectError(
      await cast.admin.client.post(`/api/v1/user_groups/${id}/members`, { add: [cast.admin.id] }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expect(
      (await cast.moderator.client.post(`/api/v1/user_groups/${id}/members`, { delete: [cast.moderator.id] })).status,
    ).toBe(200);
    expect((await groupDict(id)).members).toEqual([cast.guest.id]);
  });

  test('subgroups: added and removed, never twice, never in a cycle', async () => {
    const top = await createGroup(cast.member);
    const middle = await createGroup(cast.member);
    const bottom = await createGroup(cast.member);
    const edit = (group: number, params: Params) =>
      cast.member.client.post(`/api/v1/user_groups/${group}/members`, params);
    const captured = await captureEvents(stack, async () => {
      expect((await edit(top, { add_subgroups: [middle] })).status).toBe(200);
      expect((await edit(middle, { add_subgroups: [bottom] })).status).toBe(200);
      expectError(
        await edit(bottom, { add_subgroups: [top] }),
        400,
        'BAD_REQUEST',
        `User group ${bottom} is already a subgroup of one of the passed subgroups.`,
      );
      expectError(
        await edit(top, { add_subgroups: [top] }),
        400,
        'BAD_REQUEST',
        `User group ${top} is already a subgroup of one of the passed subgroups.`,
      );
      expectError(
        await edit(top, { add_subgroups: [middle] }),
        400,
        'BAD_REQUEST',
        `User group ${middle} is already a subgroup of this group.`,
      );
      expectError(await edit(top, { add_subgroups: [987654] }), 400, 'BAD_REQUEST', 'Invalid user group ID: 987654');
      expectError(
        await edit(top, { delete_subgroups: [bottom] }),
        400,
        'BAD_REQUEST',
        `User group ${bottom} is not a subgroup of this group.`,
      );
      expect((await edit(middle, { delete_subgroups: [bottom] })).status).toBe(200);
      expect((await cast.member.client.post(`/api/v1/user_groups/${middle}/subgroups`, { add: [bottom] })).status).toBe(
        200,
      );
      expect((await cast.member.client.get(`/api/v1/user_groups/${top}/subgroups`)).body.subgroups).toEqual([
        middle,
        bottom,
      ]);
      expect(
        (await cast.member.client.get(`/api/v1/user_groups/${top}/subgroups`, { direct_subgroup_only: true })).body
          .subgroups,
      ).toEqual([middle]);
    });
    expect(ofType(captured, 'user_group').map((e) => e.event)).toEqual([
      { type: 'user_group', op: 'add_subgroups', group_id: top, direct_subgroup_ids: [middle] },
      { type: 'user_group', op: 'add_subgroups', group_id: middle, direct_subgroup_ids: [bottom] },
      { type: 'user_group', op: 'remove_subgroups', group_id: middle, direct_subgroup_ids: [bottom] },
      { type: 'user_group', op: 'add_subgroups', group_id: middle, direct_subgroup_ids: [bottom] },
    ]);
  });

  test('members through subgroups count for GET members and membership', async () => {
    const outer = await createGroup(cast.member, { members: [cast.admin.id] });
    const inner = await createGroup(cast.member, { members: [cast.guest.id] });
    await cast.member.client.post(`/api/v1/user_groups/${outer}/members`, { add_subgroups: [inner] });
    expect((await cast.member.client.get(`/api/v1/user_groups/${outer}/members`)).body.members).toEqual(
      [cast.admin.id, cast.guest.id].sort((a, b) => a - b),
    );
    expect(
      (await cast.member.client.get(`/api/v1/user_groups/${outer}/members`, { direct_member_only: true })).body.members,
    ).toEqual([cast.admin.id]);
    expect(
      (await cast.member.client.get(`/api/v1/user_groups/${outer}/members/${cast.guest.id}`)).body.is_user_group_member,
    ).toBe(true);
    expect(
      (await cast.member.client.get(`/api/v1/user_groups/${outer}/members/${cast.owner.id}`)).body.is_user_group_member,
    ).toBe(false);
  });
});

describe('deactivation', () => {
  test('a group nothing uses is deactivated, stays editable, and comes back', async () => {
    const id = await createGroup(cast.member, { members: [cast.member.id] });
    const other = await createGroup(cast.member);
    const captured = await captureEvents(stack, async () => {
      expect((await cast.member.client.post(`/api/v1/user_groups/${id}/deactivate`)).status).toBe(200);
      expect((await groupDict(id)).deactivated).toBe(true);
      const listed = (await cast.member.client.get('/api/v1/user_groups')).body.user_groups.map(
        (g: { id: number }) => g.id,
      );
      expect(listed).not.toContain(id);
      expectError(
        await cast.member.client.post(`/api/v1/user_groups/${id}/deactivate`),
        400,
        'BAD_REQUEST',
        'User group is deactivated.',
      );
      // Deactivated groups' memberships can still change (feature level 391), but they cannot hold a setting.
      expect(
        (await cast.member.client.post(`/api/v1/user_groups/${id}/members`, { add: [cast.admin.id] })).status,
      ).toBe(200);
      expectError(
        await cast.member.client.patch(`/api/v1/user_groups/${other}`, { can_mention_group: { new: id } }),
        400,
        'BAD_REQUEST',
        'User group is deactivated.',
      );
      expectError(
        await cast.member.client.post(`/api/v1/user_groups/${other}/members`, { add_subgroups: [id] }),
        400,
        'BAD_REQUEST',
        'User group is deactivated.',
      );
      expect((await cast.member.client.patch(`/api/v1/user_groups/${id}`, { deactivated: false })).status).toBe(200);
      expect((await groupDict(id)).deactivated).toBe(false);
    });
    expect(ofType(captured, 'user_group').map((e) => e.event)).toEqual([
      { type: 'user_group', op: 'update', group_id: id, data: { deactivated: true } },
      // For clients without include_deactivated_groups (the event tier gives each queue one of the two).
      { type: 'user_group', op: 'remove', group_id: id },
      { type: 'user_group', op: 'add_members', group_id: id, user_ids: [cast.admin.id] },
      { type: 'user_group', op: 'update', group_id: id, data: { deactivated: false } },
    ]);
  });

  test('a group in use: CANNOT_DEACTIVATE_GROUP_IN_USE lists every realm, channel, group and supergroup use', async () => {
    const id = await createGroup(cast.owner);
    const user = await createGroup(cast.owner, {
      can_mention_group: id,
      can_leave_group: { direct_members: [], direct_subgroups: [id] },
    });
    const supergroup = await createGroup(cast.owner, { subgroups: [id] });
    const channel = await stack.createStream({ name: 'objections' });
    await stack.db.groupSetting.updateMany({
      where: { owner_kind: 'stream', owner_id: channel.id, name: 'can_add_subscribers_group' },
      data: { group_id: id },
    });
    const archived = await stack.createStream({ name: 'archived objections' });
    await stack.db.stream.update({ where: { id: archived.id }, data: { is_archived: true } });
    await stack.db.groupSetting.updateMany({
      where: { owner_kind: 'stream', owner_id: archived.id, name: 'can_add_subscribers_group' },
      data: { group_id: id },
    });
    const original = await stack.db.groupSetting.findFirstOrThrow({
      where: { owner_kind: 'realm', owner_id: stack.realm.id, name: 'create_multiuse_invite_group' },
    });
    await setRealmSetting('create_multiuse_invite_group', id);
    await setRealmSetting('can_create_groups', id);
    try {
      const response = await cast.owner.client.post(`/api/v1/user_groups/${id}/deactivate`);
      expectError(response, 400, 'CANNOT_DEACTIVATE_GROUP_IN_USE', 'Cannot deactivate user group in use.');
      expect(response.body.objections).toEqual([
        { type: 'subgroup', supergroup_ids: [supergroup] },
        { type: 'channel', channel_id: channel.id, settings: ['can_add_subscribers_group'] },
        { type: 'user_group', group_id: user, settings: ['can_leave_group', 'can_mention_group'] },
        { type: 'realm', settings: ['can_create_groups', 'create_multiuse_invite_group'] },
      ]);
      expect((await stack.db.userGroup.findUniqueOrThrow({ where: { id } })).deactivated).toBe(false);
    } finally {
      await setRealmSetting('create_multiuse_invite_group', original.group_id);
      await setRealmSetting('can_create_groups', await systemGroupId(stack, 'role:members'));
    }
  });

  test('who may deactivate: the group managers; never system groups', async () => {
    const id = await createGroup(cast.member);
    expectError(
      await cast.moderator.client.post(`/api/v1/user_groups/${id}/deactivate`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.guest.client.post(`/api/v1/user_groups/${id}/deactivate`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.owner.client.post(`/api/v1/user_groups/${await systemGroupId(stack, 'role:members')}/deactivate`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.owner.client.post('/api/v1/user_groups/987654/deactivate'),
      400,
      'BAD_REQUEST',
      'Invalid user group',
    );
    expect((await cast.owner.client.post(`/api/v1/user_groups/${id}/deactivate`)).status).toBe(200);
  });
});

describe('PATCH /user_groups/{id}', () => {
  test('name, description and settings, each announced', async () => {
    const id = await createGroup(cast.member);
    const moderators = await systemGroupId(stack, 'role:moderators');
    const captured = await captureEvents(stack, async () => {
      expect(
        (
          await cast.member.client.patch(`/api/v1/user_groups/${id}`, {
            name: 'renamed group',
            description: 'New words',
            can_add_members_group: { new: moderators, old: { direct_members: [cast.member.id], direct_subgroups: [] } },
            can_join_group: { new: { direct_members: [cast.admin.id], direct_subgroups: [moderators] } },
          })
        ).status,
      ).toBe(200);
      expect(await groupDict(id)).toMatchObject({
        name: 'renamed group',
        description: 'New words',
        can_add_members_group: moderators,
        can_join_group: { direct_members: [cast.admin.id], direct_subgroups: [moderators] },
      });
    });
    expect(ofType(captured, 'user_group').map((e) => e.event.data)).toEqual([
      { name: 'renamed group' },
      { description: 'New words' },
      { can_add_members_group: moderators },
      { can_join_group: { direct_members: [cast.admin.id], direct_subgroups: [moderators] } },
    ]);
  });

  test('refusals: nothing supplied, stale old value, strangers, bad values', async () => {
    const id = await createGroup(cast.member);
    expectError(
      await cast.member.client.patch(`/api/v1/user_groups/${id}`),
      400,
      'BAD_REQUEST',
      'No new data supplied',
    );
    const stale = await cast.member.client.patch(`/api/v1/user_groups/${id}`, {
      can_join_group: { new: await systemGroupId(stack, 'role:members'), old: 1 },
    });
    expectError(stale, 400, 'EXPECTATION_MISMATCH', "'old' value does not match the expected value.");
    expectError(
      await cast.admin.client.patch(`/api/v1/user_groups/${id}`, { name: 'mine now' }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.member.client.patch(`/api/v1/user_groups/${id}`, {
        can_remove_members_group: { new: await systemGroupId(stack, 'role:everyone') },
      }),
      400,
      'BAD_REQUEST',
      "'can_remove_members_group' setting cannot be set to 'role:everyone' group.",
    );
    expectError(
      await cast.member.client.patch(`/api/v1/user_groups/${id}`, { can_join_group: 5 }),
      400,
      'BAD_REQUEST',
      'can_join_group is not a dict',
    );
  });
});

test('role changes keep the system groups in step (owner → guest)', async () => {
  const target = await stack.createUser({ email: 'steps@example.com', role: Role.OWNER });
  await cast.owner.client.patch(`/api/v1/users/${target.id}`, { role: Role.GUEST });
  const { body } = await cast.owner.client.get('/api/v1/user_groups');
  const holding = body.user_groups
    .filter((group: { members: number[] }) => group.members.includes(target.id))
    .map((g: { name: string }) => g.name);
  expect(holding).toEqual(['role:everyone']);
});
