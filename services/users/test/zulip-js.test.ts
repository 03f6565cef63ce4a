// A real client, zulip-js, doing the users service's operations through the gateway, and a new
// person joining through a reusable invitation link and then using zulip-js with their key.
// zulip-js sends POST bodies as multipart (JSON-encoding only arrays) and every other
// method's parameters in the query string.
import { Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { createCast, type Cast } from './helpers';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zulip = require('zulip-js') as (config: { username: string; apiKey: string; realm: string }) => Promise<ZulipJs>;

type Answer = Record<string, any>;
interface ZulipJs {
  callEndpoint(endpoint: string, method?: string, params?: Record<string, unknown>): Promise<Answer>;
  users: { retrieve(params?: Record<string, unknown>): Promise<Answer>; me: { getProfile(): Promise<Answer> } };
  filters: { retrieve(): Promise<Answer> };
}

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const connect = (email: string, apiKey: string) => zulip({ username: email, apiKey, realm: stack.gatewayUrl });

test('users, groups, navigation views, linkifiers and push tokens through zulip-js', async () => {
  const owner = await connect(cast.owner.deliveryEmail, cast.owner.apiKey);
  expect(await owner.users.me.getProfile()).toMatchObject({
    result: 'success',
    user_id: cast.owner.id,
    role: Role.OWNER,
  });
  const everyone = await owner.users.retrieve({ client_gravatar: true });
  expect(everyone.members.map((m: { user_id: number }) => m.user_id)).toEqual(
    expect.arrayContaining([cast.member.id, cast.bot.id]),
  );
  expect((await owner.callEndpoint(`/users/${cast.member.deliveryEmail}`)).user.user_id).toBe(cast.member.id);
  expect(
    (await owner.callEndpoint(`/users/${cast.member.id}`, 'PATCH', { full_name: 'Member via zulip-js' })).result,
  ).toBe('success');

  const created = await owner.callEndpoint('/user_groups/create', 'POST', {
    name: 'js team',
    description: 'made by zulip-js',
    members: [cast.member.id],
  });
  expect(created.result).toBe('success');
  const groupId = created.group_id as number;
  expect(
    (
      await owner.callEndpoint(`/user_groups/${groupId}/members`, 'POST', {
        add: [cast.admin.id],
        delete: [cast.member.id],
      })
    ).result,
  ).toBe('success');
  expect(
    (await owner.callEndpoint(`/user_groups/${groupId}`, 'PATCH', { description: 'renamed by zulip-js' })).result,
  ).toBe('success');
  const groups = await owner.callEndpoint('/user_groups');
  expect(groups.user_groups.find((g: { id: number }) => g.id === groupId)).toMatchObject({
    members: [cast.admin.id],
    description: 'renamed by zulip-js',
  });
  expect((await owner.callEndpoint(`/user_groups/${groupId}/deactivate`, 'POST')).result).toBe('success');

  // zulip-js's multipart encoder takes only strings and arrays: booleans go as JSON text.
  expect(
    (await owner.callEndpoint('/navigation_views', 'POST', { fragment: 'narrow/is/starred', is_pinned: 'true' }))
      .result,
  ).toBe('success');
  expect(
    (await owner.callEndpoint('/navigation_views/narrow%2Fis%2Fstarred', 'PATCH', { is_pinned: false })).result,
  ).toBe('success');
  expect((await owner.callEndpoint('/navigation_views')).navigation_views).toEqual([
    { fragment: 'narrow/is/starred', is_pinned: false, name: null },
  ]);
  expect((await owner.callEndpoint('/navigation_views/narrow%2Fis%2Fstarred', 'DELETE')).result).toBe('success');

  const linkifier = await owner.callEndpoint('/realm/filters', 'POST', {
    pattern: '#(?P<id>[0-9]+)',
    url_template: 'https://github.com/zulip/zulip/issues/{id}',
  });
  expect(linkifier.result).toBe('success');
  expect((await owner.filters.retrieve()).filters).toEqual([
    ['#(?P<id>[0-9]+)', 'https://github.com/zulip/zulip/issues/{id}', linkifier.id],
  ]);
  expect(
    (
      await owner.callEndpoint(`/realm/filters/${linkifier.id}`, 'PATCH', {
        pattern: 'GH-(?P<id>[0-9]+)',
        url_template: 'https://github.com/zulip/zulip/pull/{id}',
      })
    ).result,
  ).toBe('success');
  expect((await owner.callEndpoint('/realm/linkifiers')).linkifiers[0]).toMatchObject({ pattern: 'GH-(?P<id>[0-9]+)' });
  expect((await owner.callEndpoint(`/realm/filters/${linkifier.id}`, 'DELETE')).result).toBe('success');

  expect((await owner.callEndpoint('/users/me/android_gcm_reg_id', 'POST', { token: 'zulip-js-device' })).result).toBe(
    'success',
  );
  expect(
    (await owner.callEndpoint('/users/me/mobile_push_reg_id', 'DELETE', { token: 'zulip-js-device' })).result,
  ).toBe('success');
  const missing = await owner.callEndpoint('/users/me/mobile_push_reg_id', 'DELETE', { token: 'zulip-js-device' });
  expect(missing).toMatchObject({ result: 'error', code: 'BAD_REQUEST', msg: 'Token does not exist' });

  expect(
    (await owner.callEndpoint('/users/me/presence', 'POST', { status: 'active', slim_presence: 'true' })).presences,
  ).toHaveProperty(String(cast.owner.id));
});

test('a reusable invitation link made with zulip-js signs a new person up; they use zulip-js, then leave', async () => {
  const admin = await connect(cast.admin.deliveryEmail, cast.admin.apiKey);
  const channel = await stack.createStream({ name: 'zulip-js welcome' });
  const made = await admin.callEndpoint('/invites/multiuse', 'POST', {
    invite_as: String(Role.MEMBER),
    stream_ids: [channel.id],
    invite_expires_in_minutes: '60',
  });
  expect(made.result).toBe('success');
  const link = made.invite_link as string;
  expect((await admin.callEndpoint('/invites')).invites.map((i: { link_url: string }) => i.link_url)).toContain(link);

  // The new person opens the link and submits the form (as a script would).
  const form = new URLSearchParams({
    email: 'js-newcomer@example.com',
    full_name: 'JS Newcomer',
    password: 'zulip-js password',
  });
  const joined = (await (
    await fetch(link, { method: 'POST', body: form, headers: { accept: 'application/json' } })
  ).json()) as Answer;
  expect(joined).toMatchObject({ result: 'success', email: 'js-newcomer@example.com' });

  const newcomer = await connect('js-newcomer@example.com', joined.api_key);
  expect(await newcomer.users.me.getProfile()).toMatchObject({
    result: 'success',
    user_id: joined.user_id,
    full_name: 'JS Newcomer',
    role: Role.MEMBER,
  });
  const subscriptions = await newcomer.callEndpoint('/users/me/subscriptions');
  expect(subscriptions.subscriptions.map((s: { name: string }) => s.name)).toEqual(['zulip-js welcome']);

  expect((await newcomer.callEndpoint('/users/me', 'DELETE')).result).toBe('success');
  expect((await newcomer.users.me.getProfile()).code).toBe('USER_DEACTIVATED');

  const revoked = await admin.callEndpoint(
    `/invites/multiuse/${(await admin.callEndpoint('/invites')).invites.find((i: { link_url: string }) => i.link_url === link).id}`,
    'DELETE',
  );
  expect(revoked.result).toBe('success');
  const late = (await (
    await fetch(link, {
      method: 'POST',
      body: new URLSearchParams({ email: 'late-js@example.com', full_name: 'Late JS', password: 'late password' }),
    })
  ).json()) as Answer;
  expect(late).toMatchObject({ result: 'error', msg: 'The confirmation link has expired or been deactivated.' });
});
