// Register's realm-wide parts (realm_users, realm_non_active_users, realm_user_groups, the realm's
// group settings, custom profile fields, linkifiers, playgrounds, channel folders...) come from
// the event tier's realm state cache, built once per realm state version: every change they show
// must reach the next register, through every way it is made.
import { EmailVisibility, Role } from '@teamchat/domain';
import { RealmStateCache } from '@teamchat/state';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';

let stack: Stack;
let admin: TestUser;
let member: TestUser;
beforeAll(async () => {
  stack = await startStack({ services: ['events', 'channels'] });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
  member = await stack.createUser();
});
afterAll(() => stack.close());

interface ApiUserShape {
  user_id: number;
  full_name: string;
  role: number;
  delivery_email: string | null;
  profile_data?: Record<string, { value: string }>;
}
interface GroupShape {
  id: number;
  name: string;
  members: number[];
  direct_subgroup_ids: number[];
}

async function register(viewer: TestUser, params: Record<string, unknown> = {}) {
  const { status, body } = await viewer.client.post('/api/v1/register', {
    fetch_event_types: ['realm_user', 'realm_user_groups'],
    ...params,
  });
  expect(status).toBe(200);
  const users = new Map<number, ApiUserShape>(body.realm_users.map((u: ApiUserShape) => [u.user_id, u]));
  const inactive = new Map<number, ApiUserShape>(body.realm_non_active_users.map((u: ApiUserShape) => [u.user_id, u]));
  const groups = new Map<string, GroupShape>(body.realm_user_groups.map((g: GroupShape) => [g.name, g]));
  return { users, inactive, groups };
}

test('the cache is in effect: a change made without the triggers is not seen, the next real change is', async () => {
  const target = await stack.createUser({ fullName: 'Before' });
  expect((await register(member)).users.get(target.id)?.full_name).toBe('Before');
  await stack.db.$transaction(async (tx) => {
    await tx.$executeRawUnsafe('SET LOCAL session_replication_role = replica'); // no triggers
    await tx.$executeRaw`UPDATE user_profile SET full_name = 'Behind the cache' WHERE id = ${target.id}`;
  });
  expect((await register(member)).users.get(target.id)?.full_name).toBe('Before');
  expect((await target.client.patch('/api/v1/settings', { full_name: 'After' })).status).toBe(200);
  expect((await register(member)).users.get(target.id)?.full_name).toBe('After');
});

test('names, roles, deactivation and new accounts reach the next register', async () => {
  const target = await stack.createUser({ fullName: 'Renamed soon' });
  await register(member);
  await target.client.patch('/api/v1/settings', { full_name: 'Renamed' });
  expect((await register(member)).users.get(target.id)).toMatchObject({ full_name: 'Renamed', role: Role.MEMBER });

  expect((await admin.client.patch(`/api/v1/users/${target.id}`, { role: Role.MODERATOR })).status).toBe(200);
  expect((await register(member)).users.get(target.id)?.role).toBe(Role.MODERATOR);

  expect((await admin.client.delete(`/api/v1/users/${target.id}`)).status).toBe(200);
  let state = await register(member);
  expect(state.users.has(target.id)).toBe(false);
  expect(state.inactive.has(target.id)).toBe(true);
  expect((await admin.client.post(`/api/v1/users/${target.id}/reactivate`)).status).toBe(200);
  state = await register(member);
  expect(state.users.has(target.id)).toBe(true);
  expect(state.inactive.has(target.id)).toBe(false);

  const newcomer = await stack.createUser();
  expect((await register(member)).users.has(newcomer.id)).toBe(true);
});

test('custom profile field values reach the next register', async () => {
  const created = await admin.client.post('/api/v1/realm/profile_fields', { name: 'Team', field_type: 1 });
  expect(created.status).toBe(200);
  const fieldId = created.body.id as number;
  await register(admin);
  const set = await member.client.patch('/api/v1/users/me/profile_data', {
    data: JSON.stringify([{ id: fieldId, value: 'Platform' }]),
  });
  expect(set.status).toBe(200);
  expect((await register(admin)).users.get(member.id)?.profile_data?.[String(fieldId)]?.value).toBe('Platform');
});

test('what one email-visibility class may see is not served to another; everyone sees their own address', async () => {
  const discreet = await stack.createUser({ emailAddressVisibility: EmailVisibility.ADMINS });
  // Both classes build their own list; each register reads its own, in either order.
  for (let round = 0; round < 2; round++) {
    expect((await register(admin)).users.get(discreet.id)?.delivery_email).toBe(discreet.deliveryEmail);
    expect((await register(member)).users.get(discreet.id)?.delivery_email).toBeNull();
    expect((await register(discreet)).users.get(discreet.id)?.delivery_email).toBe(discreet.deliveryEmail);
    // And the viewer's own address is not left in the list others get.
    expect((await register(member)).users.get(discreet.id)?.delivery_email).toBeNull();
  }
});

test('client_gravatar lists are kept apart', async () => {
  const withUrls = await register(member, { client_gravatar: false });
  const computed = await register(member, { client_gravatar: true });
  expect(typeof (withUrls.users.get(admin.id) as unknown as { avatar_url: unknown }).avatar_url).toBe('string');
  expect((computed.users.get(admin.id) as unknown as { avatar_url: unknown }).avatar_url).toBeNull();
});

test('groups, their members, subgroups and names reach the next register', async () => {
  const created = await admin.client.post('/api/v1/user_groups/create', {
    name: 'cache-watchers',
    description: 'watching',
    members: JSON.stringify([admin.id]),
  });
  expect(created.status).toBe(200);
  const groupId = created.body.group_id as number;
  expect((await register(member)).groups.get('cache-watchers')?.members).toEqual([admin.id]);

  await admin.client.post(`/api/v1/user_groups/${groupId}/members`, { add: JSON.stringify([member.id]) });
  expect((await register(member)).groups.get('cache-watchers')?.members).toEqual([admin.id, member.id].sort());

  const sub = await admin.client.post('/api/v1/user_groups/create', {
    name: 'cache-subgroup',
    description: '',
    members: JSON.stringify([]),
  });
  await admin.client.post(`/api/v1/user_groups/${groupId}/subgroups`, { add: JSON.stringify([sub.body.group_id]) });
  expect((await register(member)).groups.get('cache-watchers')?.direct_subgroup_ids).toEqual([sub.body.group_id]);

  await admin.client.patch(`/api/v1/user_groups/${groupId}`, { name: 'cache-renamed' });
  const state = await register(member);
  expect(state.groups.has('cache-watchers')).toBe(false);
  expect(state.groups.get('cache-renamed')?.id).toBe(groupId);

  // A deactivated member leaves every group's member list.
  const leaving = await stack.createUser();
  await admin.client.post(`/api/v1/user_groups/${groupId}/members`, { add: JSON.stringify([leaving.id]) });
  expect((await register(member)).groups.get('cache-renamed')?.members).toContain(leaving.id);
  await admin.client.delete(`/api/v1/users/${leaving.id}`);
  expect((await register(member)).groups.get('cache-renamed')?.members).not.toContain(leaving.id);
});

test('realm-wide settings, profile fields, linkifiers, playgrounds and channel folders reach the next register', async () => {
  const state = async () =>
    (
      await member.client.post('/api/v1/register', {
        fetch_event_types: [
          'realm',
          'custom_profile_fields',
          'realm_linkifiers',
          'realm_playgrounds',
          'channel_folder',
        ],
        // (Without it register gives no linkifiers: the client could not render URL templates.)
        client_capabilities: { linkifier_url_template: true },
      })
    ).body;
  const ids = (list: { id: number }[]) => list.map((item) => item.id);
  // One change at a time, each after a register that filled the cache: every kind must move the version itself.
  await state();
  const field = await admin.client.post('/api/v1/realm/profile_fields', { name: 'Desk', field_type: 1 });
  expect(ids((await state()).custom_profile_fields)).toContain(field.body.id);

  const linkifier = await admin.client.post('/api/v1/realm/filters', {
    pattern: '#(?P<id>[0-9]+)',
    url_template: 'https://tracker.example.com/{id}',
  });
  expect(ids((await state()).realm_linkifiers)).toContain(linkifier.body.id);

  const playground = await admin.client.post('/api/v1/realm/playgrounds', {
    name: 'Rust playground',
    pygments_language: 'rust',
    url_template: 'https://play.example.com/?code={code}',
  });
  expect(ids((await state()).realm_playgrounds)).toContain(playground.body.id);

  const folder = await admin.client.post('/api/v1/channel_folders/create', { name: 'Cached', description: '' });
  expect(ids((await state()).channel_folders)).toContain(folder.body.channel_folder_id);

  const admins = await stack.db.userGroup.findFirstOrThrow({
    where: { realm_id: stack.realm.id, name: 'role:administrators' },
  });
  expect((await state()).realm_can_create_public_channel_group).not.toBe(admins.id);
  await stack.db.groupSetting.updateMany({
    where: { owner_kind: 'realm', owner_id: stack.realm.id, name: 'can_create_public_channel_group' },
    data: { group_id: admins.id },
  });
  await stack.fixtureWritten();
  expect((await state()).realm_can_create_public_channel_group).toBe(admins.id);
});

test('a guest restricted to their conversations is never served the realm-wide list', async () => {
  const realm = await stack.createRealm('dircache', 'dircache.example.test');
  const [membersGroup] = await stack.db.userGroup.findMany({ where: { realm_id: realm.id, name: 'role:members' } });
  await stack.db.groupSetting.updateMany({
    where: { owner_kind: 'realm', owner_id: realm.id, name: 'can_access_all_users_group' },
    data: { group_id: membersGroup.id },
  });
  const insider = await stack.createUser({ realm, email: 'insider@dircache.test' });
  const stranger = await stack.createUser({ realm, email: 'stranger@dircache.test', fullName: 'Stranger' });
  const guest = await stack.createUser({ realm, email: 'guest@dircache.test', role: Role.GUEST });
  expect((await register(insider)).users.get(stranger.id)?.full_name).toBe('Stranger');
  expect((await register(guest)).users.get(stranger.id)?.full_name).toBe('Unknown user');
  expect((await register(insider)).users.get(stranger.id)?.full_name).toBe('Stranger');
});

describe('RealmStateCache', () => {
  test('serves an entry only at its version, and drops the least recently used beyond its budget', () => {
    const cache = new RealmStateCache(100);
    cache.set('1:a', 7n, 'seven', 40);
    expect(cache.get('1:a', 7n)).toBe('seven');
    expect(cache.get('1:a', 8n)).toBeUndefined();
    cache.set('1:b', 3n, 'b', 40);
    cache.get('1:a', 7n); // a is now the most recently used
    cache.set('1:c', 3n, 'c', 40);
    expect(cache.get('1:b', 3n)).toBeUndefined();
    expect(cache.get('1:a', 7n)).toBe('seven');
    expect(cache.get('1:c', 3n)).toBe('c');
    cache.set('1:a', 9n, 'nine', 40);
    expect(cache.get('1:a', 7n)).toBeUndefined();
    expect(cache.get('1:a', 9n)).toBe('nine');
    cache.set('1:huge', 1n, 'too big', 101);
    expect(cache.get('1:huge', 1n)).toBeUndefined();
    expect(cache.size).toBe(2);
  });
});
