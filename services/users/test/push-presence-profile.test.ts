import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type ApiResponse, captureEvents, expectError, ofType } from '@teamchat/testing';
import { activeIds, createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
});
afterAll(() => stack.close());

describe('push registration tokens', () => {
  const paths = [
    ['/api/v1/users/me/android_gcm_reg_id', 2],
    ['/api/v1/users/me/mobile_push_reg_id', 2],
  ] as const;

  test.each(paths)(
    '%s: register, re-register, remove; empty, too long and unknown tokens refused',
    async (path, kind) => {
      const client = cast.member.client;
      const token = `fcm-${path.length}-token`;
      expect((await client.post(path, { token })).body).toEqual({ result: 'success', msg: '' });
      expect((await client.post(path, { token })).status).toBe(200);
      expect(await stack.db.pushDeviceToken.count({ where: { user_profile_id: cast.member.id, kind, token } })).toBe(1);
      expectError(await client.post(path, { token: '' }), 400, 'BAD_REQUEST', 'Empty or invalid length token');
      expectError(
        await client.delete(path, { token: 'x'.repeat(4097) }),
        400,
        'BAD_REQUEST',
        'Empty or invalid length token',
      );
      expectError(await client.delete(path, { token: '' }), 400, 'BAD_REQUEST', 'Empty or invalid length token');
      expectError(await cast.admin.client.delete(path, { token }), 400, 'BAD_REQUEST', 'Token does not exist');
      expectError(await client.delete(path), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'token' argument");
      expect((await client.delete(path, { token })).status).toBe(200);
      expect(await stack.db.pushDeviceToken.count({ where: { user_profile_id: cast.member.id, token } })).toBe(0);
      expectError(await client.delete(path, { token }), 400, 'BAD_REQUEST', 'Token does not exist');
    },
  );

  test('APNs tokens need an app id and must decode', async () => {
    const path = '/api/v1/users/me/apns_device_token';
    const client = cast.guest.client;
    expectError(
      await client.post(path, { token: 'apple-tokenbb' }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'appid' argument",
    );
    expectError(
      await client.post(path, { token: 'abc', appid: 'org.zulip.Zulip' }),
      400,
      'BAD_REQUEST',
      'Invalid APNS token',
    );
    expectError(
      await client.post(path, { token: 'apple-tokenbb', appid: 'bad app id!' }),
      400,
      'BAD_REQUEST',
      'Invalid appid',
    );
    expect((await client.post(path, { token: 'apple-tokenbb', appid: 'org.zulip.Zulip' })).status).toBe(200);
    const row = await stack.db.pushDeviceToken.findFirstOrThrow({ where: { user_profile_id: cast.guest.id, kind: 1 } });
    expect(row).toMatchObject({ token: 'apple-tokenbb', ios_app_id: 'org.zulip.Zulip' });
    // Same token, other kind: not found.
    expectError(
      await client.delete('/api/v1/users/me/android_gcm_reg_id', { token: 'apple-tokenbb' }),
      400,
      'BAD_REQUEST',
      'Token does not exist',
    );
    expect((await client.delete(path, { token: 'apple-tokenbb' })).status).toBe(200);
  });

  test('bots have no devices', async () => {
    expectError(
      await cast.bot.client.post('/api/v1/users/me/android_gcm_reg_id', { token: 'x' }),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
  });
});

describe('POST /users/me/presence', () => {
  test('records the ping and answers with the realm presence; an event only when the user comes online', async () => {
    const captured = await captureEvents(stack, async () => {
      const first = await cast.member.client.post('/api/v1/users/me/presence', {
        status: 'active',
        slim_presence: true,
      });
      expect(first.status).toBe(200);
      const presence = await stack.db.userPresence.findUniqueOrThrow({ where: { user_profile_id: cast.member.id } });
      expect(presence.last_active_time).not.toBeNull();
      expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: cast.member.id } })).last_active_at).toEqual(
        presence.last_active_time,
      );
      expect(first.body.presences[String(cast.member.id)]).toEqual({
        active_timestamp: Math.floor(presence.last_active_time!.getTime() / 1000),
        idle_timestamp: Math.floor(presence.last_connected_time!.getTime() / 1000),
      });
      expect(first.body.presence_last_update_id).toBe(presence.last_connected_time!.getTime());

      // A second ping soon after is no news.
      expect(
        (await cast.member.client.post('/api/v1/users/me/presence', { status: 'idle', ping_only: true })).body,
      ).toEqual({ result: 'success', msg: '' });
    });
    const events = ofType(captured, 'presence');
    expect(events).toHaveLength(1);
    expect(events[0].event).toMatchObject({
      type: 'presence',
      user_id: cast.member.id,
      email: cast.member.email,
      presence: { website: { status: 'active', client: 'website' } },
    });
    expect(events[0].recipientIds).toEqual(await activeIds(stack));

    // The legacy format, keyed by email, unless slim_presence or last_update_id ask otherwise.
    await cast.admin.client.post('/api/v1/users/me/presence', { status: 'idle' });
    const legacy = await cast.admin.client.post('/api/v1/users/me/presence', { status: 'active' });
    expect(legacy.body.presences[cast.member.email]).toMatchObject({
      aggregated: { client: 'website', status: 'active' },
      website: { pushable: false },
    });
    // Only the rows written since last_update_id: the member pings a minute on; the admin's own
    // ping, seconds after the last one, writes nothing.
    await stack.db
      .$executeRaw`UPDATE user_presence SET last_connected_time = last_connected_time - interval '56 seconds', last_active_time = last_active_time - interval '56 seconds' WHERE user_profile_id = ${cast.member.id}`;
    await cast.member.client.post('/api/v1/users/me/presence', { status: 'active', ping_only: true });
    const since = await cast.admin.client.post('/api/v1/users/me/presence', {
      status: 'active',
      last_update_id: legacy.body.presence_last_update_id,
    });
    expect(Object.keys(since.body.presences)).toEqual([String(cast.member.id)]);

    // The update id is in milliseconds; stored times may carry microseconds, which do not make an
    // unchanged row new again.
    const memberRow = await stack.db.userPresence.findUniqueOrThrow({ where: { user_profile_id: cast.member.id } });
    await stack.db
      .$executeRaw`UPDATE user_presence SET last_connected_time = last_connected_time + interval '250 microseconds', last_active_time = last_active_time + interval '250 microseconds' WHERE user_profile_id = ${cast.member.id}`;
    const memberUpdateId = Math.max(memberRow.last_active_time!.getTime(), memberRow.last_connected_time!.getTime());
    const exact = await cast.admin.client.post('/api/v1/users/me/presence', {
      status: 'active',
      last_update_id: memberUpdateId,
    });
    expect(exact.body.presences).not.toHaveProperty(String(cast.member.id));
    const earlier = await cast.admin.client.post('/api/v1/users/me/presence', {
      status: 'active',
      last_update_id: memberUpdateId - 1,
    });
    expect(earlier.body.presences).toHaveProperty(String(cast.member.id));
  });

  test('idle pings keep the last active time; coming back after being offline or idle is news again', async () => {
    const user = cast.owner;
    const ping = (status: string) => user.client.post('/api/v1/users/me/presence', { status, ping_only: true });
    const stored = () => stack.db.userPresence.findUniqueOrThrow({ where: { user_profile_id: user.id } });
    const lastActiveAt = async () =>
      (await stack.db.userProfile.findUniqueOrThrow({ where: { id: user.id } })).last_active_at;
    expect((await ping('active')).status).toBe(200);
    const active = await stored();

    let captured = await captureEvents(stack, async () => {
      expect((await ping('idle')).status).toBe(200);
      const idle = await stored();
      expect(idle.last_active_time).toEqual(active.last_active_time);
      expect(idle.last_connected_time!.getTime()).toBeGreaterThanOrEqual(active.last_connected_time!.getTime());
      // last_active_at is rewritten at most once a minute.
      expect(await lastActiveAt()).toEqual(active.last_active_time);
      expect((await ping('active')).status).toBe(200);
      expect(await lastActiveAt()).toEqual(active.last_active_time);
    });
    expect(ofType(captured, 'presence')).toEqual([]);

    // Connected but idle for longer than the offline threshold, then active: news.
    await stack.db
      .$executeRaw`UPDATE user_presence SET last_active_time = now() - interval '10 minutes' WHERE user_profile_id = ${user.id}`;
    await stack.db
      .$executeRaw`UPDATE user_profile SET last_active_at = now() - interval '10 minutes' WHERE id = ${user.id}`;
    captured = await captureEvents(stack, async () => {
      expect((await ping('active')).status).toBe(200);
      const back = await stored();
      expect(Date.now() - back.last_active_time!.getTime()).toBeLessThan(60_000);
      expect(await lastActiveAt()).toEqual(back.last_active_time);
    });
    let events = ofType(captured, 'presence');
    expect(events.map((row) => row.event)).toEqual([
      expect.objectContaining({
        user_id: user.id,
        presence: { website: expect.objectContaining({ status: 'active' }) },
      }),
    ]);

    // Offline (no ping for longer than the threshold), then an idle ping: news, as idle.
    await stack.db
      .$executeRaw`UPDATE user_presence SET last_connected_time = now() - interval '10 minutes', last_active_time = now() - interval '10 minutes' WHERE user_profile_id = ${user.id}`;
    captured = await captureEvents(stack, async () => {
      expect((await ping('idle')).status).toBe(200);
    });
    events = ofType(captured, 'presence');
    expect(events.map((row) => row.event)).toEqual([
      expect.objectContaining({ user_id: user.id, presence: { website: expect.objectContaining({ status: 'idle' }) } }),
    ]);
    expect(Date.now() - (await stored()).last_connected_time!.getTime()).toBeLessThan(60_000);
  });

  test('a ping within 55 s of the stored times writes nothing (Zulip PRESENCE_UPDATE_MIN_FREQ_SECONDS); an older row is rewritten', async () => {
    const user = await stack.createUser();
    const ping = (status: string) => user.client.post('/api/v1/users/me/presence', { status, ping_only: true });
    const stored = () => stack.db.userPresence.findUniqueOrThrow({ where: { user_profile_id: user.id } });
    expect((await ping('active')).status).toBe(200);
    const first = await stored();
    // Another window of the same user pings: the row stays as it was (its update id too).
    expect((await ping('active')).status).toBe(200);
    expect((await ping('idle')).status).toBe(200);
    expect(await stored()).toEqual(first);

    // 56 s later, connected and active again: both times move.
    await stack.db
      .$executeRaw`UPDATE user_presence SET last_connected_time = last_connected_time - interval '56 seconds', last_active_time = last_active_time - interval '56 seconds' WHERE user_profile_id = ${user.id}`;
    expect((await ping('active')).status).toBe(200);
    const later = await stored();
    expect(later.last_connected_time!.getTime()).toBeGreaterThanOrEqual(first.last_connected_time!.getTime());
    expect(later.last_active_time!.getTime()).toBeGreaterThanOrEqual(first.last_active_time!.getTime());

    // Connected a minute ago but active just now: an idle ping moves only the connected time.
    await stack.db
      .$executeRaw`UPDATE user_presence SET last_connected_time = last_connected_time - interval '56 seconds' WHERE user_profile_id = ${user.id}`;
    expect((await ping('idle')).status).toBe(200);
    const idle = await stored();
    expect(idle.last_active_time).toEqual(later.last_active_time);
    expect(idle.last_connected_time!.getTime()).toBeGreaterThanOrEqual(later.last_connected_time!.getTime());
  });

  test('GET /users/{user}/presence and GET /realm/presence: the legacy form, by id or email', async () => {
    const pinger = await stack.createUser();
    const silent = await stack.createUser();
    expect((await pinger.client.post('/api/v1/users/me/presence', { status: 'active', ping_only: true })).status).toBe(
      200,
    );
    const stored = await stack.db.userPresence.findUniqueOrThrow({ where: { user_profile_id: pinger.id } });
    const expected = { status: 'active', timestamp: Math.floor(stored.last_active_time!.getTime() / 1000) };

    const byId = await cast.member.client.get(`/api/v1/users/${pinger.id}/presence`);
    expect(byId.body).toEqual({ result: 'success', msg: '', presence: { website: expected, aggregated: expected } });
    expect((await cast.member.client.get(`/api/v1/users/${pinger.email}/presence`)).body.presence).toEqual(
      byId.body.presence,
    );
    expectError(
      await cast.member.client.get(`/api/v1/users/${silent.id}/presence`),
      400,
      'BAD_REQUEST',
      `No presence data for ${silent.id}`,
    );
    expectError(
      await cast.member.client.get(`/api/v1/users/${cast.bot.id}/presence`),
      400,
      'BAD_REQUEST',
      'Presence is not supported for bot users.',
    );
    expectError(
      await cast.member.client.get('/api/v1/users/nobody@example.com/presence'),
      400,
      'BAD_REQUEST',
      'No such user',
    );

    const realm = await cast.member.client.get('/api/v1/realm/presence');
    expect(realm.body.presences[pinger.email]).toEqual({
      aggregated: { client: 'website', ...expected },
      website: { client: 'website', ...expected, pushable: false },
    });
    expect(realm.body.presences).not.toHaveProperty(silent.email);
    expect(Object.keys(realm.body).sort()).toEqual(['msg', 'presences', 'result', 'server_timestamp']);
  });

  test('GET /realm/emoji: no custom emoji here', async () => {
    expect((await cast.member.client.get('/api/v1/realm/emoji')).body).toEqual({
      result: 'success',
      msg: '',
      emoji: {},
    });
  });

  test('bad status, bots', async () => {
    expectError(
      await cast.member.client.post('/api/v1/users/me/presence', { status: 'away' }),
      400,
      'BAD_REQUEST',
      'Invalid status: away',
    );
    expectError(
      await cast.member.client.post('/api/v1/users/me/presence'),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'status' argument",
    );
    expectError(
      await cast.bot.client.post('/api/v1/users/me/presence', { status: 'active' }),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
  });
});

describe('presence events in a big realm', () => {
  test('no presence event once more than 100 users would get it (Zulip USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS)', async () => {
    const realm = await stack.createRealm('bigpresence', 'bigpresence.example.com');
    const users: TestUser[] = [];
    for (let i = 0; i < 100; i++) users.push(await stack.createUser({ realm, email: `p${i}@bigpresence.example.com` }));
    // 100 users: the first one coming online is news to all of them.
    let captured = await captureEvents(stack, async () => {
      await users[0].client.post('/api/v1/users/me/presence', { status: 'active', ping_only: true });
    });
    const sent = ofType(captured, 'presence');
    expect(sent).toHaveLength(1);
    expect(sent[0].recipientIds).toHaveLength(100);
    // 101: users coming online are no longer announced; their pings are still recorded.
    const newcomer = await stack.createUser({ realm, email: 'p100@bigpresence.example.com' });
    captured = await captureEvents(stack, async () => {
      await users[1].client.post('/api/v1/users/me/presence', { status: 'active', ping_only: true });
      await newcomer.client.post('/api/v1/users/me/presence', { status: 'active', ping_only: true });
    });
    expect(ofType(captured, 'presence')).toEqual([]);
    expect(await stack.db.userPresence.count({ where: { user_profile_id: { in: [users[1].id, newcomer.id] } } })).toBe(
      2,
    );
  });
});

describe('custom profile fields', () => {
  test('administrators create fields; everyone lists them and hears of new ones', async () => {
    let created!: ApiResponse;
    let select!: ApiResponse;
    const captured = await captureEvents(stack, async () => {
      created = await cast.admin.client.post('/api/v1/realm/profile_fields', {
        name: 'Biography',
        hint: 'About you',
        field_type: 2,
      });
      expect(created.body).toEqual({ result: 'success', msg: '', id: expect.any(Number) });
      select = await cast.owner.client.post('/api/v1/realm/profile_fields', {
        name: 'Favourite colour',
        field_type: 3,
        field_data: { '0': { text: 'Red', order: '1' }, '1': { text: 'Blue', order: '2' } },
        display_in_profile_summary: true,
      });
      expect(select.status).toBe(200);
    });
    const { body } = await cast.guest.client.get('/api/v1/realm/profile_fields');
    expect(body.custom_fields.slice(-2)).toEqual([
      {
        id: created.body.id,
        type: 2,
        order: expect.any(Number),
        name: 'Biography',
        hint: 'About you',
        field_data: '',
        required: false,
        editable_by_user: true,
      },
      {
        id: select.body.id,
        type: 3,
        order: expect.any(Number),
        name: 'Favourite colour',
        hint: '',
        field_data: JSON.stringify({ '0': { text: 'Red', order: '1' }, '1': { text: 'Blue', order: '2' } }),
        required: false,
        editable_by_user: true,
        display_in_profile_summary: true,
      },
    ]);
    const events = ofType(captured, 'custom_profile_fields');
    expect(events).toHaveLength(2);
    expect(events[1].event.fields).toEqual(body.custom_fields);
    expect(events[1].recipientIds).toEqual(await activeIds(stack));
  });

  test('creation refusals', async () => {
    const create = (params: Record<string, unknown>) =>
      cast.admin.client.post('/api/v1/realm/profile_fields', { name: 'Field', field_type: 1, ...params });
    expectError(
      await cast.member.client.post('/api/v1/realm/profile_fields', { name: 'x', field_type: 1 }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
    expectError(await create({ name: ' ' }), 400, 'BAD_REQUEST', 'Label cannot be blank.');
    expectError(await create({ field_type: 99 }), 400, 'BAD_REQUEST', 'Invalid field type.');
    expectError(await create({ hint: 'h'.repeat(81) }), 400, 'BAD_REQUEST', 'hint is too long (limit: 80 characters)');
    expectError(await create({ name: 'n'.repeat(41) }), 400, 'BAD_REQUEST', 'name is too long (limit: 40 characters)');
    expectError(
      await create({ field_type: 3, field_data: {} }),
      400,
      'BAD_REQUEST',
      'Field must have at least one choice.',
    );
    expectError(
      await create({ field_type: 2, display_in_profile_summary: true }),
      400,
      'BAD_REQUEST',
      'Field type not supported for display in profile summary.',
    );
    expectError(
      await create({ field_type: 7, field_data: { subtype: 'myspace' } }),
      400,
      'BAD_REQUEST',
      'Invalid external account type',
    );
    expectError(await create({ name: 'Biography' }), 400, 'BAD_REQUEST', 'A field with that name already exists.');
    expect((await create({ name: 'Pronouns', field_type: 8, display_in_profile_summary: true })).status).toBe(200);
    expectError(
      await create({ name: 'Third', display_in_profile_summary: true }),
      400,
      'BAD_REQUEST',
      'Only 2 custom profile fields can be displayed in the profile summary.',
    );
  });

  test('users set their own values: Markdown fields rendered, events to those who may see them', async () => {
    const fields = await stack.db.customProfileField.findMany({ where: { realm_id: stack.realm.id } });
    const biography = fields.find((f) => f.name === 'Biography')!;
    const colour = fields.find((f) => f.name === 'Favourite colour')!;
    const captured = await captureEvents(stack, async () => {
      const response = await cast.member.client.patch('/api/v1/users/me/profile_data', {
        data: [
          { id: biography.id, value: 'I like *tests*' },
          { id: colour.id, value: '1' },
        ],
      });
      expect(response.body).toEqual({ result: 'success', msg: '' });
      const me = (await cast.member.client.get('/api/v1/users/me')).body;
      expect(me.profile_data).toEqual({
        [biography.id]: { value: 'I like *tests*', rendered_value: '<p>I like <em>tests</em></p>' },
        [colour.id]: { value: '1' },
      });
    });
    const events = ofType(captured, 'realm_user');
    expect(events.map((e) => e.event.person)).toEqual([
      {
        user_id: cast.member.id,
        custom_profile_field: {
          id: biography.id,
          value: 'I like *tests*',
          rendered_value: '<p>I like <em>tests</em></p>',
        },
      },
      { user_id: cast.member.id, custom_profile_field: { id: colour.id, value: '1' } },
    ]);
    expect(events[0].recipientIds).toEqual(await activeIds(stack));

    expectError(
      await cast.member.client.patch('/api/v1/users/me/profile_data', { data: [{ id: colour.id, value: '7' }] }),
      400,
      'BAD_REQUEST',
      "'7' is not a valid choice for 'Favourite colour'.",
    );
    expectError(
      await cast.member.client.patch('/api/v1/users/me/profile_data', { data: [{ id: 987654, value: 'x' }] }),
      400,
      'BAD_REQUEST',
      'Field id 987654 not found.',
    );
    expectError(
      await cast.bot.client.patch('/api/v1/users/me/profile_data', { data: [{ id: biography.id, value: 'x' }] }),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
    await stack.db.customProfileField.update({ where: { id: colour.id }, data: { editable_by_user: false } });
    expectError(
      await cast.member.client.patch('/api/v1/users/me/profile_data', { data: [{ id: colour.id, value: '0' }] }),
      400,
      'BAD_REQUEST',
      'You are not allowed to change this field. Contact an administrator to update it.',
    );
    // An administrator may still set it, for anyone.
    expect(
      (
        await cast.admin.client.patch(`/api/v1/users/${cast.member.id}`, {
          profile_data: [{ id: colour.id, value: '0' }],
        })
      ).status,
    ).toBe(200);
    // Clearing a value.
    expect((await cast.member.client.delete('/api/v1/users/me/profile_data', { data: [biography.id] })).status).toBe(
      200,
    );
    expect((await cast.member.client.get('/api/v1/users/me')).body.profile_data).toEqual({
      [colour.id]: { value: '0' },
    });
  });
});
