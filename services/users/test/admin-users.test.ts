// Administration: POST /users (can_create_users), PATCH /users/{email}, PATCH /realm/profile_fields
// (reordering) and POST /realm/profile_fields for a known site's external-account field.
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType } from '@teamchat/testing';
import { runCommand } from '../src/manage';
import { activeIds, createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  cast = await createCast(stack, 'admin');
});
afterAll(() => stack.close());

const grant = (email: string, ...extra: string[]) =>
  runCommand(
    stack.deps,
    ['change-user-role', '--realm', stack.realm.host, '--email', email, '--permission', 'can_create_users', ...extra],
    () => {},
  );

describe('POST /users', () => {
  test('an administrator with can_create_users makes a member with a password, in the default channels', async () => {
    await grant(cast.admin.deliveryEmail);
    const general = await stack.createStream({ name: 'general (admin-users)', subscribers: [cast.owner.id] });
    await stack.db.stream.update({ where: { id: general.id }, data: { is_default: true } });

    let userId = 0;
    const captured = await captureEvents(stack, async () => {
      const response = await cast.admin.client.post('/api/v1/users', {
        email: 'New.Person@example.com',
        password: 'a-fine-password',
        full_name: '  New Person ',
      });
      expect(response.body).toEqual({ result: 'success', msg: '', user_id: expect.any(Number) });
      userId = response.body.user_id;
    });
    const user = await stack.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
    expect(user).toMatchObject({
      delivery_email: 'new.person@example.com',
      full_name: 'New Person',
      role: 400,
      is_bot: false,
      is_active: true,
    });
    const [added] = ofType(captured, 'realm_user', 'add');
    expect(added.event.person).toMatchObject({ user_id: userId, full_name: 'New Person' });
    expect(
      await stack.db.subscription.findFirst({
        where: { user_profile_id: userId, stream_id: general.id, active: true },
      }),
    ).not.toBeNull();

    // The password works.
    const login = await stack
      .anonymous()
      .post('/api/v1/fetch_api_key', { username: 'new.person@example.com', password: 'a-fine-password' });
    expect(login.body).toMatchObject({ result: 'success', user_id: userId });

    expectError(
      await cast.admin.client.post('/api/v1/users', {
        email: 'NEW.person@example.com',
        password: 'a-fine-password',
        full_name: 'Again',
      }),
      400,
      'BAD_REQUEST',
      "Email 'NEW.person@example.com' already in use",
    );
  });

  test('non-administrators, and administrators without can_create_users, are refused', async () => {
    const params = { email: 'nobody-new@example.com', password: 'a-fine-password', full_name: 'Nobody New' };
    for (const user of [cast.moderator, cast.member]) {
      expectError(
        await user.client.post('/api/v1/users', params),
        400,
        'UNAUTHORIZED_PRINCIPAL',
        'Must be an organization administrator',
      );
    }
    expectError(
      await cast.owner.client.post('/api/v1/users', params),
      400,
      'BAD_REQUEST',
      'User not authorized to create users',
    );
    await grant(cast.owner.deliveryEmail);
    await grant(cast.owner.deliveryEmail, '--revoke');
    expectError(
      await cast.owner.client.post('/api/v1/users', params),
      400,
      'BAD_REQUEST',
      'User not authorized to create users',
    );
    expect(await stack.db.userProfile.count({ where: { delivery_email: 'nobody-new@example.com' } })).toBe(0);
  });

  test.each([
    [{ email: 'not-an-email', password: 'a-fine-password', full_name: 'Someone' }, 'Bad name or username'],
    [{ email: 'x@example.com', password: 'short', full_name: 'Someone' }, 'The password is too weak.'],
    [{ email: 'x@example.com', password: 'a-fine-password', full_name: 'A' }, 'Name too short!'],
    [{ email: 'x@example.com', password: 'a-fine-password', full_name: 'Bad|12' }, 'Invalid format!'],
  ])('%j is refused: %s', async (params, message) => {
    await grant(cast.admin.deliveryEmail);
    expectError(await cast.admin.client.post('/api/v1/users', params), 400, 'BAD_REQUEST', message);
  });

  test('every parameter is required', async () => {
    await grant(cast.admin.deliveryEmail);
    expectError(
      await cast.admin.client.post('/api/v1/users', { email: 'y@example.com', full_name: 'Why' }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'password' argument",
    );
  });
});

describe('PATCH /users/{email}', () => {
  test('works as PATCH /users/{user_id} does', async () => {
    const target = await stack.createUser({ email: 'rename-me@example.com', fullName: 'Old Name' });
    const captured = await captureEvents(stack, async () => {
      const response = await cast.admin.client.patch('/api/v1/users/rename-me@example.com', {
        full_name: 'New Name',
        role: 300,
      });
      expect(response.body).toEqual({ result: 'success', msg: '' });
    });
    expect(await stack.db.userProfile.findUniqueOrThrow({ where: { id: target.id } })).toMatchObject({
      full_name: 'New Name',
      role: 300,
    });
    const updates = ofType(captured, 'realm_user', 'update').map((e) => e.event.person);
    expect(updates).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ user_id: target.id, full_name: 'New Name' }),
        expect.objectContaining({ user_id: target.id, role: 300 }),
      ]),
    );
    expectError(
      await cast.admin.client.patch('/api/v1/users/nobody-here@example.com', { full_name: 'X Y' }),
      400,
      'BAD_REQUEST',
      'No such user',
    );
    expectError(
      await cast.member.client.patch('/api/v1/users/rename-me@example.com', { full_name: 'Member Tries' }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
  });
});

describe('custom profile fields', () => {
  test('a GitHub account field without a name takes the default name; reordering moves every field', async () => {
    let github = 0;
    let text = 0;
    const created = await captureEvents(stack, async () => {
      const response = await cast.admin.client.post('/api/v1/realm/profile_fields', {
        field_type: 7,
        field_data: { subtype: 'github' },
      });
      expect(response.body).toEqual({ result: 'success', msg: '', id: expect.any(Number) });
      github = response.body.id;
      text = (await cast.admin.client.post('/api/v1/realm/profile_fields', { name: 'Team', field_type: 1 })).body.id;
    });
    const fields = (await cast.member.client.get('/api/v1/realm/profile_fields')).body.custom_fields;
    expect(fields.find((field: { id: number }) => field.id === github)).toMatchObject({
      name: 'GitHub',
      hint: '',
      type: 7,
      field_data: '{"subtype":"github"}',
    });
    expect(ofType(created, 'custom_profile_fields')).toHaveLength(2);
    // A second one clashes by name.
    expectError(
      await cast.admin.client.post('/api/v1/realm/profile_fields', {
        field_type: 7,
        field_data: { subtype: 'github' },
      }),
      400,
      'BAD_REQUEST',
      'A field with that name already exists.',
    );

    const all = fields.map((field: { id: number }) => field.id);
    const reversed = [...all].reverse();
    const reordered = await captureEvents(stack, async () => {
      const response = await cast.admin.client.patch('/api/v1/realm/profile_fields', { order: reversed });
      expect(response.body).toEqual({ result: 'success', msg: '' });
    });
    const [event] = ofType(reordered, 'custom_profile_fields');
    expect(event.event.fields.map((field: { id: number }) => field.id)).toEqual(reversed);
    expect(event.event.fields.map((field: { order: number }) => field.order)).toEqual(reversed.map((_, i) => i));
    expect(event.recipientIds).toEqual(await activeIds(stack));
    const listed = (await cast.guest.client.get('/api/v1/realm/profile_fields')).body.custom_fields;
    expect(listed.map((field: { id: number }) => field.id)).toEqual(reversed);
    expect(reversed).toContain(text);
  });

  test('reordering: every field must be named; administrators only', async () => {
    const id = (await cast.admin.client.post('/api/v1/realm/profile_fields', { name: 'Desk', field_type: 1 })).body.id;
    expectError(
      await cast.admin.client.patch('/api/v1/realm/profile_fields', { order: [id] }),
      400,
      'BAD_REQUEST',
      'Invalid order mapping.',
    );
    expectError(
      await cast.admin.client.patch('/api/v1/realm/profile_fields', { order: 'first' }),
      400,
      'BAD_REQUEST',
      'order is not valid JSON',
    );
    expectError(
      await cast.member.client.patch('/api/v1/realm/profile_fields', { order: [id] }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  });

  test('other external accounts still need a name, and unknown sites are refused', async () => {
    expectError(
      await cast.admin.client.post('/api/v1/realm/profile_fields', {
        field_type: 7,
        field_data: { subtype: 'custom', url_pattern: 'https://example.com/%(username)s' },
      }),
      400,
      'BAD_REQUEST',
      'Label cannot be blank.',
    );
    expectError(
      await cast.admin.client.post('/api/v1/realm/profile_fields', {
        field_type: 7,
        field_data: { subtype: 'myspace' },
      }),
      400,
      'BAD_REQUEST',
      'Invalid external account type',
    );
  });
});
