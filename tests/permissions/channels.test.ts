// Permission matrix: channel administration — creating, updating, archiving channels, their
// can_*_group settings, adding and removing subscribers, default channels, channel folders,
// and deleting topics (spec: Update a channel rules 1-8, Delete a topic, Authentication 4).

import { systemGroupId } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type Params } from '@teamchat/testing';
import {
  ADMIN_REQUIRED,
  CANNOT_ADMINISTER,
  createCast,
  GUESTS_NOT_ALLOWED,
  INSUFFICIENT,
  INVALID_CHANNEL,
  matrix,
  only,
  OWNER_REQUIRED,
  refused,
  type Cast,
} from './matrix';

let stack: Stack;
let cast: Cast;
const theCast = () => cast;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'worker'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

let counter = 0;
const uniqueName = (prefix: string) => `${prefix}-${++counter}`;

/** A channel created through the API by `creator` (who becomes its channel administrator). */
async function createChannel(
  creator: TestUser,
  options: { private?: boolean; subscribers?: TestUser[] } = {},
): Promise<{ id: number; name: string }> {
  const name = uniqueName(options.private ? 'secret' : 'open');
  const response = await creator.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name }],
    invite_only: options.private ?? false,
    ...(options.subscribers ? { principals: [creator.id, ...options.subscribers.map((user) => user.id)] } : {}),
  });
  if (response.status !== 200) throw new Error(`channel creation failed: ${JSON.stringify(response.body)}`);
  const stream = await stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name } });
  return { id: stream.id, name };
}

async function streamSettingGroupId(streamId: number, name: string): Promise<number> {
  return (
    await stack.db.groupSetting.findUniqueOrThrow({
      where: { owner_kind_owner_id_name: { owner_kind: 'stream', owner_id: streamId, name } },
    })
  ).group_id;
}

async function isSubscribed(userId: number, streamId: number): Promise<boolean> {
  const sub = await stack.db.subscription.findFirst({
    where: { user_profile_id: userId, stream_id: streamId, active: true },
  });
  return sub !== null;
}

const everyoneBut = (cast: Cast, role: keyof Cast) =>
  Object.entries(cast)
    .filter(([name]) => name !== role)
    .map(([, user]) => user);

// ------------------------------------------------------------------ creating channels

describe('creating channels (POST /users/me/subscriptions with new names)', () => {
  const create = (extra: Record<string, unknown>) => ({
    setup: async () => uniqueName('new'),
    act: (actor: TestUser, name: string) =>
      actor.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], ...extra }),
    // A refused creation creates nothing.
    verify: async (name: string, allowed: boolean) =>
      expect(await stack.db.stream.count({ where: { realm_id: stack.realm.id, name } })).toBe(allowed ? 1 : 0),
  });

  // Default realm settings: can_create_public/private_channel_group = role:members.
  matrix('public channel', theCast, {
    ...create({}),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'bot'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });
  matrix('private channel', theCast, {
    ...create({ invite_only: true }),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'bot'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });
  matrix('default channel (is_default_stream): administrators only', theCast, {
    ...create({ is_default_stream: true }),
    expect: only(['owner', 'administrator'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });
  matrix('channel with a retention policy: owners only', theCast, {
    ...create({ message_retention_days: 30 }),
    expect: only(['owner'], OWNER_REQUIRED, { guest: GUESTS_NOT_ALLOWED }),
  });
  matrix('channel with can_delete_any_message_group: can_set_delete_message_policy_group (moderators)', theCast, {
    setup: async () => uniqueName('new'),
    act: async (actor, name) =>
      actor.client.post('/api/v1/users/me/subscriptions', {
        subscriptions: [{ name }],
        can_delete_any_message_group: await systemGroupId(stack.db, stack.realm.id, 'role:moderators'),
      }),
    expect: only(['owner', 'administrator', 'moderator'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });

  describe('web-public channels (can_create_web_public_channel_group = owners)', () => {
    beforeAll(() => stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } }));
    afterAll(() => stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: false } }));
    matrix('web-public channel', theCast, {
      ...create({ is_web_public: true }),
      expect: only(['owner'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
    });
  });

  describe('with can_create_public_channel_group = administrators', () => {
    beforeAll(() => stack.setRealmGroupSetting('can_create_public_channel_group', 'role:administrators'));
    afterAll(() => stack.setRealmGroupSetting('can_create_public_channel_group', 'role:members'));
    matrix('public channel', theCast, {
      ...create({}),
      expect: only(['owner', 'administrator'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
    });
  });

  describe('with can_create_private_channel_group = moderators', () => {
    beforeAll(() => stack.setRealmGroupSetting('can_create_private_channel_group', 'role:moderators'));
    afterAll(() => stack.setRealmGroupSetting('can_create_private_channel_group', 'role:members'));
    matrix('private channel', theCast, {
      ...create({ invite_only: true }),
      expect: only(['owner', 'administrator', 'moderator'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
    });
  });
});

// ------------------------------------------------------------------ updating channels

describe('PATCH /streams/{stream_id}', () => {
  const patch = (actor: TestUser, streamId: number, params: Params) =>
    actor.client.patch(`/api/v1/streams/${streamId}`, params);
  const description = async (streamId: number) =>
    (await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).description;

  matrix('description of a public channel the owner created', theCast, {
    setup: () => createChannel(cast.owner),
    act: (actor, stream) => patch(actor, stream.id, { description: 'changed' }),
    verify: async (stream, allowed) => expect(await description(stream.id)).toBe(allowed ? 'changed' : ''),
    // Rule 1 and 6: organisation administrators, or the channel's administrators (its creator).
    // Those who can read the channel are told they cannot administer it; guests cannot see it.
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  matrix('description of a public channel the member created (creator administers it)', theCast, {
    setup: () => createChannel(cast.member),
    act: (actor, stream) => patch(actor, stream.id, { description: 'changed' }),
    verify: async (stream, allowed) => expect(await description(stream.id)).toBe(allowed ? 'changed' : ''),
    expect: only(['owner', 'administrator', 'member'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  matrix('description of a private channel only the owner is subscribed to', theCast, {
    setup: () => createChannel(cast.owner, { private: true }),
    act: (actor, stream) => patch(actor, stream.id, { description: 'changed' }),
    verify: async (stream, allowed) => expect(await description(stream.id)).toBe(allowed ? 'changed' : ''),
    // Administrators have metadata access; nobody else may learn the channel exists.
    expect: only(['owner', 'administrator'], INVALID_CHANNEL),
  });

  matrix('description of a private channel everyone is subscribed to', theCast, {
    setup: () => createChannel(cast.owner, { private: true, subscribers: everyoneBut(cast, 'owner') }),
    act: (actor, stream) => patch(actor, stream.id, { description: 'changed' }),
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER),
  });

  matrix('new_name, with can_administer_channel_group = role:moderators', theCast, {
    setup: async () => {
      const stream = await createChannel(cast.owner);
      expect(
        (
          await patch(cast.owner, stream.id, {
            can_administer_channel_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:moderators') },
          })
        ).status,
      ).toBe(200);
      return stream;
    },
    act: (actor, stream) => patch(actor, stream.id, { new_name: `${stream.name}-renamed` }),
    verify: async (stream, allowed) =>
      expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).name).toBe(
        allowed ? `${stream.name}-renamed` : stream.name,
      ),
    expect: only(['owner', 'administrator', 'moderator'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  matrix('can_administer_channel_group itself (owner-created public channel)', theCast, {
    setup: () => createChannel(cast.owner),
    act: async (actor, stream) =>
      patch(actor, stream.id, {
        can_administer_channel_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:members') },
      }),
    verify: async (stream, allowed) => {
      const holder = await streamSettingGroupId(stream.id, 'can_administer_channel_group');
      if (allowed) expect(holder).toBe(await systemGroupId(stack.db, stack.realm.id, 'role:members'));
      else expect(holder).not.toBe(await systemGroupId(stack.db, stack.realm.id, 'role:members'));
    },
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  // Rule 4: can_add_subscribers_group needs content access as well as administration rights.
  matrix('can_add_subscribers_group of a private channel only the owner is subscribed to', theCast, {
    setup: () => createChannel(cast.owner, { private: true }),
    act: async (actor, stream) =>
      patch(actor, stream.id, {
        can_add_subscribers_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:administrators') },
      }),
    expect: only(['owner'], INVALID_CHANNEL, { administrator: refused('Channel content access is required.') }),
  });

  // Rule 4: can_remove_subscribers_group needs only metadata access.
  matrix('can_remove_subscribers_group of a private channel only the owner is subscribed to', theCast, {
    setup: () => createChannel(cast.owner, { private: true }),
    act: async (actor, stream) =>
      patch(actor, stream.id, {
        can_remove_subscribers_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:moderators') },
      }),
    verify: async (stream, allowed) => {
      const holder = await streamSettingGroupId(stream.id, 'can_remove_subscribers_group');
      expect(holder).toBe(
        await systemGroupId(stack.db, stack.realm.id, allowed ? 'role:moderators' : 'role:administrators'),
      );
    },
    expect: only(['owner', 'administrator'], INVALID_CHANNEL),
  });

  matrix('can_send_message_group of a public channel the member created', theCast, {
    setup: () => createChannel(cast.member),
    act: async (actor, stream) =>
      patch(actor, stream.id, {
        can_send_message_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:moderators') },
      }),
    expect: only(['owner', 'administrator', 'member'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  // Rule 7: channel delete permissions need can_set_delete_message_policy_group (moderators).
  matrix('can_delete_any_message_group of a channel the member created', theCast, {
    setup: () => createChannel(cast.member),
    act: async (actor, stream) =>
      patch(actor, stream.id, {
        can_delete_any_message_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:moderators') },
      }),
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { member: INSUFFICIENT, guest: INVALID_CHANNEL }),
  });

  matrix('topics_policy of a channel the member created (can_set_topics_policy_group = moderators)', theCast, {
    setup: () => createChannel(cast.member),
    act: (actor, stream) => patch(actor, stream.id, { topics_policy: 'disable_empty_topic' }),
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { member: INSUFFICIENT, guest: INVALID_CHANNEL }),
  });

  matrix('is_default_stream of a channel the member created: administrators only', theCast, {
    setup: () => createChannel(cast.member),
    act: (actor, stream) => patch(actor, stream.id, { is_default_stream: true }),
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { member: ADMIN_REQUIRED, guest: INVALID_CHANNEL }),
  });

  matrix('message_retention_days of a channel the member created: owners only', theCast, {
    setup: () => createChannel(cast.member),
    act: (actor, stream) => patch(actor, stream.id, { message_retention_days: 30 }),
    expect: only(['owner'], CANNOT_ADMINISTER, {
      administrator: OWNER_REQUIRED,
      member: OWNER_REQUIRED,
      guest: INVALID_CHANNEL,
    }),
  });

  matrix('is_private=true on a public channel the member created', theCast, {
    setup: () => createChannel(cast.member),
    act: (actor, stream) => patch(actor, stream.id, { is_private: true }),
    verify: async (stream, allowed) =>
      expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).invite_only).toBe(allowed),
    expect: only(['owner', 'administrator', 'member'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  matrix('is_web_public=true (spectator access on; can_create_web_public_channel_group = owners)', theCast, {
    setup: async () => {
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
      return createChannel(cast.member);
    },
    act: (actor, stream) => patch(actor, stream.id, { is_web_public: true }),
    verify: async (stream, allowed) => {
      expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).is_web_public).toBe(allowed);
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: false } });
    },
    expect: only(['owner'], CANNOT_ADMINISTER, {
      administrator: INSUFFICIENT,
      member: INSUFFICIENT,
      guest: INVALID_CHANNEL,
    }),
  });
});

// ------------------------------------------------------------------ archiving

describe('DELETE /streams/{stream_id} (archive)', () => {
  const archived = async (streamId: number) =>
    (await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } })).is_archived;

  matrix('a public channel the owner created', theCast, {
    setup: () => createChannel(cast.owner),
    act: (actor, stream) => actor.client.delete(`/api/v1/streams/${stream.id}`),
    verify: async (stream, allowed) => expect(await archived(stream.id)).toBe(allowed),
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  matrix('a public channel the member created', theCast, {
    setup: () => createChannel(cast.member),
    act: (actor, stream) => actor.client.delete(`/api/v1/streams/${stream.id}`),
    verify: async (stream, allowed) => expect(await archived(stream.id)).toBe(allowed),
    expect: only(['owner', 'administrator', 'member'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });

  matrix('a private channel only the owner is subscribed to', theCast, {
    setup: () => createChannel(cast.owner, { private: true }),
    act: (actor, stream) => actor.client.delete(`/api/v1/streams/${stream.id}`),
    verify: async (stream, allowed) => expect(await archived(stream.id)).toBe(allowed),
    expect: only(['owner', 'administrator'], INVALID_CHANNEL),
  });

  matrix('un-archiving (PATCH is_archived=false) a public channel the owner archived', theCast, {
    setup: async () => {
      const stream = await createChannel(cast.owner);
      expect((await cast.owner.client.delete(`/api/v1/streams/${stream.id}`)).status).toBe(200);
      return stream;
    },
    act: (actor, stream) => actor.client.patch(`/api/v1/streams/${stream.id}`, { is_archived: false }),
    verify: async (stream, allowed) => expect(await archived(stream.id)).toBe(!allowed),
    expect: only(['owner', 'administrator'], CANNOT_ADMINISTER, { guest: INVALID_CHANNEL }),
  });
});

// ------------------------------------------------------------------ subscribers

describe('adding subscribers (POST /users/me/subscriptions with principals)', () => {
  let target: TestUser;
  beforeAll(async () => {
    target = await stack.createUser({ email: 'target@example.com', fullName: 'Target' });
  });
  const addTarget = (actor: TestUser, stream: { name: string }) =>
    actor.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: stream.name }],
      principals: [target.id],
    });

  // Realm can_add_subscribers_group defaults to role:members.
  matrix('to a public channel', theCast, {
    setup: () => createChannel(cast.owner),
    act: addTarget,
    verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(allowed),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'bot'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });

  describe('with the realm can_add_subscribers_group = administrators', () => {
    beforeAll(() => stack.setRealmGroupSetting('can_add_subscribers_group', 'role:administrators'));
    afterAll(() => stack.setRealmGroupSetting('can_add_subscribers_group', 'role:members'));

    matrix('to a public channel the owner created', theCast, {
      setup: () => createChannel(cast.owner),
      act: addTarget,
      verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(allowed),
      expect: only(['owner', 'administrator'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
    });

    // Rule 5: channel administrators may add subscribers regardless.
    matrix('to a public channel the member created (member administers it)', theCast, {
      setup: () => createChannel(cast.member),
      act: addTarget,
      expect: only(['owner', 'administrator', 'member'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
    });

    matrix('to a public channel whose can_add_subscribers_group is {moderator}', theCast, {
      setup: async () => {
        const stream = await createChannel(cast.owner);
        expect(
          (
            await cast.owner.client.patch(`/api/v1/streams/${stream.id}`, {
              can_add_subscribers_group: { new: { direct_members: [cast.moderator.id], direct_subgroups: [] } },
            })
          ).status,
        ).toBe(200);
        return stream;
      },
      act: addTarget,
      expect: only(['owner', 'administrator', 'moderator'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
    });
  });

  // Only subscribers (and groups granting content access) may add to a private channel.
  matrix('to a private channel only the owner is subscribed to', theCast, {
    setup: () => createChannel(cast.owner, { private: true }),
    act: addTarget,
    verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(allowed),
    expect: only(['owner'], refused(/^Unable to access channel \(secret-\d+\)\.$/), { guest: GUESTS_NOT_ALLOWED }),
  });
});

describe('subscribing oneself (POST /users/me/subscriptions)', () => {
  const join = (actor: TestUser, stream: { name: string }) =>
    actor.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: stream.name }] });

  matrix('to a public channel', theCast, {
    setup: () => createChannel(cast.owner),
    act: join,
    verify: async (stream, allowed, actor) => expect(await isSubscribed(actor.id, stream.id)).toBe(allowed),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'bot'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });

  matrix('to a private channel (can_subscribe_group = role:nobody)', theCast, {
    setup: () => createChannel(cast.owner, { private: true }),
    act: join,
    verify: async (stream, allowed, actor) => expect(await isSubscribed(actor.id, stream.id)).toBe(allowed),
    expect: only(['owner'], refused(/^Unable to access channel \(secret-\d+\)\.$/), { guest: GUESTS_NOT_ALLOWED }),
  });

  matrix('to a private channel whose can_subscribe_group is role:members', theCast, {
    setup: async () => {
      const stream = await createChannel(cast.owner, { private: true });
      expect(
        (
          await cast.owner.client.patch(`/api/v1/streams/${stream.id}`, {
            can_subscribe_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:members') },
          })
        ).status,
      ).toBe(200);
      return stream;
    },
    act: join,
    verify: async (stream, allowed, actor) => expect(await isSubscribed(actor.id, stream.id)).toBe(allowed),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'bot'], INSUFFICIENT, { guest: GUESTS_NOT_ALLOWED }),
  });
});

describe('removing subscribers (DELETE /users/me/subscriptions with principals)', () => {
  let target: TestUser;
  beforeAll(async () => {
    target = await stack.createUser({ email: 'removed@example.com', fullName: 'Removed' });
  });
  const removeTarget = (actor: TestUser, stream: { name: string }) =>
    actor.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [stream.name], principals: [target.id] });
  const withTarget = async (creator: TestUser, options: { private?: boolean } = {}) => {
    const stream = await createChannel(creator, options);
    await stack.subscribe(stream.id, [target.id]);
    return stream;
  };

  // Channel can_remove_subscribers_group defaults to role:administrators.
  matrix('from a public channel the owner created', theCast, {
    setup: () => withTarget(cast.owner),
    act: removeTarget,
    verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(!allowed),
    expect: only(['owner', 'administrator'], INSUFFICIENT),
  });

  matrix('from a public channel the member created (member administers it)', theCast, {
    setup: () => withTarget(cast.member),
    act: removeTarget,
    verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(!allowed),
    expect: only(['owner', 'administrator', 'member'], INSUFFICIENT),
  });

  matrix('from a public channel whose can_remove_subscribers_group is role:moderators', theCast, {
    setup: async () => {
      const stream = await withTarget(cast.owner);
      expect(
        (
          await cast.owner.client.patch(`/api/v1/streams/${stream.id}`, {
            can_remove_subscribers_group: { new: await systemGroupId(stack.db, stack.realm.id, 'role:moderators') },
          })
        ).status,
      ).toBe(200);
      return stream;
    },
    act: removeTarget,
    verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(!allowed),
    expect: only(['owner', 'administrator', 'moderator'], INSUFFICIENT),
  });

  // Rule 4/6: metadata access is needed; administrators have it for every private channel.
  matrix('from a private channel only the owner (and the target) are subscribed to', theCast, {
    setup: () => withTarget(cast.owner, { private: true }),
    act: removeTarget,
    verify: async (stream, allowed) => expect(await isSubscribed(target.id, stream.id)).toBe(!allowed),
    expect: only(['owner', 'administrator'], INSUFFICIENT),
  });

  matrix('oneself, from a public channel', theCast, {
    setup: async (actor) => {
      const stream = await createChannel(cast.owner);
      await stack.subscribe(stream.id, [actor.id]);
      return stream;
    },
    act: (actor, stream) => actor.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [stream.name] }),
    verify: async (stream, allowed, actor) => expect(await isSubscribed(actor.id, stream.id)).toBe(!allowed),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
  });
});

// ------------------------------------------------------------------ default channels, folders

describe('default channels and channel folders', () => {
  matrix('POST /default_streams', theCast, {
    setup: () => createChannel(cast.owner),
    act: (actor, stream) => actor.client.post('/api/v1/default_streams', { stream_id: stream.id }),
    verify: async (stream, allowed) =>
      expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).is_default).toBe(allowed),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });

  matrix('DELETE /default_streams', theCast, {
    setup: async () => {
      const stream = await createChannel(cast.owner);
      expect((await cast.owner.client.post('/api/v1/default_streams', { stream_id: stream.id })).status).toBe(200);
      return stream;
    },
    act: (actor, stream) => actor.client.delete('/api/v1/default_streams', { stream_id: stream.id }),
    verify: async (stream, allowed) =>
      expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).is_default).toBe(!allowed),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });

  matrix('POST /channel_folders/create', theCast, {
    act: (actor) =>
      actor.client.post('/api/v1/channel_folders/create', { name: uniqueName('folder'), description: '' }),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });

  matrix('PATCH /channel_folders/{id}', theCast, {
    setup: async () => {
      const response = await cast.owner.client.post('/api/v1/channel_folders/create', {
        name: uniqueName('folder'),
        description: '',
      });
      return response.body.channel_folder_id as number;
    },
    act: (actor, folderId) => actor.client.patch(`/api/v1/channel_folders/${folderId}`, { description: 'changed' }),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });

  matrix('GET /channel_folders', theCast, {
    act: (actor) => actor.client.get('/api/v1/channel_folders'),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
  });
});

// ------------------------------------------------------------------ delete topic

describe('POST /streams/{stream_id}/delete_topic (spec: organisation administrators only)', () => {
  async function channelWithTopic(options: { private?: boolean } = {}) {
    const stream = await createChannel(cast.owner, { ...options, subscribers: options.private ? [] : undefined });
    // The owner received it (a private channel's protected history is what one received).
    const [{ id }] = await stack.db.$queryRaw<{ id: number }[]>`
      INSERT INTO message (realm_id, sender_id, stream_id, topic, content, rendered_content)
      VALUES (${stack.realm.id}, ${cast.owner.id}, ${stream.id}, 'doomed', 'bye', '<p>bye</p>') RETURNING id`;
    await stack.db.userMessage.create({ data: { user_profile_id: cast.owner.id, message_id: id, flags: 0 } });
    return stream;
  }
  const remaining = (streamId: number) => stack.db.message.count({ where: { stream_id: streamId, topic: 'doomed' } });

  matrix('a topic of a public channel', theCast, {
    setup: () => channelWithTopic(),
    act: (actor, stream) => actor.client.post(`/api/v1/streams/${stream.id}/delete_topic`, { topic_name: 'doomed' }),
    verify: async (stream, allowed) => expect(await remaining(stream.id)).toBe(allowed ? 0 : 1),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });

  describe('even for members of can_delete_any_message_group (the spec restricts it to administrators)', () => {
    beforeAll(() => stack.setRealmGroupSetting('can_delete_any_message_group', 'role:moderators'));
    afterAll(() => stack.setRealmGroupSetting('can_delete_any_message_group', 'role:administrators'));
    matrix('a topic of a public channel', theCast, {
      setup: () => channelWithTopic(),
      act: (actor, stream) => actor.client.post(`/api/v1/streams/${stream.id}/delete_topic`, { topic_name: 'doomed' }),
      verify: async (stream, allowed) => expect(await remaining(stream.id)).toBe(allowed ? 0 : 1),
      expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
    });
  });

  // Content access is needed: an unsubscribed administrator cannot see a private channel's topics.
  matrix('a topic of a private channel only the owner is subscribed to', theCast, {
    setup: () => channelWithTopic({ private: true }),
    act: (actor, stream) => actor.client.post(`/api/v1/streams/${stream.id}/delete_topic`, { topic_name: 'doomed' }),
    verify: async (stream, allowed) => expect(await remaining(stream.id)).toBe(allowed ? 0 : 1),
    expect: only(['owner'], ADMIN_REQUIRED, { administrator: INVALID_CHANNEL }),
  });
});
