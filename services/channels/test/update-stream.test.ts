// PATCH /streams/{id}: rules 1–8 of the spec, each with owner, admin, moderator, member and
// guest on public, private, web-public and archived channels; then every field and its events.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, type Params } from '@teamchat/testing';
import { canDeleteAnyMessageInChannel, canDeleteOwnMessageInChannel, Role } from '@teamchat/domain';
import { insertMessages, setRealmSetting, sorted, streamSettingGroupId, systemGroupId, uniqueName } from './helpers';

let stack: Stack;
let owner: TestUser;
let admin: TestUser;
let moderator: TestUser;
let member: TestUser;
let guest: TestUser;
let users: Record<RoleName, TestUser>;

type RoleName = 'owner' | 'admin' | 'moderator' | 'member' | 'guest';
type Kind = 'public' | 'private' | 'web-public' | 'archived';
const ROLES: RoleName[] = ['owner', 'admin', 'moderator', 'member', 'guest'];
const KINDS: Kind[] = ['public', 'private', 'web-public', 'archived'];

const INVALID = 'Invalid channel ID';
const CANNOT_ADMINISTER = 'You do not have permission to administer this channel.';

beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  owner = await stack.createUser({ role: Role.OWNER, fullName: 'Owner' });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR, fullName: 'Admin' });
  moderator = await stack.createUser({ role: Role.MODERATOR, fullName: 'Moderator' });
  member = await stack.createUser({ role: Role.MEMBER, fullName: 'Member' });
  guest = await stack.createUser({ role: Role.GUEST, fullName: 'Guest' });
  users = { owner, admin, moderator, member, guest };
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
});
afterAll(async () => stack?.close());

async function create(by: TestUser, params: Params = {}, name = uniqueName('channel')): Promise<number> {
  const res = await by.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], ...params });
  expect(res.body).toMatchObject({ result: 'success' });
  return (await stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name } })).id;
}

/**
 * One channel of each kind, created by the owner (so its channel administrators are the owner
 * and, as administrators, owner and admin). Only the owner is subscribed to the private one.
 */
async function channels(): Promise<Record<Kind, number>> {
  const archived = await create(owner);
  expect((await owner.client.delete(`/api/v1/streams/${archived}`)).status).toBe(200);
  return {
    public: await create(owner),
    private: await create(owner, { invite_only: true }),
    'web-public': await create(owner, { is_web_public: true }),
    archived,
  };
}

/** The error someone gets before any rule of a property applies: can they administer the channel? */
function gate(role: RoleName, kind: Kind): string | null {
  if (role === 'owner' || role === 'admin') return null;
  if (role === 'guest') return kind === 'web-public' ? CANNOT_ADMINISTER : INVALID;
  return kind === 'private' ? INVALID : CANNOT_ADMINISTER;
}

async function patch(user: TestUser, streamId: number, params: Params) {
  return user.client.patch(`/api/v1/streams/${streamId}`, params);
}

async function expectOutcome(user: TestUser, streamId: number, params: Params, error: string | null, label: string) {
  const res = await patch(user, streamId, params);
  try {
    if (error === null) expect(res.body).toMatchObject({ result: 'success' });
    else expectError(res, 400, 'BAD_REQUEST', error);
  } catch (failure) {
    throw new Error(`${label}: ${(failure as Error).message}`, { cause: failure });
  }
}

/**
 * Runs `params` as every role on every kind of channel, each role on channels of its own (so
 * one role's change does not decide the next one's answer); `ruleError` is what the rule says
 * once past the gate. Returns the owner's channels.
 */
async function matrix(params: (kind: Kind) => Params, ruleError: (role: RoleName, kind: Kind) => string | null) {
  let ownersChannels: Record<Kind, number> | undefined;
  for (const role of ROLES) {
    const ids = await channels();
    ownersChannels ??= ids;
    for (const kind of KINDS) {
      await expectOutcome(
        users[role],
        ids[kind],
        params(kind),
        gate(role, kind) ?? ruleError(role, kind),
        `${role} on ${kind}`,
      );
    }
  }
  return ownersChannels!;
}

describe('rule 1: administering a channel', () => {
  test('administrators edit any channel; others are told they cannot, or that it does not exist', async () => {
    const ids = await matrix(
      () => ({ description: 'Edited **description**' }),
      () => null,
    );
    const edited = await stack.db.stream.findMany({ where: { id: { in: Object.values(ids) } } });
    for (const stream of edited) expect(stream.rendered_description).toBe('<p>Edited <strong>description</strong></p>');
  });

  test('members of can_administer_channel_group edit it; guests never, even when listed', async () => {
    const ids = await channels();
    const moderators = await systemGroupId(stack, 'role:moderators');
    expect((await patch(owner, ids.public, { can_administer_channel_group: { new: moderators } })).status).toBe(200);
    await expectOutcome(moderator, ids.public, { description: 'by a moderator' }, null, 'moderator');
    await expectOutcome(member, ids.public, { description: 'by a member' }, CANNOT_ADMINISTER, 'member');
    // An anonymous group naming the guest and the member.
    expect(
      (
        await patch(owner, ids['web-public'], {
          can_administer_channel_group: { new: { direct_members: [guest.id, member.id], direct_subgroups: [] } },
        })
      ).status,
    ).toBe(200);
    await expectOutcome(member, ids['web-public'], { description: 'by a member' }, null, 'member in anonymous group');
    await expectOutcome(
      guest,
      ids['web-public'],
      { description: 'by a guest' },
      CANNOT_ADMINISTER,
      'guest in anonymous group',
    );
    // Channel administrators of a private channel see it without being subscribed.
    expect(
      (
        await patch(owner, ids.private, {
          can_administer_channel_group: { new: { direct_members: [member.id], direct_subgroups: [] } },
        })
      ).status,
    ).toBe(200);
    await expectOutcome(
      member,
      ids.private,
      { new_name: uniqueName('renamed-by-member') },
      null,
      'member administering a private channel',
    );
  });

  test('changing a private channel’s privacy needs content access, even for administrators', async () => {
    const ids = await matrix(
      (kind) => (kind === 'private' ? { is_private: false } : { is_private: kind !== 'web-public' }),
      (role, kind) => (kind === 'private' && role === 'admin' ? 'Channel content access is required.' : null),
    );
    // The owner made the private channel public (it was subscribed); the admin, once subscribed, may make it private.
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: ids.private } })).invite_only).toBe(false);
    const secret = await create(owner, { invite_only: true });
    await expectOutcome(
      admin,
      secret,
      { is_private: false },
      'Channel content access is required.',
      'admin unsubscribed',
    );
    await stack.subscribe(secret, [admin.id]);
    await expectOutcome(admin, secret, { is_private: false }, null, 'admin subscribed');
  });
});

describe('rule 2: history_public_to_subscribers', () => {
  test('false is refused for public and web-public channels, and with is_private=false', async () => {
    const ids = await matrix(
      () => ({ history_public_to_subscribers: false }),
      (_role, kind) => (kind === 'private' ? null : 'Invalid parameters'),
    );
    expect(
      (await stack.db.stream.findUniqueOrThrow({ where: { id: ids.private } })).history_public_to_subscribers,
    ).toBe(false);
    await expectOutcome(
      owner,
      ids.private,
      { is_private: false, history_public_to_subscribers: false },
      'Invalid parameters',
      'making it public with protected history',
    );
    await expectOutcome(
      owner,
      ids.private,
      { history_public_to_subscribers: true },
      null,
      'sharing the private history',
    );
    expect(
      (await stack.db.stream.findUniqueOrThrow({ where: { id: ids.private } })).history_public_to_subscribers,
    ).toBe(true);
  });

  test('a web-public channel cannot become private', async () => {
    const ids = await matrix(
      (kind) => (kind === 'web-public' ? { is_private: true } : { is_web_public: true, is_private: true }),
      () => 'Invalid parameters',
    );
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: ids['web-public'] } })).invite_only).toBe(false);
  });
});

describe('rule 3: topics_policy', () => {
  test('needs can_set_topics_policy_group (moderators) or the administrator role', async () => {
    const ids = await channels();
    for (const kind of KINDS) {
      // Everyone but guests administers these channels; the realm permission then decides.
      await patch(owner, ids[kind], {
        can_administer_channel_group: { new: await systemGroupId(stack, 'role:members') },
      });
      for (const role of ROLES) {
        const expected = role === 'guest' ? gate(role, kind) : role === 'member' ? 'Insufficient permission' : null;
        await expectOutcome(
          users[role],
          ids[kind],
          { topics_policy: role === 'owner' ? 'disable_empty_topic' : 'allow_empty_topic' },
          expected,
          `${role} on ${kind}`,
        );
      }
    }
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: ids.archived } })).topics_policy).toBe(
      'allow_empty_topic',
    );
  });

  test('all four values; empty_topic_only only when every message is in the empty topic', async () => {
    const streamId = await create(owner);
    for (const value of ['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only']) {
      await expectOutcome(owner, streamId, { topics_policy: value }, null, value);
      expect((await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).topics_policy).toBe(value);
    }
    expectError(
      await patch(owner, streamId, { topics_policy: 'sometimes' }),
      400,
      'BAD_REQUEST',
      'Invalid topics_policy',
    );
    await patch(owner, streamId, { topics_policy: 'inherit' });
    await insertMessages(stack, { streamId, senderId: owner.id, topic: '', count: 2, recipients: [owner.id] });
    await expectOutcome(owner, streamId, { topics_policy: 'empty_topic_only' }, null, 'only the empty topic');
    await patch(owner, streamId, { topics_policy: 'inherit' });
    await insertMessages(stack, { streamId, senderId: owner.id, topic: 'named', count: 1, recipients: [owner.id] });
    await expectOutcome(
      owner,
      streamId,
      { topics_policy: 'empty_topic_only' },
      'To enable this configuration, all messages in this channel must be in the "general chat" topic. Consider renaming or deleting other topics.',
      'a named topic exists',
    );
  });
});

describe('rule 4: permission settings and access', () => {
  test('can_add_subscribers_group needs content access; can_remove_subscribers_group metadata access', async () => {
    const moderators = await systemGroupId(stack, 'role:moderators');
    const ids = await matrix(
      () => ({ can_add_subscribers_group: { new: moderators } }),
      (role, kind) => (role === 'admin' && kind === 'private' ? 'Channel content access is required.' : null),
    );
    expect(await streamSettingGroupId(stack, ids.private, 'can_add_subscribers_group')).toBe(moderators);
    const more = await matrix(
      () => ({ can_remove_subscribers_group: { new: moderators } }),
      () => null,
    );
    expect(await streamSettingGroupId(stack, more.private, 'can_remove_subscribers_group')).toBe(moderators);
  });

  test('can_subscribe_group also needs content access, which its members then have', async () => {
    const secret = await create(owner, { invite_only: true });
    const members = await systemGroupId(stack, 'role:members');
    await expectOutcome(
      admin,
      secret,
      { can_subscribe_group: { new: members } },
      'Channel content access is required.',
      'admin',
    );
    await expectOutcome(owner, secret, { can_subscribe_group: { new: members } }, null, 'owner');
    // Now the admin reads the channel through can_subscribe_group.
    await expectOutcome(
      admin,
      secret,
      { can_add_subscribers_group: { new: members } },
      null,
      'admin with content access',
    );
  });

  test('settings that grant access refuse role:everyone; an old value must match', async () => {
    const streamId = await create(owner);
    const everyone = await systemGroupId(stack, 'role:everyone');
    const nobody = await systemGroupId(stack, 'role:nobody');
    for (const name of ['can_add_subscribers_group', 'can_administer_channel_group', 'can_subscribe_group']) {
      expectError(
        await patch(owner, streamId, { [name]: { new: everyone } }),
        400,
        'BAD_REQUEST',
        `'${name}' setting cannot be set to 'role:everyone' group.`,
      );
    }
    expectError(
      await patch(owner, streamId, { can_remove_subscribers_group: { new: everyone, old: nobody } }),
      400,
      'EXPECTATION_MISMATCH',
      "'old' value does not match the expected value.",
    );
    const admins = await systemGroupId(stack, 'role:administrators');
    await expectOutcome(
      owner,
      streamId,
      { can_remove_subscribers_group: { new: everyone, old: admins } },
      null,
      'matching old',
    );
    expectError(
      await patch(owner, streamId, { can_send_message_group: { new: 999999 } }),
      400,
      'BAD_REQUEST',
      'Invalid user group',
    );
    expectError(
      await patch(owner, streamId, {
        can_send_message_group: { new: { direct_members: [999999], direct_subgroups: [] } },
      }),
      400,
      'BAD_REQUEST',
      'Invalid user ID: 999999',
    );
    expectError(await patch(owner, streamId, { can_send_message_group: '{"new": true}' }), 400, 'BAD_REQUEST');
  });

  test('anonymous values leave deactivated users out and are reused; a single group is that group', async () => {
    const streamId = await create(owner);
    const gone = await stack.createUser({ fullName: 'Gone' });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    const moderators = await systemGroupId(stack, 'role:moderators');
    await expectOutcome(
      owner,
      streamId,
      { can_send_message_group: { new: { direct_members: [member.id, gone.id], direct_subgroups: [moderators] } } },
      null,
      'anonymous',
    );
    const groupId = await streamSettingGroupId(stack, streamId, 'can_send_message_group');
    const holders = await stack.db.userGroupMembership.findMany({ where: { user_group_id: groupId } });
    expect(holders.map((row) => row.user_profile_id)).toEqual([member.id]);
    const stream = (await owner.client.get(`/api/v1/streams/${streamId}`)).body.stream;
    expect(stream.can_send_message_group).toEqual({ direct_members: [member.id], direct_subgroups: [moderators] });
    // Same value again: nothing changes, no event.
    const captured = await captureEvents(stack, () =>
      expectOutcome(
        owner,
        streamId,
        { can_send_message_group: { new: { direct_members: [member.id], direct_subgroups: [moderators] } } },
        null,
        'same value',
      ),
    );
    expect(captured).toEqual([]);
    // {direct_members: [], direct_subgroups: [g]} is g; the replaced anonymous group is deleted.
    await expectOutcome(
      owner,
      streamId,
      { can_send_message_group: { new: { direct_members: [], direct_subgroups: [moderators] } } },
      null,
      'one subgroup',
    );
    expect(await streamSettingGroupId(stack, streamId, 'can_send_message_group')).toBe(moderators);
    expect(await stack.db.userGroup.findUnique({ where: { id: groupId } })).toBeNull();
  });
});

describe('rule 5: adding subscribers', () => {
  test('channel administrators add to public channels whatever the realm allows; can_add_subscribers_group members add to private ones unsubscribed', async () => {
    await setRealmSetting(stack, 'can_add_subscribers_group', 'role:administrators');
    try {
      const streamId = await create(owner);
      const subscribeOthers = (by: TestUser, name: string) =>
        by.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], principals: [guest.id] });
      const name = (await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).name;
      expectError(await subscribeOthers(member, name), 400, 'BAD_REQUEST', 'Insufficient permission');
      await patch(owner, streamId, {
        can_administer_channel_group: { new: { direct_members: [member.id], direct_subgroups: [] } },
      });
      expect((await subscribeOthers(member, name)).body.subscribed).toEqual({ [guest.id]: [name] });

      const secret = await create(owner, { invite_only: true });
      const secretName = (await stack.db.stream.findUniqueOrThrow({ where: { id: secret } })).name;
      expectError(
        await subscribeOthers(moderator, secretName),
        400,
        'BAD_REQUEST',
        `Unable to access channel (${secretName}).`,
      );
      await patch(owner, secret, { can_add_subscribers_group: { new: await systemGroupId(stack, 'role:moderators') } });
      expect((await subscribeOthers(moderator, secretName)).body.subscribed).toEqual({ [guest.id]: [secretName] });
      expect(
        await stack.db.subscription.findFirst({ where: { stream_id: secret, user_profile_id: moderator.id } }),
      ).toBeNull();
    } finally {
      await setRealmSetting(stack, 'can_add_subscribers_group', 'role:members');
    }
  });
});

describe('rule 6: administrators act as channel administrators and subscriber removers', () => {
  test('with both settings at role:nobody, administrators still edit and unsubscribe others', async () => {
    const streamId = await create(owner, {}, uniqueName('nobody'));
    const nobody = await systemGroupId(stack, 'role:nobody');
    await expectOutcome(
      owner,
      streamId,
      { can_administer_channel_group: { new: nobody }, can_remove_subscribers_group: { new: nobody } },
      null,
      'owner',
    );
    const name = (await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).name;
    await stack.subscribe(streamId, [member.id, moderator.id]);
    await expectOutcome(admin, streamId, { description: 'admin' }, null, 'admin edits');
    await expectOutcome(moderator, streamId, { description: 'moderator' }, CANNOT_ADMINISTER, 'moderator edits');
    expectError(
      await moderator.client.delete('/api/v1/users/me/subscriptions', {
        subscriptions: [name],
        principals: [member.id],
      }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    const removed = await admin.client.delete('/api/v1/users/me/subscriptions', {
      subscriptions: [name],
      principals: [member.id],
    });
    expect(removed.body).toMatchObject({ removed: [name], not_removed: [] });
  });
});

describe('rule 7: deleting messages in a channel', () => {
  test('the channel delete permissions need can_set_delete_message_policy_group unless set to nobody', async () => {
    const everyone = await systemGroupId(stack, 'role:everyone');
    const nobody = await systemGroupId(stack, 'role:nobody');
    const members = await systemGroupId(stack, 'role:members');
    for (const role of ROLES) {
      const ids = await channels();
      for (const kind of KINDS) {
        // Everyone but guests administers these channels; the realm permission then decides.
        await patch(owner, ids[kind], { can_administer_channel_group: { new: members } });
        const expected = role === 'guest' ? gate(role, kind) : role === 'member' ? 'Insufficient permission' : null;
        await expectOutcome(
          users[role],
          ids[kind],
          { can_delete_any_message_group: { new: everyone }, can_delete_own_message_group: { new: everyone } },
          expected,
          `${role} on ${kind}`,
        );
        if (role === 'member')
          await expectOutcome(
            member,
            ids[kind],
            { can_delete_any_message_group: { new: nobody } },
            null,
            `member sets nobody on ${kind}`,
          );
      }
    }
  });

  test('the organisation’s permission or the channel’s, with content access', async () => {
    const streamId = await create(owner, { invite_only: true });
    await stack.subscribe(streamId, [member.id]);
    const stream = await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } });
    const viewer = (u: TestUser) => ({ id: u.id, realm_id: stack.realm.id, role: u.profile.role });
    // Realm default: administrators delete any message, but only in channels they can read.
    expect(await canDeleteAnyMessageInChannel(stack.db, viewer(owner), stream)).toBe(true);
    expect(await canDeleteAnyMessageInChannel(stack.db, viewer(admin), stream)).toBe(false);
    expect(await canDeleteAnyMessageInChannel(stack.db, viewer(member), stream)).toBe(false);
    await patch(owner, streamId, {
      can_delete_any_message_group: { new: { direct_members: [member.id], direct_subgroups: [] } },
    });
    expect(await canDeleteAnyMessageInChannel(stack.db, viewer(member), stream)).toBe(true);
    expect(await canDeleteOwnMessageInChannel(stack.db, viewer(guest), stream)).toBe(false);
    expect(await canDeleteOwnMessageInChannel(stack.db, viewer(member), stream)).toBe(true);
  });
});

describe('rule 8: archived channels and removed parameters', () => {
  test('archived channels can change privacy and be un-archived; only un-archiving is done', async () => {
    const ids = await matrix(
      (kind) => (kind === 'archived' ? { is_private: true } : { description: 'x' }),
      () => null,
    );
    const archived = await stack.db.stream.findUniqueOrThrow({ where: { id: ids.archived } });
    expect(archived).toMatchObject({ invite_only: true, history_public_to_subscribers: false, is_archived: true });
    expectError(
      await patch(owner, ids.public, { is_archived: false }),
      400,
      'BAD_REQUEST',
      'Channel is not currently deactivated',
    );
    // A private channel nobody is subscribed to cannot come back.
    await stack.db.subscription.updateMany({ where: { stream_id: ids.archived }, data: { active: false } });
    expectError(
      await patch(owner, ids.archived, { is_archived: false }),
      400,
      'BAD_REQUEST',
      'Channel is private and have no subscribers',
    );
    await stack.subscribe(ids.archived, [owner.id]);
    await stack.db.subscription.updateMany({ where: { stream_id: ids.archived }, data: { active: true } });
    const events = await captureEvents(stack, () =>
      expectOutcome(owner, ids.archived, { is_archived: false }, null, 'un-archive'),
    );
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: ids.archived } })).is_archived).toBe(false);
    expect(ofType(events, 'stream', 'update')[0].event).toMatchObject({
      property: 'is_archived',
      value: false,
      stream_id: ids.archived,
    });
    expect(ofType(events, 'stream', 'create')[0].event.streams[0]).toMatchObject({
      stream_id: ids.archived,
      is_archived: false,
    });
    // is_archived=true is not how one archives: nothing happens.
    await expectOutcome(owner, ids.public, { is_archived: true }, null, 'archive through PATCH');
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: ids.public } })).is_archived).toBe(false);
  });

  test('stream_post_policy and is_announcement_only are no longer parameters', async () => {
    const streamId = await create(owner);
    const res = await patch(owner, streamId, { stream_post_policy: 2, is_announcement_only: true, description: 'd' });
    expect(res.body.ignored_parameters_unsupported).toEqual(['is_announcement_only', 'stream_post_policy']);
    expect((await owner.client.get(`/api/v1/streams/${streamId}`)).body.stream).toMatchObject({
      stream_post_policy: 1,
      is_announcement_only: false,
    });
  });
});

describe('every field', () => {
  test('new_name: length, characters, uniqueness; event with the old name', async () => {
    const streamId = await create(owner, {}, uniqueName('Original'));
    const original = (await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).name;
    const other = await create(owner, {}, uniqueName('Other'));
    const otherName = (await stack.db.stream.findUniqueOrThrow({ where: { id: other } })).name;
    expectError(
      await patch(owner, streamId, { new_name: original }),
      400,
      'BAD_REQUEST',
      'Channel already has that name.',
    );
    expectError(await patch(owner, streamId, { new_name: '   ' }), 400, 'BAD_REQUEST', "Channel name can't be empty.");
    expectError(
      await patch(owner, streamId, { new_name: 'x'.repeat(61) }),
      400,
      'BAD_REQUEST',
      'Channel name too long (limit: 60 characters).',
    );
    expectError(
      await patch(owner, streamId, { new_name: 'bad\u0007name' }),
      400,
      'BAD_REQUEST',
      'Invalid character in channel name, at position 4.',
    );
    // Unassigned code points (category Cn, e.g. the non-character U+FDD0) are refused like controls.
    expectError(
      await patch(owner, streamId, { new_name: 'ab\uFDD0' }),
      400,
      'BAD_REQUEST',
      'Invalid character in channel name, at position 3.',
    );
    const clash = await patch(owner, streamId, { new_name: otherName.toUpperCase() });
    expectError(clash, 400, 'CHANNEL_ALREADY_EXISTS', `Channel '${otherName}' already exists`);
    const captured = await captureEvents(stack, () =>
      expectOutcome(owner, streamId, { new_name: original.toUpperCase() }, null, 'case-only rename'),
    );
    const [event] = ofType(captured, 'stream', 'update');
    expect(event.event).toEqual({
      type: 'stream',
      op: 'update',
      stream_id: streamId,
      name: original,
      property: 'name',
      value: original.toUpperCase(),
    });
    // A public channel: every non-guest hears of it.
    expect(event.recipientIds).toEqual(sorted([owner.id, admin.id, moderator.id, member.id]));
  });

  test('description: Markdown rendered, one line, bounded; event with rendered_description', async () => {
    const streamId = await create(owner, { invite_only: true });
    await stack.subscribe(streamId, [guest.id]);
    expectError(
      await patch(owner, streamId, { description: 'd'.repeat(1025) }),
      400,
      'BAD_REQUEST',
      'description is too long (limit: 1024 characters)',
    );
    const captured = await captureEvents(stack, () =>
      expectOutcome(
        owner,
        streamId,
        { description: 'See *this*\nand [that](https://example.com)' },
        null,
        'description',
      ),
    );
    const stream = await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } });
    expect(stream.description).toBe('See *this* and [that](https://example.com)');
    expect(stream.rendered_description).toBe('<p>See <em>this</em> and <a href="https://example.com">that</a></p>');
    const [event] = captured;
    expect(event.event).toMatchObject({
      property: 'description',
      value: stream.description,
      rendered_description: stream.rendered_description,
    });
    // A private channel: subscribers (the owner, the guest) and administrators.
    expect(event.recipientIds).toEqual(sorted([owner.id, admin.id, guest.id]));
  });

  test('message_retention_days: owners only; days, realm_default, unlimited, legacy forever', async () => {
    const streamId = await create(owner);
    await patch(owner, streamId, { can_administer_channel_group: { new: await systemGroupId(stack, 'role:members') } });
    for (const role of ['admin', 'moderator', 'member'] as const) {
      expectError(
        await patch(users[role], streamId, { message_retention_days: 30 }),
        400,
        'UNAUTHORIZED_PRINCIPAL',
        'Must be an organization owner',
      );
    }
    const retention = async () =>
      (await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).message_retention_days;
    await expectOutcome(owner, streamId, { message_retention_days: 30 }, null, '30');
    expect(await retention()).toBe(30);
    await expectOutcome(owner, streamId, { message_retention_days: 'unlimited' }, null, 'unlimited');
    expect(await retention()).toBe(-1);
    await expectOutcome(owner, streamId, { message_retention_days: 'realm_default' }, null, 'realm_default');
    expect(await retention()).toBeNull();
    await expectOutcome(owner, streamId, { message_retention_days: 'forever' }, null, 'forever');
    expect(await retention()).toBe(-1);
    expectError(
      await patch(owner, streamId, { message_retention_days: 0 }),
      400,
      'REQUEST_VARIABLE_INVALID',
      "Bad value for 'message_retention_days': 0",
    );
    expectError(
      await patch(owner, streamId, { message_retention_days: 'soon' }),
      400,
      'REQUEST_VARIABLE_INVALID',
      "Bad value for 'message_retention_days': soon",
    );
  });

  test('is_default_stream: administrators only, never private; default_streams event', async () => {
    const streamId = await create(owner);
    await patch(owner, streamId, { can_administer_channel_group: { new: await systemGroupId(stack, 'role:members') } });
    expectError(
      await patch(member, streamId, { is_default_stream: true }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
    const captured = await captureEvents(stack, () =>
      expectOutcome(admin, streamId, { is_default_stream: true }, null, 'admin'),
    );
    const [event] = ofType(captured, 'default_streams');
    expect(event.event.default_streams).toContain(streamId);
    expect(event.recipientIds).toEqual(sorted([owner.id, admin.id, moderator.id, member.id]));
    expectError(
      await patch(admin, streamId, { is_private: true }),
      400,
      'BAD_REQUEST',
      'A default channel cannot be private.',
    );
    await expectOutcome(
      admin,
      streamId,
      { is_default_stream: false, is_private: true },
      null,
      'no longer default, then private',
    );
  });

  test('is_web_public: server and organisation settings, can_create_web_public_channel_group', async () => {
    const streamId = await create(owner);
    await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: false } });
    try {
      expectError(
        await patch(owner, streamId, { is_web_public: true }),
        400,
        'BAD_REQUEST',
        'Web-public channels are not enabled.',
      );
    } finally {
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
    }
    expectError(await patch(admin, streamId, { is_web_public: true }), 400, 'BAD_REQUEST', 'Insufficient permission');
    const events = await captureEvents(stack, () =>
      expectOutcome(owner, streamId, { is_web_public: true }, null, 'owner'),
    );
    const update = ofType(events, 'stream', 'update')[0];
    expect(update.event).toMatchObject({
      property: 'invite_only',
      value: false,
      is_web_public: true,
      history_public_to_subscribers: true,
    });
    // The guest can now see it: it is created for them, with its subscribers.
    expect(ofType(events, 'stream', 'create')[0].recipientIds).toEqual([guest.id]);
    expect(ofType(events, 'subscription', 'peer_add')[0]).toMatchObject({
      recipientIds: [guest.id],
      event: { stream_ids: [streamId], user_ids: [owner.id] },
    });
  });

  test('is_private: events to those who keep, gain and lose sight of the channel', async () => {
    const streamId = await create(owner);
    await stack.subscribe(streamId, [member.id]);
    let events = await captureEvents(stack, () =>
      expectOutcome(owner, streamId, { is_private: true }, null, 'make private'),
    );
    expect(ofType(events, 'stream', 'update')[0]).toMatchObject({
      recipientIds: sorted([owner.id, admin.id, member.id]),
      event: { property: 'invite_only', value: true, history_public_to_subscribers: false, is_web_public: false },
    });
    expect(ofType(events, 'stream', 'delete')[0]).toMatchObject({
      recipientIds: [moderator.id],
      event: { stream_ids: [streamId] },
    });
    events = await captureEvents(stack, () =>
      expectOutcome(owner, streamId, { is_private: false }, null, 'make public'),
    );
    expect(ofType(events, 'stream', 'create')[0].recipientIds).toEqual([moderator.id]);
    expect(ofType(events, 'subscription', 'peer_add')[0].event.user_ids).toEqual(sorted([owner.id, member.id]));
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).history_public_to_subscribers).toBe(
      true,
    );
  });

  test('folder_id: a folder of the realm, null removes', async () => {
    const streamId = await create(owner);
    const folder = await owner.client.post('/api/v1/channel_folders/create', {
      name: uniqueName('Folder'),
      description: '',
    });
    const folderId = folder.body.channel_folder_id;
    expectError(await patch(owner, streamId, { folder_id: 999999 }), 400, 'BAD_REQUEST', 'Invalid channel folder ID');
    let captured = await captureEvents(stack, () =>
      expectOutcome(owner, streamId, { folder_id: folderId }, null, 'into the folder'),
    );
    expect(captured[0].event).toMatchObject({ property: 'folder_id', value: folderId });
    captured = await captureEvents(stack, () =>
      expectOutcome(owner, streamId, { folder_id: null }, null, 'out of the folder'),
    );
    expect(captured[0].event).toMatchObject({ property: 'folder_id', value: null });
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).folder_id).toBeNull();
  });

  test('group settings: update events per setting; can_send_message_group moves the legacy policy', async () => {
    const streamId = await create(owner);
    const admins = await systemGroupId(stack, 'role:administrators');
    const captured = await captureEvents(stack, () =>
      expectOutcome(
        owner,
        streamId,
        {
          can_send_message_group: { new: admins },
          can_delete_own_message_group: { new: { direct_members: [member.id], direct_subgroups: [] } },
        },
        null,
        'two settings',
      ),
    );
    const updates = ofType(captured, 'stream', 'update').map((e) => [e.event.property, e.event.value]);
    expect(updates).toEqual([
      ['can_send_message_group', admins],
      ['stream_post_policy', 2],
      ['is_announcement_only', true],
      ['can_delete_own_message_group', { direct_members: [member.id], direct_subgroups: [] }],
    ]);
  });

  test('one update event per changed property, to everyone who can see the channel', async () => {
    const streamId = await create(owner, { invite_only: true });
    await stack.subscribe(streamId, [member.id]);
    const moderators = await systemGroupId(stack, 'role:moderators');
    const events = await captureEvents(stack, () =>
      expectOutcome(
        owner,
        streamId,
        {
          message_retention_days: 7,
          topics_policy: 'allow_empty_topic',
          description: 'same',
          can_remove_subscribers_group: { new: moderators },
        },
        null,
        'several properties',
      ),
    );
    expect(events.map((e) => [e.event.property, e.event.value])).toEqual([
      ['message_retention_days', 7],
      ['topics_policy', 'allow_empty_topic'],
      ['description', 'same'],
      ['can_remove_subscribers_group', moderators],
    ]);
    // Private: subscribers (owner, member), administrators (owner, admin).
    for (const event of events) expect(event.recipientIds).toEqual(sorted([owner.id, admin.id, member.id]));
    // Nothing changes the second time: no events.
    const again = await captureEvents(stack, () =>
      expectOutcome(
        owner,
        streamId,
        { message_retention_days: 7, topics_policy: 'allow_empty_topic', description: 'same' },
        null,
        'unchanged',
      ),
    );
    expect(again).toEqual([]);
  });

  test('an error anywhere changes nothing', async () => {
    const streamId = await create(owner, {}, uniqueName('atomic'));
    const before = await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } });
    const captured = await captureEvents(stack, async () => {
      const res = await patch(owner, streamId, {
        description: 'changed',
        new_name: uniqueName('renamed'),
        can_subscribe_group: { new: await systemGroupId(stack, 'role:everyone') },
      });
      expectError(res, 400, 'BAD_REQUEST', "'can_subscribe_group' setting cannot be set to 'role:everyone' group.");
    });
    expect(await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).toEqual(before);
    expect(captured).toEqual([]);
  });

  test('an unknown channel, and a path that is not a channel id', async () => {
    expectError(await patch(owner, 999999, { description: 'x' }), 400, 'BAD_REQUEST', INVALID);
    expectError(await owner.client.patch('/api/v1/streams/abc', { description: 'x' }), 404, 'BAD_REQUEST');
  });
});
