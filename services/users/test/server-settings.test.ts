import { ZULIP_FEATURE_LEVEL, ZULIP_VERSION } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

test('GET /server_settings needs no credentials and describes the server and realm', async () => {
  const response = await stack.anonymous().get('/api/v1/server_settings');
  expect(response.status).toBe(200);
  expect(response.body).toMatchObject({
    result: 'success',
    zulip_version: ZULIP_VERSION,
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_merge_base: expect.any(String),
    push_notifications_enabled: false,
    is_incompatible: false,
    email_auth_enabled: true,
    require_email_format_usernames: true,
    realm_url: stack.gatewayUrl,
    realm_uri: stack.gatewayUrl,
    realm_name: 'Test Organization',
    realm_web_public_access_enabled: false,
    authentication_methods: expect.objectContaining({ password: true, email: true, dev: false }),
    external_authentication_methods: [],
  });
});

test('the realm is the one the Host header names', async () => {
  await stack.createRealm('second', 'second.example.test', 'Second Org');
  const response = await stack.anonymous().withHost('second.example.test').get('/api/v1/server_settings');
  expect(response.body).toMatchObject({ realm_name: 'Second Org', realm_url: 'http://second.example.test' });
});

test('credentials are accepted but not needed', async () => {
  const user = await stack.createUser();
  const response = await user.client.get('/api/v1/server_settings');
  expect(response.status).toBe(200);
});

test('realm_web_public_access_enabled: spectator access on and a web-public channel to read', async () => {
  const realm = await stack.createRealm('open', 'open.example.test', 'Open Org');
  const settings = () => stack.anonymous().withHost(realm.host).get('/api/v1/server_settings');
  await stack.db.realm.update({ where: { id: realm.id }, data: { enable_spectator_access: true } });
  await stack.fixtureWritten(realm.id);
  expect((await settings()).body.realm_web_public_access_enabled).toBe(false);
  await stack.createStream({ name: 'news', realm, isWebPublic: true });
  expect((await settings()).body.realm_web_public_access_enabled).toBe(true);
});
