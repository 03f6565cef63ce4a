// Subscribing (and creating channels), unsubscribing, subscription properties: responses,
// database state and the events each action commits.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, type Params } from '@teamchat/testing';
import { BotType, Role } from '@teamchat/domain';
import { setRealmSetting, sorted, streamSettingGroupId, systemGroupId, uniqueName } from './helpers';

let stack: Stack;
let owner: TestUser;
let admin: TestUser;
let moderator: TestUser;
let member: TestUser;
let other: TestUser;
let guest: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'events'] });
  owner = await stack.createUser({ role: Role.OWNER });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
  moderator = await stack.createUser({ role: Role.MODERATOR });
  member = await stack.createUser({ role: Role.MEMBER, email: 'member@example.com' });
  other = await stack.createUser({ role: Role.MEMBER, email: 'other@example.com' });
  guest = await stack.createUser({ role: Role.GUEST });
});
afterAll(async () => stack?.close());

const nonGuests = () => sorted([owner.id, admin.id, moderator.id, member.id, other.id]);
const subscribe = (user: TestUser, params: Params) => user.client.post('/api/v1/users/me/subscriptions', params);
const streamNamed = (name: string) => stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name } });

describe('POST /users/me/subscriptions', () => {
  test('creates a public channel: stream create to every non-guest, subscription add, peer_add', async () => {
    const name = uniqueName('Lobby');
    const events = await captureEvents(stack, async () => {
      const res = await subscribe(member, {
        subscriptions: [{ name: `  ${name} `, description: 'The *lobby*\nfor all', color: '#aabbcc' }],
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        result: 'success',
        msg: '',
        subscribed: { [member.id]: [name] },
        already_subscribed: {},
      });
    });
    const stream = await streamNamed(name);
    expect(stream).toMatchObject({
      description: 'The *lobby* for all',
      rendered_description: '<p>The <em>lobby</em> for all</p>',
      invite_only: false,
      history_public_to_subscribers: true,
      creator_id: member.id,
      topics_policy: 'inherit',
      message_retention_days: null,
    });
    // Zulip's defaults; can_administer_channel_group: an anonymous group of the creator.
    expect(await streamSettingGroupId(stack, stream.id, 'can_remove_subscribers_group')).toBe(
      await systemGroupId(stack, 'role:administrators'),
    );
    const adminGroup = await streamSettingGroupId(stack, stream.id, 'can_administer_channel_group');
    expect(await stack.db.userGroup.findUniqueOrThrow({ where: { id: adminGroup } })).toMatchObject({ named: false });
    expect(
      (await stack.db.userGroupMembership.findMany({ where: { user_group_id: adminGroup } })).map(
        (m) => m.user_profile_id,
      ),
    ).toEqual([member.id]);
    expect(
      (await stack.db.subscription.findFirstOrThrow({ where: { stream_id: stream.id, user_profile_id: member.id } }))
        .color,
    ).toBe('#aabbcc');

    expect(events.map((e) => `${e.event.type}:${e.event.op}`)).toEqual([
      'stream:create',
      'subscription:add',
      'subscription:peer_add',
    ]);
    const [create, add, peerAdd] = events;
    expect(create.recipientIds).toEqual(nonGuests());
    expect(create.event.streams[0]).toMatchObject({
      stream_id: stream.id,
      name,
      invite_only: false,
      can_administer_channel_group: { direct_members: [member.id], direct_subgroups: [] },
    });
    expect(add.recipientIds).toEqual([member.id]);
    expect(add.event.subscriptions).toHaveLength(1);
    expect(add.event.subscriptions[0]).toMatchObject({
      stream_id: stream.id,
      name,
      color: '#aabbcc',
      subscribers: [member.id],
      is_muted: false,
      in_home_view: true,
      pin_to_top: false,
    });
    expect(peerAdd).toMatchObject({
      recipientIds: nonGuests().filter((id) => id !== member.id),
      event: { stream_ids: [stream.id], user_ids: [member.id] },
    });
  });

  test('creates a private channel with principals by email: each new subscriber learns of it', async () => {
    const name = uniqueName('Secret');
    const events = await captureEvents(stack, async () => {
      const res = await subscribe(member, {
        subscriptions: [{ name }],
        invite_only: true,
        principals: ['member@example.com', 'OTHER@example.com'],
      });
      expect(res.body.subscribed).toEqual({ [member.id]: [name], [other.id]: [name] });
    });
    const stream = await streamNamed(name);
    expect(stream).toMatchObject({ invite_only: true, history_public_to_subscribers: false });
    const creates = ofType(events, 'stream', 'create');
    // Administrators and the creator (a channel administrator) see it created; `other` before its subscription arrives.
    expect(creates.map((e) => e.recipientIds)).toEqual([sorted([owner.id, admin.id, member.id]), [other.id]]);
    const adds = ofType(events, 'subscription', 'add');
    expect(adds.map((e) => e.recipientIds)).toEqual([[member.id], [other.id]]);
    expect(adds[1].event.subscriptions[0].subscribers).toEqual(sorted([member.id, other.id]));
    expect(ofType(events, 'subscription', 'peer_add')).toEqual([
      expect.objectContaining({
        recipientIds: sorted([owner.id, admin.id]),
        event: {
          type: 'subscription',
          op: 'peer_add',
          stream_ids: [stream.id],
          user_ids: sorted([member.id, other.id]),
        },
      }),
    ]);
    // Subscribing again: already subscribed, no events.
    const again = await captureEvents(stack, async () => {
      const repeat = await subscribe(member, { subscriptions: [{ name }], principals: [member.id, other.id] });
      expect(repeat.body).toMatchObject({
        subscribed: {},
        already_subscribed: { [member.id]: [name], [other.id]: [name] },
      });
    });
    expect(again).toEqual([]);
  });

  test('private channels one cannot read: fatal, or listed as unauthorized', async () => {
    const name = uniqueName('Hidden');
    await subscribe(owner, { subscriptions: [{ name }], invite_only: true });
    expectError(
      await subscribe(member, { subscriptions: [{ name }] }),
      400,
      'BAD_REQUEST',
      `Unable to access channel (${name}).`,
    );
    const open = uniqueName('Open');
    const res = await subscribe(member, {
      subscriptions: [{ name }, { name: open }],
      authorization_errors_fatal: false,
    });
    expect(res.body).toMatchObject({ subscribed: { [member.id]: [open] }, unauthorized: [name] });
    // Administrators see it exists but cannot read it either.
    expectError(
      await subscribe(admin, { subscriptions: [{ name }] }),
      400,
      'BAD_REQUEST',
      `Unable to access channel (${name}).`,
    );
  });

  test('can_subscribe_group lets its members join a private channel', async () => {
    const name = uniqueName('Joinable');
    await subscribe(owner, {
      subscriptions: [{ name }],
      invite_only: true,
      can_subscribe_group: await systemGroupId(stack, 'role:members'),
    });
    expect((await subscribe(member, { subscriptions: [{ name }] })).body.subscribed).toEqual({ [member.id]: [name] });
    expectError(
      await subscribe(guest, { subscriptions: [{ name }] }),
      400,
      'BAD_REQUEST',
      'Not allowed for guest users',
    );
  });

  test('subscribing others: the organisation’s can_add_subscribers_group, else channel-level permission', async () => {
    const name = uniqueName('Crowd');
    await subscribe(owner, { subscriptions: [{ name }] });
    await setRealmSetting(stack, 'can_add_subscribers_group', 'role:moderators');
    try {
      expectError(
        await subscribe(member, { subscriptions: [{ name }], principals: [other.id] }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
      // Oneself is not "others".
      expect((await subscribe(member, { subscriptions: [{ name }], principals: [member.id] })).body.subscribed).toEqual(
        { [member.id]: [name] },
      );
      expect(
        (await subscribe(moderator, { subscriptions: [{ name }], principals: [other.id] })).body.subscribed,
      ).toEqual({ [other.id]: [name] });
    } finally {
      await setRealmSetting(stack, 'can_add_subscribers_group', 'role:members');
    }
    expectError(
      await subscribe(member, { subscriptions: [{ name }], principals: [999999] }),
      400,
      'BAD_REQUEST',
      'No such user',
    );
    expectError(
      await subscribe(member, { subscriptions: [{ name }], principals: ['nobody@example.com'] }),
      400,
      'BAD_REQUEST',
      'No such user',
    );
  });

  test('creation permissions and settings', async () => {
    const fresh = () => [{ name: uniqueName('new') }];
    await setRealmSetting(stack, 'can_create_private_channel_group', 'role:administrators');
    try {
      expectError(
        await subscribe(member, { subscriptions: fresh(), invite_only: true }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
    } finally {
      await setRealmSetting(stack, 'can_create_private_channel_group', 'role:members');
    }
    expectError(
      await subscribe(member, { subscriptions: fresh(), is_default_stream: true }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await subscribe(admin, { subscriptions: fresh(), is_default_stream: true, invite_only: true }),
      400,
      'BAD_REQUEST',
      'A default channel cannot be private.',
    );
    expectError(
      await subscribe(owner, { subscriptions: fresh(), is_web_public: true }),
      400,
      'BAD_REQUEST',
      'Web-public channels are not enabled.',
    );
    expectError(
      await subscribe(admin, { subscriptions: fresh(), message_retention_days: 10 }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expectError(
      await subscribe(member, { subscriptions: fresh(), topics_policy: 'disable_empty_topic' }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await subscribe(member, {
        subscriptions: fresh(),
        can_delete_any_message_group: await systemGroupId(stack, 'role:everyone'),
      }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await subscribe(member, {
        subscriptions: fresh(),
        can_add_subscribers_group: await systemGroupId(stack, 'role:everyone'),
      }),
      400,
      'BAD_REQUEST',
      "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.",
    );
    expectError(
      await subscribe(member, { subscriptions: fresh(), folder_id: 999999 }),
      400,
      'BAD_REQUEST',
      'Invalid channel folder ID',
    );
    expectError(
      await subscribe(member, { subscriptions: [{ name: '  ' }] }),
      400,
      'BAD_REQUEST',
      "Channel name can't be empty.",
    );
    expectError(
      await subscribe(member, { subscriptions: [{ name: 'n'.repeat(61) }] }),
      400,
      'BAD_REQUEST',
      'Channel name too long (limit: 60 characters).',
    );
    expectError(
      await subscribe(member, { subscriptions: [{ name: 'x', color: 'red' }] }),
      400,
      'BAD_REQUEST',
      'subscriptions[0].color is not a valid hex color code',
    );
    expectError(await subscribe(member, {}), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'subscriptions' argument");
    // Nothing was created by any of these.
    expect(await stack.db.stream.count({ where: { name: { startsWith: 'new-' } } })).toBe(0);

    const name = uniqueName('Configured');
    const moderators = await systemGroupId(stack, 'role:moderators');
    const res = await subscribe(owner, {
      subscriptions: [{ name }],
      invite_only: true,
      history_public_to_subscribers: true,
      message_retention_days: 'unlimited',
      topics_policy: 'disable_empty_topic',
      can_remove_subscribers_group: moderators,
      can_send_message_group: { direct_members: [member.id], direct_subgroups: [moderators] },
      announce: true,
    });
    expect(res.status).toBe(200);
    const stream = await streamNamed(name);
    expect(stream).toMatchObject({
      invite_only: true,
      history_public_to_subscribers: true,
      message_retention_days: -1,
      topics_policy: 'disable_empty_topic',
    });
    expect(await streamSettingGroupId(stack, stream.id, 'can_remove_subscribers_group')).toBe(moderators);
    const detail = (await owner.client.get(`/api/v1/streams/${stream.id}`)).body.stream;
    expect(detail.can_send_message_group).toEqual({ direct_members: [member.id], direct_subgroups: [moderators] });

    const defaultName = uniqueName('Default');
    const captured = await captureEvents(stack, async () => {
      await subscribe(admin, { subscriptions: [{ name: defaultName }], is_default_stream: true });
    });
    const created = await streamNamed(defaultName);
    expect(created.is_default).toBe(true);
    expect(ofType(captured, 'default_streams')[0].event.default_streams).toContain(created.id);
  });

  test('a guest subscribed to a public channel is told it exists first', async () => {
    const name = uniqueName('Guests');
    await subscribe(owner, { subscriptions: [{ name }] });
    const events = await captureEvents(stack, async () => {
      await subscribe(owner, { subscriptions: [{ name }], principals: [guest.id] });
    });
    expect(events.map((e) => `${e.event.type}:${e.event.op}:${e.recipientIds.join(',')}`)).toEqual([
      `stream:create:${guest.id}`,
      `subscription:add:${guest.id}`,
      `subscription:peer_add:${nonGuests().join(',')}`,
    ]);
  });
});

describe('DELETE /users/me/subscriptions', () => {
  test('unsubscribing oneself: remove, peer_remove; losing sight of a private channel: delete', async () => {
    const pub = uniqueName('Leave');
    const priv = uniqueName('LeavePrivate');
    await subscribe(member, { subscriptions: [{ name: pub }], principals: [member.id, other.id] });
    await subscribe(member, { subscriptions: [{ name: priv }], invite_only: true, principals: [member.id, other.id] });
    const pubStream = await streamNamed(pub);
    const privStream = await streamNamed(priv);
    const events = await captureEvents(stack, async () => {
      const res = await other.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [pub, priv] });
      expect(res.body).toEqual({ result: 'success', msg: '', removed: [pub, priv], not_removed: [] });
    });
    expect(
      await stack.db.subscription.count({
        where: { user_profile_id: other.id, stream_id: { in: [pubStream.id, privStream.id] }, active: true },
      }),
    ).toBe(0);
    expect(ofType(events, 'subscription', 'remove')).toEqual([
      expect.objectContaining({
        recipientIds: [other.id],
        event: {
          type: 'subscription',
          op: 'remove',
          subscriptions: [
            { name: pub, stream_id: pubStream.id },
            { name: priv, stream_id: privStream.id },
          ],
        },
      }),
    ]);
    expect(ofType(events, 'stream', 'delete')).toEqual([
      expect.objectContaining({
        recipientIds: [other.id],
        event: expect.objectContaining({ stream_ids: [privStream.id] }),
      }),
    ]);
    const peers = ofType(events, 'subscription', 'peer_remove');
    expect(peers.map((e) => [e.event.stream_ids, e.event.user_ids, e.recipientIds])).toEqual([
      [[pubStream.id], [other.id], nonGuests().filter((id) => id !== other.id)],
      // Private: the remaining subscriber, administrators, and the channel administrator (the creator).
      [[privStream.id], [other.id], sorted([owner.id, admin.id, member.id])],
    ]);
    const again = await other.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [pub] });
    expect(again.body).toMatchObject({ removed: [], not_removed: [pub] });
    expectError(
      await other.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [pub, 'no such channel'] }),
      400,
      'BAD_REQUEST',
      'Channel(s) (no such channel) do not exist',
    );
    // Resubscribing keeps the old settings.
    await stack.db.subscription.updateMany({
      where: { user_profile_id: other.id, stream_id: pubStream.id },
      data: { color: '#123456' },
    });
    await subscribe(other, { subscriptions: [{ name: pub }] });
    expect(
      await stack.db.subscription.findFirstOrThrow({ where: { user_profile_id: other.id, stream_id: pubStream.id } }),
    ).toMatchObject({ active: true, color: '#123456' });
  });

  test('unsubscribing others: administrators, can_remove_subscribers_group with access, one’s own bots', async () => {
    const name = uniqueName('Remove');
    await subscribe(owner, { subscriptions: [{ name }], principals: [owner.id, member.id, other.id] });
    const bot = await stack.createUser({
      email: `bot-${name}@example.com`,
      botType: BotType.DEFAULT,
      botOwnerId: member.id,
    });
    await subscribe(owner, { subscriptions: [{ name }], principals: [bot.id] });
    const remove = (by: TestUser, principals: (number | string)[]) =>
      by.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [name], principals });
    expectError(await remove(member, [other.id]), 400, 'BAD_REQUEST', 'Insufficient permission');
    expect((await remove(member, [bot.id])).body.removed).toEqual([name]);
    expect((await remove(admin, [other.id])).body.removed).toEqual([name]);
    const stream = await streamNamed(name);
    await owner.client.patch(`/api/v1/streams/${stream.id}`, {
      can_remove_subscribers_group: { new: await systemGroupId(stack, 'role:members') },
    });
    expect((await remove(moderator, ['member@example.com'])).body.removed).toEqual([name]);
    expectError(await remove(guest, [owner.id]), 400, 'BAD_REQUEST', 'Insufficient permission');
  });
});

describe('PATCH /users/me/subscriptions', () => {
  test('add and delete in one request, all or nothing', async () => {
    const keep = uniqueName('Keep');
    const drop = uniqueName('Drop');
    await subscribe(member, { subscriptions: [{ name: drop }] });
    const res = await member.client.patch('/api/v1/users/me/subscriptions', { add: [{ name: keep }], delete: [drop] });
    expect(res.body).toEqual({
      result: 'success',
      msg: '',
      subscribed: { [member.id]: [keep] },
      already_subscribed: {},
      removed: [drop],
      not_removed: [],
    });
    const failing = uniqueName('NeverMade');
    expectError(
      await member.client.patch('/api/v1/users/me/subscriptions', {
        add: [{ name: failing }],
        delete: ['missing channel'],
      }),
      400,
      'BAD_REQUEST',
      'Channel(s) (missing channel) do not exist',
    );
    expect(await stack.db.stream.findFirst({ where: { name: failing } })).toBeNull();
    expectError(
      await member.client.patch('/api/v1/users/me/subscriptions', {}),
      400,
      'BAD_REQUEST',
      'Nothing to do. Specify at least one of "add" or "delete".',
    );
  });
});

describe('subscription properties', () => {
  test('each property, with its events; in_home_view is the inverse of is_muted', async () => {
    const name = uniqueName('Props');
    await subscribe(member, { subscriptions: [{ name }] });
    const stream = await streamNamed(name);
    const change = (data: unknown[]) =>
      member.client.post('/api/v1/users/me/subscriptions/properties', { subscription_data: data });
    const events = await captureEvents(stack, async () => {
      const res = await change([
        { stream_id: stream.id, property: 'color', value: '#00ff00' },
        { stream_id: stream.id, property: 'is_muted', value: true },
        { stream_id: stream.id, property: 'pin_to_top', value: true },
        { stream_id: stream.id, property: 'desktop_notifications', value: false },
        { stream_id: stream.id, property: 'wildcard_mentions_notify', value: true },
      ]);
      expect(res.status).toBe(200);
    });
    expect(
      await stack.db.subscription.findFirstOrThrow({ where: { user_profile_id: member.id, stream_id: stream.id } }),
    ).toMatchObject({
      color: '#00ff00',
      is_muted: true,
      pin_to_top: true,
      desktop_notifications: false,
      wildcard_mentions_notify: true,
    });
    expect(events.map((e) => [e.event.property, e.event.value])).toEqual([
      ['color', '#00ff00'],
      ['in_home_view', false],
      ['is_muted', true],
      ['pin_to_top', true],
      ['desktop_notifications', false],
      ['wildcard_mentions_notify', true],
    ]);
    expect(
      events.every(
        (e) =>
          e.recipientIds.length === 1 &&
          e.recipientIds[0] === member.id &&
          e.event.type === 'subscription' &&
          e.event.op === 'update',
      ),
    ).toBe(true);
    await change([{ stream_id: stream.id, property: 'in_home_view', value: true }]);
    // PATCH is accepted too (zulip.yaml knows only POST, so no schema check here).
    expect(
      (
        await member.client.patch(
          '/api/v1/users/me/subscriptions/properties',
          { subscription_data: [{ stream_id: stream.id, property: 'audible_notifications', value: true }] },
          { validate: false },
        )
      ).body,
    ).toEqual({ result: 'success', msg: '' });
    expect(
      (await stack.db.subscription.findFirstOrThrow({ where: { user_profile_id: member.id, stream_id: stream.id } }))
        .is_muted,
    ).toBe(false);

    expectError(
      await change([{ stream_id: stream.id, property: 'volume', value: true }]),
      400,
      'BAD_REQUEST',
      'Unknown subscription property: volume',
    );
    expectError(
      await change([{ stream_id: stream.id, property: 'pin_to_top', value: 'yes' }]),
      400,
      'BAD_REQUEST',
      'pin_to_top is not a boolean',
    );
    expectError(
      await change([{ stream_id: stream.id, property: 'color', value: 'green' }]),
      400,
      'BAD_REQUEST',
      'color is not a valid hex color code',
    );
    expectError(
      await change([{ stream_id: 999999, property: 'pin_to_top', value: true }]),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    expectError(
      await other.client.post('/api/v1/users/me/subscriptions/properties', {
        subscription_data: [{ stream_id: stream.id, property: 'pin_to_top', value: true }],
      }),
      400,
      'BAD_REQUEST',
      `Not subscribed to channel ID ${stream.id}`,
    );
    // All or nothing: a bad second change leaves the first undone.
    expectError(
      await change([
        { stream_id: stream.id, property: 'pin_to_top', value: false },
        { stream_id: stream.id, property: 'volume', value: 1 },
      ]),
      400,
      'BAD_REQUEST',
    );
    expect(
      (await stack.db.subscription.findFirstOrThrow({ where: { user_profile_id: member.id, stream_id: stream.id } }))
        .pin_to_top,
    ).toBe(true);
  });
});

describe('reading subscriptions', () => {
  test("listed by channel name in code-point order, as Zulip's, by GET and by register", async () => {
    const reader = await stack.createUser({ role: Role.MEMBER });
    const tag = uniqueName('');
    // Created in an order that is neither the names' nor, for the last two, UTF-16's.
    const names = ['zeta', 'Alpha', '\u{1F600} smile', '\uE000 private', 'beta'].map((name) => `${name} ${tag}`);
    for (const name of names) await subscribe(reader, { subscriptions: [{ name }] });
    const expected = [names[1], names[4], names[0], names[3], names[2]];
    const mine = (list: { name: string }[]) => list.map((sub) => sub.name).filter((name) => name.endsWith(tag));
    const listed = await reader.client.get('/api/v1/users/me/subscriptions');
    expect(mine(listed.body.subscriptions)).toEqual(expected);
    const registered = await reader.client.post('/api/v1/register', { fetch_event_types: ['subscription'] });
    expect(mine(registered.body.subscriptions)).toEqual(expected);
  });

  test('GET /users/me/subscriptions with and without subscribers; members; subscription status', async () => {
    const name = uniqueName('Read');
    await subscribe(member, { subscriptions: [{ name }], principals: [member.id, other.id] });
    const stream = await streamNamed(name);
    const plain = (await member.client.get('/api/v1/users/me/subscriptions')).body.subscriptions.find(
      (s: { name: string }) => s.name === name,
    );
    expect(plain.subscribers).toBeUndefined();
    const full = (
      await member.client.get('/api/v1/users/me/subscriptions', { include_subscribers: true })
    ).body.subscriptions.find((s: { name: string }) => s.name === name);
    expect(full.subscribers).toEqual(sorted([member.id, other.id]));
    expect((await guest.client.get(`/api/v1/streams/${stream.id}/members`)).body).toMatchObject({
      result: 'error',
      msg: 'Invalid channel ID',
    });
    expect((await owner.client.get(`/api/v1/streams/${stream.id}/members`)).body.subscribers).toEqual(
      sorted([member.id, other.id]),
    );
    expect((await owner.client.get(`/api/v1/users/${other.id}/subscriptions/${stream.id}`)).body.is_subscribed).toBe(
      true,
    );
    expect((await owner.client.get(`/api/v1/users/${owner.id}/subscriptions/${stream.id}`)).body.is_subscribed).toBe(
      false,
    );
    expectError(
      await owner.client.get(`/api/v1/users/999999/subscriptions/${stream.id}`),
      400,
      'BAD_REQUEST',
      'No such user',
    );
  });

  test('include_subscribers=partial: large channels list only bots and recently active users', async () => {
    const name = uniqueName('Large');
    await subscribe(owner, { subscriptions: [{ name }] });
    const stream = await streamNamed(name);
    // 260 subscribers written as fixtures: the first 5 recently active, the last one a bot.
    const ids = await stack.db.$queryRaw<{ id: number }[]>`
      INSERT INTO user_profile (realm_id, email, delivery_email, full_name, is_bot, last_active_at)
      SELECT ${stack.realm.id}, 'bulk' || n || '@example.com', 'bulk' || n || '@example.com', 'Bulk ' || n, n = 260,
             CASE WHEN n <= 5 THEN now() ELSE now() - interval '30 days' END
      FROM generate_series(1, 260) AS n RETURNING id`;
    await stack.subscribe(
      stream.id,
      ids.map((row) => row.id),
    );
    const expected = sorted(ids.map((row) => row.id)).filter((_id, i) => i < 5 || i === 259);
    const res = await owner.client.get('/api/v1/users/me/subscriptions', { include_subscribers: 'partial' });
    const sub = res.body.subscriptions.find((s: { name: string }) => s.name === name);
    expect(sub.subscribers).toBeUndefined();
    expect(sub.partial_subscribers).toEqual(expected);
    const small = res.body.subscriptions.find((s: { name: string }) => s.name !== name);
    if (small) expect(small.subscribers).toBeDefined();
  });
});
