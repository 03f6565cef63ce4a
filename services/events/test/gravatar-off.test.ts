// A server with ENABLE_GRAVATAR off (Zulip's setting: a server on a closed network) points every
// avatar and icon nobody uploaded at its own default avatar, and ignores client_gravatar (the
// client could only compute Gravatar's URLs): register, GET /users, GET /messages and message
// events alike.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, WEB_APP_REGISTER_PARAMS } from '@teamchat/testing';

const DEFAULT_AVATAR = '/static/images/default-avatar.png';

let stack: Stack;
let owner: TestUser;
let member: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels', 'events'], env: { ENABLE_GRAVATAR: 'false' } });
  owner = await stack.createUser({ fullName: 'Own Er' });
  member = await stack.createUser({ fullName: 'Mem Ber' });
});
afterAll(() => stack.close());

const noGravatar = (body: unknown) => expect(JSON.stringify(body)).not.toContain('gravatar.com');

test("register under the web app's arguments: the default avatar for every user, and as the icon", async () => {
  const { body } = await owner.client.post('/api/v1/register', WEB_APP_REGISTER_PARAMS);
  const avatars = (body.realm_users as { user_id: number; avatar_url: string | null }[]).map((user) => [
    user.user_id,
    user.avatar_url,
  ]);
  expect(avatars).toEqual(
    expect.arrayContaining([
      [owner.id, `${DEFAULT_AVATAR}?version=1`],
      [member.id, `${DEFAULT_AVATAR}?version=1`],
    ]),
  );
  expect(body).toMatchObject({
    avatar_url: `${DEFAULT_AVATAR}?version=1`,
    avatar_url_medium: `${DEFAULT_AVATAR}?version=1`,
    realm_icon_url: `${DEFAULT_AVATAR}?version=0`,
  });
  noGravatar(body);
});

test('GET /users, GET /messages and message events with client_gravatar', async () => {
  const users = await member.client.get('/api/v1/users', { client_gravatar: true });
  expect(
    users.body.members.every((user: { avatar_url: unknown }) => user.avatar_url === `${DEFAULT_AVATAR}?version=1`),
  ).toBe(true);
  const queue = await registerEventQueue(member.client, { event_types: ['message'], client_gravatar: true });
  await owner.client.post('/api/v1/messages', { type: 'private', to: [member.id], content: 'hello' });
  const [event] = await queue.next(1);
  expect(event.message.avatar_url).toBe(`${DEFAULT_AVATAR}?version=1`);
  const messages = await member.client.get('/api/v1/messages', {
    anchor: 'newest',
    num_before: 5,
    num_after: 0,
    client_gravatar: true,
  });
  expect(messages.body.messages.map((message: { avatar_url: unknown }) => message.avatar_url)).toEqual([
    `${DEFAULT_AVATAR}?version=1`,
  ]);
  noGravatar([users.body, event, messages.body]);
});
