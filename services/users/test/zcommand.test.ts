// POST /zcommand: the web app's slash commands that flip one's display settings (/dark, /light,
// /fluid-width, /fixed-width) and /ping, with Zulip's answers; the change goes through the
// settings action, so it is stored and announced like PATCH /settings.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents } from '@teamchat/testing';

let stack: Stack;
let user: TestUser;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  user = await stack.createUser();
});
afterAll(() => stack.close());

const zcommand = (command: string) => user.client.post('/api/v1/zcommand', { command } as never);
const settings = async () =>
  (await registerEventQueue(user.client, { fetch_event_types: ['user_settings'] })).registration.user_settings;

test('/dark and /light change the color scheme, say so, and send user_settings events', async () => {
  const queue = await registerEventQueue(user.client, {
    client_capabilities: { user_settings_object: true },
    event_types: ['user_settings', 'update_display_settings'],
  });
  expect((await zcommand('/dark')).body).toEqual({
    result: 'success',
    msg: 'Changed to dark theme! To revert dark theme, type `/light`.',
  });
  expect((await settings()).color_scheme).toBe(2);
  expect((await zcommand('/dark')).body.msg).toBe('You are still in dark theme.');
  expect((await zcommand('/light')).body.msg).toBe('Changed to light theme! To revert light theme, type `/dark`.');
  expect((await zcommand('/light')).body.msg).toBe('You are still in light theme.');
  expect((await settings()).color_scheme).toBe(3);

  const events = await queue.next(2);
  expect(events.map(({ id: _id, ...event }) => event)).toEqual([
    { type: 'user_settings', op: 'update', property: 'color_scheme', value: 2 },
    { type: 'user_settings', op: 'update', property: 'color_scheme', value: 3 },
  ]);
  await settleEvents(stack);
  expect(await queue.drain()).toEqual([]);
});

test('/fluid-width and /fixed-width', async () => {
  expect((await zcommand('/fixed-width')).body.msg).toBe('You are still in fixed width mode.');
  expect((await zcommand('/fluid-width')).body.msg).toBe(
    'Changed to fluid-width mode! To revert fluid-width mode, type `/fixed-width`.',
  );
  expect((await settings()).fluid_layout_width).toBe(true);
  expect((await zcommand('/fluid-width')).body.msg).toBe('You are still in fluid width mode.');
  expect((await zcommand('/fixed-width')).body.msg).toBe(
    'Changed to fixed-width mode! To revert fixed-width mode, type `/fluid-width`.',
  );
  expect((await settings()).fluid_layout_width).toBe(false);
});

test('/ping, and what is not a zcommand', async () => {
  expect((await zcommand('/ping')).body).toEqual({ result: 'success', msg: '' });
  expectError(await zcommand('dark'), 400, 'BAD_REQUEST', 'There should be a leading slash in the zcommand.');
  expectError(await zcommand('/night'), 400, 'BAD_REQUEST', 'No such command: night');
  expectError(await zcommand('/constructor'), 400, 'BAD_REQUEST', 'No such command: constructor');
  expectError(
    await user.client.post('/api/v1/zcommand', {} as never),
    400,
    'REQUEST_VARIABLE_MISSING',
    "Missing 'command' argument",
  );
});
