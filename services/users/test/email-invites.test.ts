// Invitations by email as records: POST /invites, GET /invites (with reusable links),
// DELETE /invites/{id}, POST /invites/{id}/resend, with Zulip's checks, errors and
// invites_changed events.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, type Params } from '@teamchat/testing';
import { createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
let otherMember: TestUser;
beforeAll(async () => {
  stack = await startStack();
  cast = await createCast(stack);
  otherMember = await stack.createUser({ email: 'other-member@example.com', fullName: 'Other Member' });
});
afterAll(() => stack.close());

const sendInvites = (by: TestUser, params: Params) =>
  by.client.post('/api/v1/invites', { stream_ids: '[]', ...params });
const prereg = (email: string) =>
  stack.db.preregistrationUser.findFirstOrThrow({ where: { email }, orderBy: { id: 'desc' } });

describe('POST /invites', () => {
  test('records one invitation per address, with its options; administrators and the inviter hear of it', async () => {
    const before = Math.floor(Date.now() / 1000);
    const captured = await captureEvents(stack, async () => {
      const response = await sendInvites(cast.member, {
        invitee_emails: 'New.One@example.org, Second Person <second@example.org>\nnew.one@example.org',
        invite_expires_in_minutes: 60,
        notify_referrer_on_join: false,
        include_realm_default_subscriptions: true,
      });
      expect(response.body).toEqual({ result: 'success', msg: '' });
    });
    const one = await prereg('new.one@example.org');
    expect(one).toMatchObject({
      realm_id: stack.realm.id,
      referred_by_id: cast.member.id,
      invited_as: Role.MEMBER,
      status: 0,
      include_realm_default_subscriptions: true,
      notify_referrer_on_join: false,
      stream_ids: [],
      group_ids: [],
    });
    expect(one.expiry_date!.getTime() - one.invited_at.getTime()).toBe(60 * 60_000);
    // "New.One@..." and "new.one@..." are two strings of the set, as in Zulip: both are recorded.
    expect(await stack.db.preregistrationUser.count({ where: { email: 'new.one@example.org' } })).toBe(2);
    expect(await prereg('second@example.org')).toMatchObject({ notify_referrer_on_join: false });

    const [event] = ofType(captured, 'invites_changed');
    expect(event.event).toEqual({ type: 'invites_changed' });
    expect(event.recipientIds).toEqual([cast.owner.id, cast.admin.id, cast.member.id].sort((a, b) => a - b));

    const listed = (await cast.member.client.get('/api/v1/invites')).body.invites;
    const second = await prereg('second@example.org');
    expect(listed).toContainEqual({
      id: second.id,
      email: 'second@example.org',
      invited_by_user_id: cast.member.id,
      invited: Math.floor(second.invited_at.getTime() / 1000),
      expiry_date: Math.floor(second.expiry_date!.getTime() / 1000),
      invited_as: Role.MEMBER,
      is_multiuse: false,
      notify_referrer_on_join: false,
    });
    expect(Math.floor(second.invited_at.getTime() / 1000)).toBeGreaterThanOrEqual(before);
  });

  test('GET /invites: email invitations first, then links; members see only their own', async () => {
    await sendInvites(otherMember, { invitee_emails: 'someone-else@example.org' });
    const link = await cast.admin.client.post('/api/v1/invites/multiuse', {});
    expect(link.status).toBe(200);
    const adminList = (await cast.admin.client.get('/api/v1/invites')).body.invites as { is_multiuse: boolean }[];
    const firstLink = adminList.findIndex((invite) => invite.is_multiuse);
    expect(firstLink).toBeGreaterThan(0);
    expect(adminList.slice(firstLink).every((invite) => invite.is_multiuse)).toBe(true);
    expect(adminList.map((invite) => (invite as { email?: string }).email)).toContain('someone-else@example.org');
    const memberList = (await cast.member.client.get('/api/v1/invites')).body.invites as {
      invited_by_user_id: number;
    }[];
    expect(memberList.length).toBeGreaterThan(0);
    expect(memberList.every((invite) => invite.invited_by_user_id === cast.member.id)).toBe(true);
  });

  test('never-expiring invitations, and other roles by who may invite them', async () => {
    expect(
      (await sendInvites(cast.admin, { invitee_emails: 'forever@example.org', invite_expires_in_minutes: null }))
        .status,
    ).toBe(200);
    expect((await prereg('forever@example.org')).expiry_date).toBeNull();
    expectError(
      await sendInvites(cast.member, { invitee_emails: 'boss@example.org', invite_as: Role.ADMINISTRATOR }),
      400,
      'BAD_REQUEST',
      'Must be an organization administrator',
    );
    expectError(
      await sendInvites(cast.admin, { invitee_emails: 'boss@example.org', invite_as: Role.OWNER }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expect((await sendInvites(cast.owner, { invitee_emails: 'boss@example.org', invite_as: Role.OWNER })).status).toBe(
      200,
    );
    expect((await prereg('boss@example.org')).invited_as).toBe(Role.OWNER);
  });

  test('existing accounts: all of them is an error, some of them is reported after inviting the rest', async () => {
    const all = await sendInvites(cast.member, { invitee_emails: `${cast.admin.deliveryEmail.toUpperCase()}` });
    expectError(all, 400, 'INVITATION_FAILED', "We weren't able to invite anyone.");
    expect(all.body).toMatchObject({
      errors: [[cast.admin.deliveryEmail.toUpperCase(), 'Already has an account.', false]],
      sent_invitations: false,
      license_limit_reached: false,
      daily_limit_reached: false,
    });
    const some = await sendInvites(cast.member, { invitee_emails: `${cast.admin.deliveryEmail}, fresh@example.org` });
    expectError(
      some,
      400,
      'INVITATION_FAILED',
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
    );
    expect(some.body).toMatchObject({
      errors: [[cast.admin.deliveryEmail, 'Already has an account.', false]],
      sent_invitations: true,
    });
    expect(await prereg('fresh@example.org')).toBeTruthy();
  });

  test('an invalid address sends nothing', async () => {
    const response = await sendInvites(cast.member, { invitee_emails: 'noatsign.com, valid@example.org' });
    expectError(response, 400, 'INVITATION_FAILED', "Some emails did not validate, so we didn't send any invitations.");
    expect(response.body.errors).toEqual([['noatsign.com', 'Invalid address.', false]]);
    expect(await stack.db.preregistrationUser.count({ where: { email: 'valid@example.org' } })).toBe(0);
  });

  test('parameters, guests and can_invite_users_group', async () => {
    expectError(
      await cast.member.client.post('/api/v1/invites', { invitee_emails: 'x@example.org' }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'stream_ids' argument",
    );
    expectError(
      await sendInvites(cast.member, { invitee_emails: '' }),
      400,
      'BAD_REQUEST',
      'You must specify at least one email address.',
    );
    expectError(
      await sendInvites(cast.guest, { invitee_emails: 'x@example.org' }),
      400,
      'BAD_REQUEST',
      'Not allowed for guest users',
    );
    expectError(
      await sendInvites(cast.member, { invitee_emails: 'x@example.org', stream_ids: '[999999]' }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID 999999. No invites were sent.',
    );
    await stack.setRealmGroupSetting('can_invite_users_group', 'role:administrators');
    try {
      expectError(
        await sendInvites(cast.member, { invitee_emails: 'x@example.org' }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
    } finally {
      await stack.setRealmGroupSetting('can_invite_users_group', 'role:members');
    }
    expect(await stack.db.preregistrationUser.count({ where: { email: 'x@example.org' } })).toBe(0);
  });
});

test('the daily cap: a batch past it sends nothing', async () => {
  const emails = Array.from({ length: 101 }, (_, i) => `bulk${i}@example.org`).join(',');
  const response = await sendInvites(cast.admin, { invitee_emails: emails });
  expectError(
    response,
    400,
    'INVITATION_FAILED',
    'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
  );
  expect(response.body).toMatchObject({ errors: [], sent_invitations: false, daily_limit_reached: true });
  expect(await stack.db.preregistrationUser.count({ where: { email: { startsWith: 'bulk' } } })).toBe(0);
});

describe('DELETE /invites/{id} and POST /invites/{id}/resend', () => {
  test('the inviter or an administrator; revoked invitations are gone', async () => {
    await sendInvites(cast.member, { invitee_emails: 'revoke-me@example.org' });
    const invite = await prereg('revoke-me@example.org');
    expect((await cast.member.client.post(`/api/v1/invites/${invite.id}/resend`, {})).body).toEqual({
      result: 'success',
      msg: '',
    });
    expectError(
      await otherMember.client.post(`/api/v1/invites/${invite.id}/resend`, {}),
      400,
      'BAD_REQUEST',
      'Must be an organization administrator',
    );
    expectError(
      await otherMember.client.delete(`/api/v1/invites/${invite.id}`),
      400,
      'BAD_REQUEST',
      'Must be an organization administrator',
    );
    const captured = await captureEvents(stack, async () => {
      expect((await cast.admin.client.delete(`/api/v1/invites/${invite.id}`)).body).toEqual({
        result: 'success',
        msg: '',
      });
    });
    expect(ofType(captured, 'invites_changed')[0].recipientIds).toEqual(
      [cast.owner.id, cast.admin.id, cast.member.id].sort((a, b) => a - b),
    );
    expect((await stack.db.preregistrationUser.findUniqueOrThrow({ where: { id: invite.id } })).status).toBe(2);
    expectError(
      await cast.admin.client.delete(`/api/v1/invites/${invite.id}`),
      400,
      'BAD_REQUEST',
      'No such invitation',
    );
    expectError(
      await cast.admin.client.post(`/api/v1/invites/${invite.id}/resend`, {}),
      400,
      'BAD_REQUEST',
      'No such invitation',
    );
    const listed = (await cast.admin.client.get('/api/v1/invites')).body.invites as {
      id: number;
      is_multiuse: boolean;
    }[];
    expect(listed.some((entry) => !entry.is_multiuse && entry.id === invite.id)).toBe(false);
  });

  test("an owner's invitation of someone else needs an owner", async () => {
    await sendInvites(cast.owner, { invitee_emails: 'owner-two@example.org', invite_as: Role.OWNER });
    const invite = await prereg('owner-two@example.org');
    expectError(
      await cast.admin.client.delete(`/api/v1/invites/${invite.id}`),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expect((await cast.owner.client.delete(`/api/v1/invites/${invite.id}`)).status).toBe(200);
  });
});

test("an email invitation's link signs up its own address, once, with its role; the invitation leaves the lists", async () => {
  expect(
    (await sendInvites(cast.admin, { invitee_emails: 'invited.mod@example.org', invite_as: Role.MODERATOR })).status,
  ).toBe(200);
  const invitation = await prereg('invited.mod@example.org');
  const path = `/join/${invitation.confirmation_key}/`;

  const page = await stack.anonymous().get(path, {}, { validate: false });
  expect(page.status).toBe(200);
  expect(String(page.body)).toContain('Email: invited.mod@example.org');

  // Another address is refused: the link is this one's.
  expectError(
    await stack
      .anonymous()
      .post(path, { email: 'someone.else@example.org', full_name: 'X', password: 'a good password' }),
    400,
    'BAD_REQUEST',
    'This invitation is for another email address.',
  );

  let body: Record<string, unknown> = {};
  const captured = await captureEvents(stack, async () => {
    const response = await stack.anonymous().post(path, { full_name: 'Invited Mod', password: 'a good password' });
    expect(response.status).toBe(200);
    body = response.body;
  });
  expect(body).toMatchObject({ result: 'success', email: 'invited.mod@example.org' });
  const user = await stack.db.userProfile.findUniqueOrThrow({ where: { id: body.user_id as number } });
  expect(user).toMatchObject({ role: Role.MODERATOR, full_name: 'Invited Mod' });
  expect((await prereg('invited.mod@example.org')).status).toBe(1);
  expect(ofType(captured, 'invites_changed')).toHaveLength(1);
  const listed = (await cast.admin.client.get('/api/v1/invites')).body.invites as { email?: string }[];
  expect(listed.map((row) => row.email)).not.toContain('invited.mod@example.org');

  // Used up: the link no longer works.
  expectError(
    await stack.anonymous().post(path, { full_name: 'Again', password: 'a good password' }),
    400,
    'BAD_REQUEST',
    'The confirmation link has expired or been deactivated.',
  );
});
