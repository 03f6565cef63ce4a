// The users service bounds one request's work: the users and groups one user-group request
// names, and the alert words one request adds or removes, are bounded before any is looked up
// (100,000 member ids answered 500 after 2.7 s, a million after 26 s; 100,000 alert words took
// 3.4 s to add), and so is the body (at 10 MiB, refusing a million ids took 1.6 s).
import { BODY_LIMITS, LIST_LIMITS } from '@teamchat/core';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, type ApiResponse } from '@teamchat/testing';

let stack: Stack;
let owner: TestUser;
let groupId: number;

beforeAll(async () => {
  stack = await startStack({ services: ['users'] });
  owner = await stack.createUser({ fullName: 'Olivia Owner', role: Role.OWNER });
  const created = await owner.client.post('/api/v1/user_groups/create', {
    name: 'hardening',
    description: 'd',
    members: [owner.id],
  });
  groupId = created.body.group_id;
});
afterAll(() => stack.close());

const ids = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
const refused = (response: ApiResponse, msg: string) => expectError(response, 400, 'BAD_REQUEST', msg);
const tooLong = (name: string) => `${name} is too long (limit: ${LIST_LIMITS.groupMembersPerRequest} items)`;

describe('huge member lists of user groups', () => {
  test('adding 100,000 users is refused at once, changing nothing', async () => {
    const members = `/api/v1/user_groups/${groupId}/members`;
    refused(await owner.client.post(members, { add: ids(100_000) }), tooLong('add'));
    const { body } = await owner.client.get(members);
    expect(body.members).toEqual([owner.id]);
  });

  test('every list of the membership and creation endpoints is bounded', async () => {
    const over = ids(LIST_LIMITS.groupMembersPerRequest + 1);
    const members = `/api/v1/user_groups/${groupId}/members`;
    for (const name of ['add', 'delete', 'add_subgroups', 'delete_subgroups']) {
      refused(await owner.client.post(members, { [name]: over }), tooLong(name));
    }
    for (const name of ['add', 'delete']) {
      refused(await owner.client.post(`/api/v1/user_groups/${groupId}/subgroups`, { [name]: over }), tooLong(name));
    }
    const before = await stack.db.userGroup.count();
    const create = (extra: Record<string, unknown>) =>
      owner.client.post('/api/v1/user_groups/create', { name: 'huge', description: 'd', members: [], ...extra });
    refused(await create({ members: over }), tooLong('members'));
    refused(await create({ subgroups: over }), tooLong('subgroups'));
    const setting = await create({ can_manage_group: { direct_members: over, direct_subgroups: [] } });
    // Refused by the parser, before any lookup (a union reports its first alternative's refusal).
    refused(setting, 'can_manage_group is not an integer');
    expect(await stack.db.userGroup.count()).toBe(before);
  });

  test('a list at the bound is checked item by item, not refused by its length', async () => {
    const atBound = ids(LIST_LIMITS.groupMembersPerRequest);
    const response = await owner.client.post(`/api/v1/user_groups/${groupId}/members`, { delete: atBound });
    expect(response.status).toBe(400);
    expect(response.body.msg).toMatch(/^Invalid user ID: \d+$/);
  });
});

describe('alert words one request names', () => {
  test('1,001 words are refused at once, adding nothing; 1,000 are taken', async () => {
    const words = (count: number) => Array.from({ length: count }, (_, i) => `w${i}`);
    const path = '/api/v1/users/me/alert_words';
    const limit = LIST_LIMITS.alertWordsPerRequest;
    const tooMany = `alert_words is too long (limit: ${limit} items)`;
    refused(await owner.client.post(path, { alert_words: words(limit + 1) }), tooMany);
    expect((await owner.client.get(path)).body.alert_words).toEqual([]);
    refused(await owner.client.delete(path, { alert_words: words(limit + 1) }), tooMany);
    const added = await owner.client.post(path, { alert_words: words(limit) });
    expect(added.status).toBe(200);
    expect(added.body.alert_words).toHaveLength(limit);
  });
});

describe('request bodies of the users service', () => {
  test('a list of a million ids is refused by its size, unread', async () => {
    const response = await owner.client.patch('/api/v1/realm/linkifiers', { ordered_linkifier_ids: ids(1_000_000) });
    expectError(response, 413, 'BAD_REQUEST', 'Request body too large');
    const padded = await owner.client.patch('/api/v1/settings', {
      full_name: 'x',
      pad: 'x'.repeat(BODY_LIMITS.default),
    });
    expectError(padded, 413, 'BAD_REQUEST', 'Request body too large');
  });
});
