import { expectError, startStack, type Stack } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

test('right password: a new working API key, and earlier keys keep working', async () => {
  const user = await stack.createUser({ email: 'hamlet@example.com', password: 'correct horse' });
  const response = await stack.anonymous().post('/api/v1/fetch_api_key', { username: 'Hamlet@Example.com', password: 'correct horse' });
  expect(response.status).toBe(200);
  expect(response.body).toEqual({ result: 'success', msg: '', api_key: expect.stringMatching(/^[A-Za-z0-9]{32}$/), email: 'hamlet@example.com', user_id: user.id });
  const fresh = stack.client({ email: 'hamlet@example.com', apiKey: response.body.api_key });
  expect((await fresh.get('/api/v1/users/me')).body.user_id).toBe(user.id);
  expect((await user.client.get('/api/v1/users/me')).status).toBe(200);
  // Only the hash of a key is stored.
  const keys = await stack.db.apiKey.findMany({ where: { user_profile_id: user.id } });
  expect(keys).toHaveLength(2);
  for (const key of keys) expect(key.key_hash).not.toContain(response.body.api_key);
});

test('wrong password: 401 AUTHENTICATION_FAILED', async () => {
  await stack.createUser({ email: 'ophelia@example.com', password: 'right' });
  const response = await stack.anonymous().post('/api/v1/fetch_api_key', { username: 'ophelia@example.com', password: 'wrong' });
  expectError(response, 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
});

test('unknown user and user without password are refused alike', async () => {
  await stack.createUser({ email: 'nopass@example.com' });
  for (const username of ['nobody@example.com', 'nopass@example.com']) {
    const response = await stack.anonymous().post('/api/v1/fetch_api_key', { username, password: 'x' });
    expectError(response, 401, 'AUTHENTICATION_FAILED', 'Your username or password is incorrect');
  }
});

test('deactivated user: USER_DEACTIVATED', async () => {
  const user = await stack.createUser({ email: 'gone@example.com', password: 'pw' });
  await stack.db.userProfile.update({ where: { id: user.id }, data: { is_active: false } });
  const response = await stack.anonymous().post('/api/v1/fetch_api_key', { username: 'gone@example.com', password: 'pw' });
  expectError(response, 401, 'USER_DEACTIVATED', 'Account is deactivated');
});

test('missing arguments use Zulip wording', async () => {
  const response = await stack.anonymous().post('/api/v1/fetch_api_key', { username: 'x@example.com' });
  expectError(response, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'password' argument");
  expect(response.body.var_name).toBe('password');
});
