// User statuses: POST /users/me/status, GET /users/{user_id}/status, user_status events and
// register's user_status section; `away` is the inverse of presence_enabled.
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue } from '@teamchat/testing';
import { activeIds } from './helpers';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
});
afterAll(() => stack.close());

test('setting text and emoji (by name only): stored, announced to the realm, readable and registered', async () => {
  const user = await stack.createUser();
  const other = await stack.createUser();
  const captured = await captureEvents(stack, async () => {
    const response = await user.client.post('/api/v1/users/me/status', {
      status_text: '  on vacation  ',
      emoji_name: 'car',
    });
    expect(response.body).toEqual({ result: 'success', msg: '' });
  });
  const [event] = ofType(captured, 'user_status');
  expect(event.event).toEqual({
    type: 'user_status',
    user_id: user.id,
    status_text: 'on vacation',
    emoji_name: 'car',
    emoji_code: '1f697',
    reaction_type: 'unicode_emoji',
  });
  expect(event.recipientIds).toEqual(await activeIds(stack));

  const expected = {
    status_text: 'on vacation',
    emoji_name: 'car',
    emoji_code: '1f697',
    reaction_type: 'unicode_emoji',
  };
  expect((await other.client.get(`/api/v1/users/${user.id}/status`)).body).toEqual({
    result: 'success',
    msg: '',
    status: expected,
  });
  const state = (await registerEventQueue(other.client, { fetch_event_types: ['user_status'] })).registration;
  expect(state.user_status[String(user.id)]).toEqual(expected);
  expect(state.user_status[String(other.id)]).toBeUndefined();
  expect(await stack.db.userStatus.findUnique({ where: { user_profile_id: user.id } })).toMatchObject({
    status_text: 'on vacation',
    emoji_code: '1f697',
  });
});

test('only what is passed changes; "" clears text or emoji; a cleared status leaves register', async () => {
  const user = await stack.createUser();
  await user.client.post('/api/v1/users/me/status', {
    status_text: 'busy',
    emoji_name: 'zulip',
    emoji_code: 'zulip',
    reaction_type: 'zulip_extra_emoji',
  });
  const captured = await captureEvents(stack, async () => {
    await user.client.post('/api/v1/users/me/status', { status_text: 'in a meeting' });
  });
  expect(ofType(captured, 'user_status')[0].event).toEqual({
    type: 'user_status',
    user_id: user.id,
    status_text: 'in a meeting',
  });
  expect((await user.client.get(`/api/v1/users/${user.id}/status`)).body.status).toEqual({
    status_text: 'in a meeting',
    emoji_name: 'zulip',
    emoji_code: 'zulip',
    reaction_type: 'zulip_extra_emoji',
  });

  const cleared = await captureEvents(stack, async () => {
    await user.client.post('/api/v1/users/me/status', { emoji_name: '', emoji_code: 'ignored' });
  });
  expect(ofType(cleared, 'user_status')[0].event).toEqual({
    type: 'user_status',
    user_id: user.id,
    emoji_name: '',
    emoji_code: '',
    reaction_type: 'unicode_emoji',
  });
  await user.client.post('/api/v1/users/me/status', { status_text: '' });
  expect((await user.client.get(`/api/v1/users/${user.id}/status`)).body.status).toEqual({});
  const state = (await registerEventQueue(user.client, { fetch_event_types: ['user_status'] })).registration;
  expect(state.user_status[String(user.id)]).toBeUndefined();
});

test('away is the inverse of presence_enabled: the setting changes, and statuses show it', async () => {
  const user = await stack.createUser();
  const captured = await captureEvents(stack, async () => {
    expect((await user.client.post('/api/v1/users/me/status', { away: true })).status).toBe(200);
  });
  expect(ofType(captured, 'user_settings')[0].event).toEqual({
    type: 'user_settings',
    op: 'update',
    property: 'presence_enabled',
    value: false,
  });
  expect(ofType(captured, 'user_status')[0].event).toEqual({ type: 'user_status', user_id: user.id, away: true });
  const profile = await stack.db.userProfile.findUniqueOrThrow({ where: { id: user.id } });
  expect((profile.settings as Record<string, unknown>).presence_enabled).toBe(false);
  expect((await user.client.get(`/api/v1/users/${user.id}/status`)).body.status).toEqual({ away: true });
  const state = (await registerEventQueue(user.client, { fetch_event_types: ['user_status'] })).registration;
  expect(state.user_status[String(user.id)]).toEqual({ away: true });

  await user.client.post('/api/v1/users/me/status', { away: false });
  expect((await user.client.get(`/api/v1/users/${user.id}/status`)).body.status).toEqual({});
});

test.each([
  [{}, 'Client did not pass any new values.'],
  [
    { status_text: 'x', emoji_code: '1f4bb' },
    'Client must pass emoji_name if they pass either emoji_code or reaction_type.',
  ],
  [{ emoji_name: 'invalid' }, "Emoji 'invalid' does not exist"],
  [{ emoji_name: 'car', emoji_code: '1f4bb', reaction_type: 'realm_emoji' }, 'Invalid custom emoji.'],
  [{ emoji_name: 'car', emoji_code: 'xyz', reaction_type: 'unicode_emoji' }, 'Invalid emoji code.'],
  [{ emoji_name: 'car', emoji_code: '1f697', reaction_type: 'other' }, 'Invalid emoji type.'],
  [{ status_text: 'x'.repeat(61) }, 'status_text is too long (limit: 60 characters)'],
  [{ away: 'yes' }, 'away is not valid JSON'],
])('%j is refused: %s', async (params, message) => {
  const user = await stack.createUser();
  expectError(await user.client.post('/api/v1/users/me/status', params), 400, 'BAD_REQUEST', message);
});

test('60 characters after stripping are fine; bots may not set a status', async () => {
  const user = await stack.createUser();
  expect((await user.client.post('/api/v1/users/me/status', { status_text: ` ${'y'.repeat(60)} ` })).status).toBe(200);
  const bot = await stack.createUser({ botType: 1, botOwnerId: user.id });
  expectError(
    await bot.client.post('/api/v1/users/me/status', { status_text: 'beep' }),
    400,
    'BAD_REQUEST',
    'This endpoint does not accept bot requests.',
  );
});

test('GET /users/{user_id}/status: unknown users and bots are "No such user"; deactivated users refused', async () => {
  const user = await stack.createUser();
  const bot = await stack.createUser({ botType: 1, botOwnerId: user.id });
  const gone = await stack.createUser();
  await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
  expectError(await user.client.get(`/api/v1/users/${gone.id}/status`), 400, 'BAD_REQUEST', 'User is deactivated');
  expectError(await user.client.get('/api/v1/users/999999/status'), 400, 'BAD_REQUEST', 'No such user');
  expectError(await user.client.get(`/api/v1/users/${bot.id}/status`), 400, 'BAD_REQUEST', 'No such user');
  expect((await user.client.get(`/api/v1/users/${user.id}/status`)).body.status).toEqual({});
});
