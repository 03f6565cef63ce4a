// The event endpoints and the API budget (a client registering without end must hit its budget):
// registering a queue, polling without parking (dont_block, which also creates queues) and deleting
// a queue spend the user's budget as every other request does; only a long-poll that may park is
// exempt (a refused poll would cut a client off from its events).

import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

const EVENTS = '/api/v1/events';

describe('with a per-user budget of 3 requests a minute', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      services: ['events'],
      env: { EVENTS_HEARTBEAT_MIN_MS: '200', EVENTS_HEARTBEAT_JITTER_MS: '0' },
      rateLimits: { RATE_LIMIT_USER_REQUESTS: 3, RATE_LIMIT_USER_WINDOW_SECONDS: 60 },
    });
  });
  afterAll(() => stack.close());

  async function registered(user: TestUser): Promise<string> {
    const response = await user.client.post('/api/v1/register', { event_types: JSON.stringify(['message']) });
    expect(response.status).toBe(200);
    return response.body.queue_id;
  }

  test('POST /register is counted: the 4th is refused', async () => {
    const user = await stack.createUser();
    for (let i = 0; i < 3; i++) await registered(user);
    expectError(
      await user.client.post('/api/v1/register', { event_types: JSON.stringify(['message']) }),
      429,
      'RATE_LIMIT_HIT',
      'API usage exceeded rate limit',
    );
  });

  test('GET /events?dont_block=true without a queue_id (it creates a queue) is counted: the 4th is refused', async () => {
    const user = await stack.createUser();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push(
        (await user.client.get(EVENTS, { dont_block: true, event_types: JSON.stringify(['message']) })).status,
      );
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    const refused = await user.client.get(EVENTS, { dont_block: true });
    expectError(refused, 429, 'RATE_LIMIT_HIT', 'API usage exceeded rate limit');
  });

  test('a non-blocking poll of an existing queue is counted', async () => {
    const user = await stack.createUser();
    const queueId = await registered(user);
    for (let i = 0; i < 2; i++)
      expect((await user.client.get(EVENTS, { queue_id: queueId, last_event_id: -1, dont_block: true })).status).toBe(
        200,
      );
    expectError(
      await user.client.get(EVENTS, { queue_id: queueId, last_event_id: -1, dont_block: 'true' }),
      429,
      'RATE_LIMIT_HIT',
      'API usage exceeded rate limit',
    );
  });

  test('DELETE /events is counted', async () => {
    const user = await stack.createUser();
    const queues = [await registered(user), await registered(user)];
    expect((await user.client.delete(EVENTS, { queue_id: queues[0] })).status).toBe(200);
    expectError(
      await user.client.delete(EVENTS, { queue_id: queues[1] }),
      429,
      'RATE_LIMIT_HIT',
      'API usage exceeded rate limit',
    );
  });

  test('a poll that may park is not counted: a user past the budget still gets their events', async () => {
    const user = await stack.createUser();
    const queueId = await registered(user);
    for (let i = 0; i < 2; i++) await user.client.get('/api/v1/users/me');
    expectError(await user.client.get('/api/v1/users/me'), 429, 'RATE_LIMIT_HIT', 'API usage exceeded rate limit');
    for (const dontBlock of [undefined, false]) {
      // Parks, then a heartbeat answers it (after 200 ms in this stack).
      const poll = await user.client.get(EVENTS, { queue_id: queueId, last_event_id: -1, dont_block: dontBlock });
      expect(poll.status).toBe(200);
      expect(poll.body.events).toEqual([expect.objectContaining({ type: 'heartbeat' })]);
    }
  });
});
