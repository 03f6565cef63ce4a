// The channels service: a subscribe request's work is bounded
// (it used to create 5,000 channels in one transaction until the 30 s timeout answered 500),
// and malformed values are refused with a 4xx before they reach PostgreSQL.
import { LIST_LIMITS } from '@teamchat/core';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, type ApiResponse } from '@teamchat/testing';

let stack: Stack;
let owner: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  owner = await stack.createUser({ fullName: 'Olivia Owner', role: Role.OWNER });
});
afterAll(() => stack.close());

const subscribe = (params: Record<string, unknown>) =>
  owner.client.post('/api/v1/users/me/subscriptions', params as never);
const channelCount = () => stack.db.stream.count();
const named = (count: number, prefix: string) => Array.from({ length: count }, (_, i) => ({ name: `${prefix} ${i}` }));
const refused = (response: ApiResponse, msg: string) => expectError(response, 400, 'BAD_REQUEST', msg);

describe('subscribing to 5,000 new channel names', () => {
  test('is refused at once, creating nothing', async () => {
    const before = await channelCount();
    const response = await subscribe({ subscriptions: named(5000, 'new channel') });
    refused(response, 'subscriptions is too long (limit: 500 items)');
    expect(await channelCount()).toBe(before);
  });

  test('one request creates 20 channels at most', async () => {
    const before = await channelCount();
    const max = LIST_LIMITS.channelsCreatedPerRequest;
    const overLimit = await subscribe({ subscriptions: named(max + 1, 'batch') });
    refused(overLimit, 'Too many new channels requested (maximum 20).');
    expect(await channelCount()).toBe(before);
    expect((await subscribe({ subscriptions: named(max, 'batch') })).status).toBe(200);
    expect(await channelCount()).toBe(before + max);
    // Existing channels do not count as new ones.
    expect((await subscribe({ subscriptions: [...named(max, 'batch'), { name: 'batch extra' }] })).status).toBe(200);
  }, 120_000);

  test('the users and channels one request names are bounded', async () => {
    const users = Array.from({ length: LIST_LIMITS.principalsPerRequest + 1 }, (_, i) => i + 1);
    const subscribed = await subscribe({ subscriptions: [{ name: 'batch 0' }], principals: users });
    refused(subscribed, 'principals is too long (limit: 1000 items)');
    const names = named(LIST_LIMITS.channelsPerSubscriptionRequest + 1, 'batch').map((request) => request.name);
    const unsubscribed = await owner.client.delete('/api/v1/users/me/subscriptions', { subscriptions: names });
    refused(unsubscribed, 'subscriptions is too long (limit: 500 items)');
  });
});

describe('malformed values in channel requests', () => {
  test.each([2 ** 31, 2 ** 53])('ids past the id columns: %d', async (id) => {
    refused(await subscribe({ subscriptions: [{ name: 'batch 0' }], principals: [id] }), 'principals[0] is too large');
    const properties = await owner.client.post('/api/v1/users/me/subscriptions/properties', {
      subscription_data: [{ stream_id: id, property: 'pin_to_top', value: true }],
    });
    refused(properties, 'subscription_data[0]["stream_id"] is too large');
  });

  test("a group setting's direct members and subgroups are bounded", async () => {
    const over = Array.from({ length: LIST_LIMITS.groupMembersPerRequest + 1 }, (_, i) => i + 1);
    const before = await channelCount();
    for (const value of [
      { direct_members: over, direct_subgroups: [] },
      { direct_members: [], direct_subgroups: over },
    ]) {
      const response = await subscribe({ subscriptions: [{ name: 'bounded' }], can_administer_channel_group: value });
      // Refused by the parser, before any lookup (a union reports its first alternative's refusal).
      refused(response, 'can_administer_channel_group is not an integer');
    }
    expect(await channelCount()).toBe(before);
  });

  test('NUL in a channel name, description or key', async () => {
    const nul = (place: string) => `subscriptions[0]${place} contains NULL (0x00) characters.`;
    refused(await subscribe({ subscriptions: [{ name: 'a\u0000b' }] }), nul('["name"]'));
    refused(await subscribe({ subscriptions: [{ name: 'ok', description: 'a\u0000b' }] }), nul('["description"]'));
    refused(await subscribe({ subscriptions: [{ name: 'ok', 'x\u0000': 1 }] }), nul(''));
  });
});
