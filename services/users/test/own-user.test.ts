import { Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

describe('GET /users/me', () => {
  test('returns every own-user field of the spec', async () => {
    const user = await stack.createUser({ fullName: 'Iago Owner', role: Role.OWNER, timezone: 'Europe/Paris' });
    const response = await user.client.get('/api/v1/users/me');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      user_id: user.id,
      email: user.email,
      delivery_email: user.deliveryEmail,
      full_name: 'Iago Owner',
      role: 100,
      is_owner: true,
      is_admin: true,
      is_guest: false,
      is_bot: false,
      is_active: true,
      timezone: 'Europe/Paris',
      date_joined: user.profile.date_joined.toISOString(),
      avatar_url: expect.stringMatching(
        /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/,
      ),
      avatar_version: 1,
      max_message_id: -1,
      profile_data: {},
    });
  });

  test.each([
    [Role.ADMINISTRATOR, { is_owner: false, is_admin: true, is_guest: false }],
    [Role.MODERATOR, { is_owner: false, is_admin: false, is_guest: false }],
    [Role.MEMBER, { is_owner: false, is_admin: false, is_guest: false }],
    [Role.GUEST, { is_owner: false, is_admin: false, is_guest: true }],
  ])('role %i sets the role flags', async (role, flags) => {
    const user = await stack.createUser({ role });
    const { body } = await user.client.get('/api/v1/users/me');
    expect(body).toMatchObject({ role, ...flags });
  });

  test('a bot has no profile_data', async () => {
    const owner = await stack.createUser({ role: Role.OWNER });
    const bot = await stack.createUser({ email: 'helper-bot@example.com', botType: 1, botOwnerId: owner.id });
    const { body } = await bot.client.get('/api/v1/users/me');
    expect(body.is_bot).toBe(true);
    expect(body).not.toHaveProperty('profile_data');
  });

  test('hidden email: API email is the placeholder, delivery_email the real one', async () => {
    const user = await stack.createUser({ email: 'private@example.com', emailAddressVisibility: 4 });
    const { body } = await user.client.get('/api/v1/users/me');
    expect(body.email).toBe(`user${user.id}@127.0.0.1`);
    expect(body.delivery_email).toBe('private@example.com');
  });

  test('max_message_id is the newest message the user received', async () => {
    const user = await stack.createUser();
    const other = await stack.createUser();
    const message = await stack.db.message.create({
      data: {
        realm_id: stack.realm.id,
        sender_id: other.id,
        content: 'hi',
        dm_key: [user.id, other.id].sort().join(','),
      },
    });
    await stack.db.userMessage.create({ data: { user_profile_id: user.id, message_id: message.id } });
    const { body } = await user.client.get('/api/v1/users/me');
    expect(body.max_message_id).toBe(message.id);
  });

  test('custom profile fields appear in profile_data', async () => {
    const user = await stack.createUser();
    const field = await stack.db.customProfileField.create({
      data: { realm_id: stack.realm.id, name: 'Biography', field_type: 2 },
    });
    await stack.db.customProfileFieldValue.create({
      data: { user_profile_id: user.id, field_id: field.id, value: '*hi*', rendered_value: '<p><em>hi</em></p>' },
    });
    const { body } = await user.client.get('/api/v1/users/me');
    expect(body.profile_data).toEqual({ [String(field.id)]: { value: '*hi*', rendered_value: '<p><em>hi</em></p>' } });
  });

  test('a POST is refused with 405', async () => {
    const user = await stack.createUser();
    const response = await user.client.post('/api/v1/users/me');
    expect(response.status).toBe(405);
    expect(response.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
  });

  test('unknown parameters are reported in ignored_parameters_unsupported', async () => {
    const user = await stack.createUser();
    const { body } = await user.client.get('/api/v1/users/me', { zeta: 1, alpha: 'x' });
    expect(body.ignored_parameters_unsupported).toEqual(['alpha', 'zeta']);
  });

  test('without credentials: 401 UNAUTHORIZED', async () => {
    const response = await stack.anonymous().get('/api/v1/users/me');
    expectError(response, 401, 'UNAUTHORIZED', 'Not logged in: API authentication or user session required');
  });
});
