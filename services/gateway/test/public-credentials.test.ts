// GET /server_settings and POST /fetch_api_key answer whatever credentials come along, as Zulip
// (which never reads the Authorization header there) does: a client holding a stale key can
// still ask for the server's settings and log in again.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

let stack: Stack;
let user: TestUser;
beforeAll(async () => {
  stack = await startStack();
  user = await stack.createUser({ email: 'stale-key@example.com', password: 'correct horse' });
});
afterAll(() => stack.close());

const basic = (email: string, key: string) => `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;

const badHeaders = () => [
  basic(user.deliveryEmail, 'a'.repeat(32)), // a wrong (e.g. regenerated) key
  basic(user.deliveryEmail, 'short'), // a malformed key
  basic('nobody@example.com', user.apiKey), // an unknown email
  'Bearer some-token', // not Basic at all
  `Basic ${Buffer.from('no-colon').toString('base64')}`,
];

test('GET /server_settings ignores failing credentials', async () => {
  for (const authorization of badHeaders()) {
    const response = await stack.anonymous().get('/api/v1/server_settings', {}, { headers: { authorization } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ result: 'success', realm_uri: expect.any(String) });
  }
});

test('POST /fetch_api_key ignores failing credentials and checks the password', async () => {
  for (const authorization of badHeaders()) {
    const response = await stack
      .anonymous()
      .post(
        '/api/v1/fetch_api_key',
        { username: 'stale-key@example.com', password: 'correct horse' },
        { headers: { authorization } },
      );
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ result: 'success', user_id: user.id, api_key: expect.any(String) });
  }
  const wrong = await stack
    .anonymous()
    .post(
      '/api/v1/fetch_api_key',
      { username: 'stale-key@example.com', password: 'wrong' },
      { headers: { authorization: basic(user.deliveryEmail, 'a'.repeat(32)) } },
    );
  expectError(wrong, 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
});

test('a deactivated account may still read the server settings', async () => {
  const gone = await stack.createUser();
  await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
  expect((await gone.client.get('/api/v1/server_settings')).status).toBe(200);
});

test('other endpoints, public ones included, still refuse failing credentials', async () => {
  const authorization = basic(user.deliveryEmail, 'a'.repeat(32));
  expectError(
    await stack.anonymous().get('/api/v1/users/me', {}, { headers: { authorization } }),
    401,
    'UNAUTHORIZED',
    'Invalid API key',
  );
  expectError(
    await stack.anonymous().post('/api/v1/invites/multiuse/accept', { key: 'x' }, { headers: { authorization } }),
    401,
    'UNAUTHORIZED',
    'Invalid API key',
  );
});
