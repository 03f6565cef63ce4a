import { Role, type SystemGroupName } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type ApiResponse, captureEvents, expectError, ofType, type Params } from '@teamchat/testing';
import { createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  // Joining through a link subscribes the new account through the channels service.
  stack = await startStack({ services: ['channels'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const KEY = /^[a-z2-7]{24}$/;

const setRealmSetting = (name: string, groupName: SystemGroupName) => stack.setRealmGroupSetting(name, groupName);

function keyOf(link: string): string {
  const match = new RegExp(`^${stack.gatewayUrl}/join/([a-z2-7]+)/$`).exec(link);
  if (!match) throw new Error(`not an invitation link: ${link}`);
  return match[1];
}

async function invite(by: TestUser, params: Params = {}): Promise<string> {
  const response = await by.client.post('/api/v1/invites/multiuse', params);
  expect(response.status).toBe(200);
  return response.body.invite_link;
}

describe('POST /invites/multiuse', () => {
  test('an administrator gets a link with Zulip defaults, and administrators hear of it', async () => {
    const captured = await captureEvents(stack, async () => {
      const before = Date.now();
      const link = await invite(cast.admin);
      const key = keyOf(link);
      expect(key).toMatch(KEY);
      const row = await stack.db.multiuseInvite.findUniqueOrThrow({ where: { confirmation_key: key } });
      expect(row).toMatchObject({
        realm_id: stack.realm.id,
        referred_by_id: cast.admin.id,
        invited_as: Role.MEMBER,
        status: 0,
        include_realm_default_subscriptions: false,
        welcome_message_custom_text: null,
        stream_ids: [],
        group_ids: [],
      });
      const expiresIn = row.expiry_date!.getTime() - before;
      expect(expiresIn).toBeGreaterThanOrEqual(14400 * 60_000 - 60_000);
      expect(expiresIn).toBeLessThanOrEqual(14400 * 60_000 + 60_000);
    });
    const [event] = ofType(captured, 'invites_changed');
    expect(event.event).toEqual({ type: 'invites_changed' });
    expect(event.recipientIds).toEqual([cast.owner.id, cast.admin.id].sort((a, b) => a - b));
  });

  test('expiry in minutes, or null for never', async () => {
    const never = await stack.db.multiuseInvite.findUniqueOrThrow({
      where: { confirmation_key: keyOf(await invite(cast.admin, { invite_expires_in_minutes: null })) },
    });
    expect(never.expiry_date).toBeNull();
    const before = Date.now();
    const hour = await stack.db.multiuseInvite.findUniqueOrThrow({
      where: { confirmation_key: keyOf(await invite(cast.admin, { invite_expires_in_minutes: 60 })) },
    });
    expect(Math.abs(hour.expiry_date!.getTime() - before - 3_600_000)).toBeLessThan(60_000);
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { invite_expires_in_minutes: 'soon' }),
      400,
      'BAD_REQUEST',
      'invite_expires_in_minutes is not valid JSON',
    );
  });

  test('who may invite: create_multiuse_invite_group (administrators by default), never guests or bots', async () => {
    expectError(
      await cast.member.client.post('/api/v1/invites/multiuse'),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.moderator.client.post('/api/v1/invites/multiuse'),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.guest.client.post('/api/v1/invites/multiuse'),
      400,
      'BAD_REQUEST',
      'Not allowed for guest users',
    );
    expectError(
      await cast.bot.client.post('/api/v1/invites/multiuse'),
      400,
      'BAD_REQUEST',
      'This endpoint does not accept bot requests.',
    );
    await setRealmSetting('create_multiuse_invite_group', 'role:members');
    try {
      expect(keyOf(await invite(cast.member))).toMatch(KEY);
    } finally {
      await setRealmSetting('create_multiuse_invite_group', 'role:administrators');
    }
  });

  test('the role invited is no higher than the inviter may grant', async () => {
    await setRealmSetting('create_multiuse_invite_group', 'role:members');
    try {
      expectError(
        await cast.member.client.post('/api/v1/invites/multiuse', { invite_as: Role.MODERATOR }),
        400,
        'BAD_REQUEST',
        'Must be an organization administrator',
      );
      // The spec: a user can invite only to roles equal or more restricted than their own.
      expect(await invite(cast.moderator, { invite_as: Role.MODERATOR })).toContain('/join/');
      expectError(
        await cast.moderator.client.post('/api/v1/invites/multiuse', { invite_as: Role.ADMINISTRATOR }),
        400,
        'BAD_REQUEST',
        'Must be an organization administrator',
      );
      expect(await invite(cast.member, { invite_as: Role.GUEST })).toContain('/join/');
    } finally {
      await setRealmSetting('create_multiuse_invite_group', 'role:administrators');
    }
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { invite_as: Role.OWNER }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expect(await invite(cast.admin, { invite_as: Role.ADMINISTRATOR })).toContain('/join/');
    expect(await invite(cast.owner, { invite_as: Role.OWNER })).toContain('/join/');
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { invite_as: 250 }),
      400,
      'BAD_REQUEST',
      'Invalid invite_as',
    );
  });

  test('channels: accessible, and ones the inviter may add subscribers to (or default channels)', async () => {
    const open = await stack.createStream({ name: 'invite-open' });
    const secret = await stack.createStream({ name: 'invite-secret', inviteOnly: true });
    const general = await stack.createStream({ name: 'invite-default' });
    await stack.db.stream.update({ where: { id: general.id }, data: { is_default: true } });
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { stream_ids: [987654] }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID 987654. No invites were sent.',
    );
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { stream_ids: [secret.id] }),
      400,
      'BAD_REQUEST',
      `Invalid channel ID ${secret.id}. No invites were sent.`,
    );
    await setRealmSetting('create_multiuse_invite_group', 'role:members');
    await setRealmSetting('can_add_subscribers_group', 'role:administrators');
    try {
      expectError(
        await cast.member.client.post('/api/v1/invites/multiuse', { stream_ids: [open.id] }),
        400,
        'BAD_REQUEST',
        'You do not have permission to subscribe other users to channels.',
      );
      expect(
        await invite(cast.member, { stream_ids: [general.id], include_realm_default_subscriptions: true }),
      ).toContain('/join/');
      // The channel's own can_add_subscribers_group is enough.
      await stack.db.groupSetting.updateMany({
        where: { owner_kind: 'stream', owner_id: open.id, name: 'can_add_subscribers_group' },
        data: { group_id: await systemGroupId(stack, 'role:members') },
      });
      expect(await invite(cast.member, { stream_ids: [open.id] })).toContain('/join/');
    } finally {
      await setRealmSetting('create_multiuse_invite_group', 'role:administrators');
      await setRealmSetting('can_add_subscribers_group', 'role:members');
    }
  });

  test('groups: only ones the inviter may add members to', async () => {
    const group = await cast.member.client.post('/api/v1/user_groups/create', {
      name: 'invite team',
      description: '',
      members: [],
    });
    const groupId = group.body.group_id;
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { group_ids: [groupId] }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { group_ids: [987654] }),
      400,
      'BAD_REQUEST',
      'Invalid user group',
    );
    expect(await invite(cast.owner, { group_ids: [groupId] })).toContain('/join/');
  });

  test('welcome_message_custom_text: administrators only, at most 8000 characters', async () => {
    await setRealmSetting('create_multiuse_invite_group', 'role:members');
    try {
      expectError(
        await cast.member.client.post('/api/v1/invites/multiuse', { welcome_message_custom_text: 'Hi!' }),
        400,
        'BAD_REQUEST',
        'Must be an organization administrator',
      );
    } finally {
      await setRealmSetting('create_multiuse_invite_group', 'role:administrators');
    }
    expectError(
      await cast.admin.client.post('/api/v1/invites/multiuse', { welcome_message_custom_text: 'x'.repeat(8001) }),
      400,
      'BAD_REQUEST',
      'welcome_message_custom_text is too long (limit: 8000 characters)',
    );
    const link = await invite(cast.admin, { welcome_message_custom_text: 'x'.repeat(8000) });
    expect(
      (await stack.db.multiuseInvite.findUniqueOrThrow({ where: { confirmation_key: keyOf(link) } }))
        .welcome_message_custom_text,
    ).toHaveLength(8000);
    const empty = await invite(cast.admin, { welcome_message_custom_text: '' });
    expect(
      (await stack.db.multiuseInvite.findUniqueOrThrow({ where: { confirmation_key: keyOf(empty) } }))
        .welcome_message_custom_text,
    ).toBe('');
  });
});

describe('GET /invites and DELETE /invites/multiuse/{id}', () => {
  test('administrators see every usable link, others their own; revoked and expired ones are gone', async () => {
    await setRealmSetting('create_multiuse_invite_group', 'role:members');
    let memberLink: string;
    try {
      memberLink = await invite(cast.member, { invite_as: Role.GUEST });
    } finally {
      await setRealmSetting('create_multiuse_invite_group', 'role:administrators');
    }
    const expired = await invite(cast.admin, { invite_expires_in_minutes: 0 });
    const adminLink = await invite(cast.admin, { invite_as: Role.MODERATOR, invite_expires_in_minutes: null });
    const adminView = (await cast.admin.client.get('/api/v1/invites')).body.invites;
    const adminInvite = adminView.find((i: { link_url: string }) => i.link_url === adminLink);
    expect(adminInvite).toEqual({
      id: expect.any(Number),
      invited_by_user_id: cast.admin.id,
      invited: expect.any(Number),
      expiry_date: null,
      invited_as: Role.MODERATOR,
      link_url: adminLink,
      is_multiuse: true,
    });
    expect(adminView.map((i: { link_url: string }) => i.link_url)).toContain(memberLink!);
    expect(adminView.map((i: { link_url: string }) => i.link_url)).not.toContain(expired);
    const memberView = (await cast.member.client.get('/api/v1/invites')).body.invites;
    expect(memberView.map((i: { link_url: string }) => i.link_url)).toContain(memberLink!);
    expect(memberView.every((i: { invited_by_user_id: number }) => i.invited_by_user_id === cast.member.id)).toBe(true);
    expectError(await cast.guest.client.get('/api/v1/invites'), 400, 'BAD_REQUEST', 'Not allowed for guest users');

    expectError(
      await cast.member.client.delete(`/api/v1/invites/multiuse/${adminInvite.id}`),
      400,
      'BAD_REQUEST',
      'Must be an organization administrator',
    );
    expectError(
      await cast.admin.client.delete('/api/v1/invites/multiuse/987654'),
      400,
      'BAD_REQUEST',
      'No such invitation',
    );
    const captured = await captureEvents(stack, async () => {
      expect((await cast.admin.client.delete(`/api/v1/invites/multiuse/${adminInvite.id}`)).body).toEqual({
        result: 'success',
        msg: '',
      });
    });
    expect(ofType(captured, 'invites_changed').length).toBe(1);
    expectError(
      await cast.admin.client.delete(`/api/v1/invites/multiuse/${adminInvite.id}`),
      400,
      'BAD_REQUEST',
      'Invitation has already been revoked',
    );
    expect(
      (await cast.admin.client.get('/api/v1/invites')).body.invites.map((i: { link_url: string }) => i.link_url),
    ).not.toContain(adminLink);
  });

  test('an owner-level invitation is revoked only by an owner (or its creator)', async () => {
    const link = await invite(cast.owner, { invite_as: Role.OWNER });
    const row = await stack.db.multiuseInvite.findUniqueOrThrow({ where: { confirmation_key: keyOf(link) } });
    expectError(
      await cast.admin.client.delete(`/api/v1/invites/multiuse/${row.id}`),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expect((await cast.owner.client.delete(`/api/v1/invites/multiuse/${row.id}`)).status).toBe(200);
  });
});

describe('joining through the link', () => {
  test('end to end: role, groups, the invitation channels and the default channels', async () => {
    const group = (
      await cast.owner.client.post('/api/v1/user_groups/create', { name: 'newcomers', description: '', members: [] })
    ).body.group_id;
    const lounge = await stack.createStream({ name: 'lounge', subscribers: [cast.admin.id] });
    // A private channel: the inviter must be able to see it.
    const hideout = await stack.createStream({ name: 'hideout', inviteOnly: true, subscribers: [cast.owner.id] });
    const town = await stack.createStream({ name: 'town square' });
    await stack.db.stream.update({ where: { id: town.id }, data: { is_default: true } });
    const link = await invite(cast.owner, {
      invite_as: Role.MODERATOR,
      stream_ids: [lounge.id, hideout.id],
      group_ids: [group],
      include_realm_default_subscriptions: true,
    });

    const page = await stack.anonymous().get(new URL(link).pathname, {}, { validate: false });
    expect(page.status).toBe(200);
    expect(String(page.body)).toContain('<form method="post">');

    let response!: ApiResponse;
    const captured = await captureEvents(stack, async () => {
      response = await stack.anonymous().post('/api/v1/invites/multiuse/accept', {
        key: keyOf(link),
        email: 'Newcomer@Example.com',
        full_name: 'New Comer',
        password: 'a good password',
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        result: 'success',
        msg: '',
        user_id: expect.any(Number),
        email: 'newcomer@example.com',
        api_key: expect.stringMatching(/^[A-Za-z0-9]{32}$/),
      });
      const newcomer = stack.client({ email: 'newcomer@example.com', apiKey: response.body.api_key });
      expect((await newcomer.get('/api/v1/users/me')).body).toMatchObject({
        user_id: response.body.user_id,
        role: Role.MODERATOR,
        full_name: 'New Comer',
      });
      // The password works too.
      expect(
        (
          await stack
            .anonymous()
            .post('/api/v1/fetch_api_key', { username: 'newcomer@example.com', password: 'a good password' })
        ).status,
      ).toBe(200);

      const groups = await stack.db.userGroupMembership.findMany({
        where: { user_profile_id: response.body.user_id },
        select: { user_group_id: true },
      });
      expect(groups.map((g) => g.user_group_id).sort((a, b) => a - b)).toEqual(
        [group, await systemGroupId(stack, 'role:moderators')].sort((a, b) => a - b),
      );
      const subscriptions = await stack.db.subscription.findMany({
        where: { user_profile_id: response.body.user_id, active: true },
        select: { stream_id: true },
      });
      const defaults = await stack.db.stream.findMany({
        where: { realm_id: stack.realm.id, is_default: true },
        select: { id: true },
      });
      expect(defaults.map((d) => d.id)).toContain(town.id);
      const expected = [...new Set([lounge.id, hideout.id, ...defaults.map((d) => d.id)])].sort((a, b) => a - b);
      expect(subscriptions.map((s) => s.stream_id).sort((a, b) => a - b)).toEqual(expected);
    });

    const added = ofType(captured, 'realm_user');
    expect(added[0].event).toMatchObject({
      type: 'realm_user',
      op: 'add',
      person: { user_id: response.body.user_id, role: Role.MODERATOR, delivery_email: 'newcomer@example.com' },
    });
    // The link stays usable for the next person.
    const second = await stack.anonymous().post(new URL(link).pathname, {
      email: 'second@example.com',
      full_name: 'Second Comer',
      password: 'another password',
    });
    expect(second.status).toBe(200);
  });

  test('the form answers browsers with a page', async () => {
    const link = await invite(cast.admin);
    const response = await stack.anonymous().post(
      new URL(link).pathname,
      { email: 'browser@example.com', full_name: 'Browser User', password: 'browser password' },
      {
        headers: { accept: 'text/html,application/xhtml+xml' },
        validate: false,
      },
    );
    expect(response.status).toBe(200);
    expect(String(response.body)).toContain('browser@example.com');
    expect(await stack.db.userProfile.findFirst({ where: { delivery_email: 'browser@example.com' } })).not.toBeNull();
  });

  test('expired, revoked and unknown links are refused; so are bad details', async () => {
    const expired = keyOf(await invite(cast.admin, { invite_expires_in_minutes: 0 }));
    const revokedLink = await invite(cast.admin);
    const revokedRow = await stack.db.multiuseInvite.findUniqueOrThrow({
      where: { confirmation_key: keyOf(revokedLink) },
    });
    await cast.admin.client.delete(`/api/v1/invites/multiuse/${revokedRow.id}`);
    const good = keyOf(await invite(cast.admin));
    const join = (key: string, details: Record<string, string> = {}) =>
      stack.anonymous().post('/api/v1/invites/multiuse/accept', {
        key,
        email: 'late@example.com',
        full_name: 'Late Comer',
        password: 'late password',
        ...details,
      });

    expectError(await join(expired), 400, 'BAD_REQUEST', 'The confirmation link has expired or been deactivated.');
    expectError(
      await join(revokedRow.confirmation_key),
      400,
      'BAD_REQUEST',
      'The confirmation link has expired or been deactivated.',
    );
    expectError(
      await join('nosuchkeynosuchkeynosuch'),
      404,
      'BAD_REQUEST',
      "Whoops. We couldn't find your confirmation link in the system.",
    );
    expectError(await join(good, { email: 'not-an-email' }), 400, 'BAD_REQUEST', 'Enter a valid email address.');
    expectError(await join(good, { full_name: 'X' }), 400, 'BAD_REQUEST', 'Name too short!');
    expectError(await join(good, { password: '123' }), 400, 'BAD_REQUEST', 'The password is too weak.');
    expectError(
      await join(good, { email: cast.member.deliveryEmail }),
      400,
      'BAD_REQUEST',
      `Email '${cast.member.deliveryEmail}' already in use`,
    );
    expectError(
      await stack.anonymous().post('/api/v1/invites/multiuse/accept', { key: good }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'email' argument",
    );
    expect(await stack.db.userProfile.findFirst({ where: { delivery_email: 'late@example.com' } })).toBeNull();

    const page = await stack.anonymous().get(`/join/${expired}/`, {}, { validate: false });
    expect(page.status).toBe(400);
    expect(String(page.body)).toContain('expired');
    // A link of one realm does not work on another realm's host.
    await stack.createRealm('elsewhere', 'elsewhere.example.test');
    expectError(
      await stack.anonymous().withHost('elsewhere.example.test').post('/api/v1/invites/multiuse/accept', {
        key: good,
        email: 'x@example.com',
        full_name: 'Some One',
        password: 'password!',
      }),
      404,
      'BAD_REQUEST',
    );
  });
});
