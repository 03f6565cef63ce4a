// The event tier's public entry (docs/adr/0006): the Ingress sends GET and DELETE /api/v1/events
// and POST /api/v1/register straight to the event replicas, with the client's HTTP Basic credentials. These tests speak to
// the events service's own port, as the Ingress does, with the organisation's Host header.
import { invalidateAuthCache, RedisKeys } from '@teamchat/bus';
import { hashApiKey, Role } from '@teamchat/domain';
import { doRegenerateApiKey } from '@teamchat/service-users';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, EventQueue, expectError, registerEventQueue, settleEvents } from '@teamchat/testing';
import { alertWords, commitEvent } from './support/producers';

const NOT_LOGGED_IN = 'Not logged in: API authentication or user session required';
const EVENTS = '/api/v1/events';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: { EVENTS_HEARTBEAT_MIN_MS: '1500', EVENTS_HEARTBEAT_JITTER_MS: '300' },
  });
});
afterAll(() => stack.close());

/** A client of the event tier's port, as the Ingress forwards it: the organisation's Host, the client's credentials. */
function direct(credentials: { email: string; apiKey: string } | null, host = stack.realm.host): ApiClient {
  return new ApiClient(stack.serviceUrls.events!, credentials).withHost(host);
}

const directOf = (user: TestUser, host?: string) => direct({ email: user.deliveryEmail, apiKey: user.apiKey }, host);

/** A queue registered through the gateway (as docker-compose and `npm start` do), then polled directly. */
async function directQueue(user: TestUser): Promise<EventQueue> {
  const registered = await registerEventQueue(user.client, { event_types: ['alert_words'], fetch_event_types: [] });
  return new EventQueue(directOf(user), registered.queueId, registered.lastEventId, registered.registration);
}

function pollOf(client: ApiClient, queueId: string, dontBlock = true) {
  return client.get(EVENTS, { queue_id: queueId, last_event_id: -1, dont_block: dontBlock });
}

describe('a client long-polls the event tier directly with HTTP Basic', () => {
  test('a parked poll receives its events; the answer carries a request id', async () => {
    const user = await stack.createUser();
    const queue = await directQueue(user);
    const parked = queue.next(2);
    await commitEvent(stack, alertWords(['one']), [user.id]);
    await commitEvent(stack, alertWords(['two']), [user.id]);
    expect(await parked).toEqual([
      { id: 0, type: 'alert_words', alert_words: ['one'] },
      { id: 1, type: 'alert_words', alert_words: ['two'] },
    ]);
    // From the last event received: the two may have come in two polls, the first acknowledged by the second.
    const answer = await directOf(user).get(EVENTS, { queue_id: queue.queueId, last_event_id: 1, dont_block: true });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const given = await directOf(user).get(
      EVENTS,
      { queue_id: queue.queueId, last_event_id: 1, dont_block: true },
      { headers: { 'x-request-id': 'trace-12345678' } },
    );
    expect(given.headers['x-request-id']).toBe('trace-12345678');
  });

  test('a non-blocking poll without a queue registers one; DELETE removes it', async () => {
    const user = await stack.createUser();
    const created = await directOf(user).get(EVENTS, { dont_block: true, event_types: ['alert_words'] });
    expect(created.status).toBe(200);
    const queueId = created.body.queue_id as string;
    await commitEvent(stack, alertWords(['created']), [user.id]);
    await settleEvents(stack);
    expect((await pollOf(directOf(user), queueId)).body.events).toEqual([
      { id: 0, type: 'alert_words', alert_words: ['created'] },
    ]);
    // Through the gateway, the same queue.
    expect((await pollOf(user.client, queueId)).body.events).toHaveLength(1);

    expect((await directOf(user).delete(EVENTS, { queue_id: queueId })).status).toBe(200);
    expectError(await pollOf(directOf(user), queueId), 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId}`);
  });

  test("another user's queue is not theirs on the direct path either", async () => {
    const owner = await stack.createUser();
    const other = await stack.createUser();
    const queue = await directQueue(owner);
    for (const answer of [
      await pollOf(directOf(other), queue.queueId),
      await directOf(other).delete(EVENTS, { queue_id: queue.queueId }),
    ])
      expect(answer.status).toBe(400);
    expect((await pollOf(directOf(owner), queue.queueId)).status).toBe(200);
  });

  test('register is served directly too: the queue it answers gets its events, polled either way', async () => {
    const user = await stack.createUser();
    const answer = await directOf(user).post('/api/v1/register', { event_types: ['alert_words'] });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.body).toMatchObject({ result: 'success', last_event_id: -1, alert_words: [] });
    const queueId = answer.body.queue_id as string;
    await commitEvent(stack, alertWords(['registered directly']), [user.id]);
    await settleEvents(stack);
    expect((await pollOf(directOf(user), queueId)).body.events).toEqual([
      { id: 0, type: 'alert_words', alert_words: ['registered directly'] },
    ]);
    expect((await pollOf(user.client, queueId)).body.events).toHaveLength(1);
    // And refused as the gateway refuses it.
    expectError(
      await direct({ email: user.deliveryEmail, apiKey: 'x'.repeat(32) }).post('/api/v1/register'),
      401,
      'UNAUTHORIZED',
      'Invalid API key',
    );
    expectError(await direct(null).post('/api/v1/register'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });
});

describe('every refusal is the gateway’s 401, on GET and DELETE', () => {
  let user: TestUser;
  let queueId: string;
  beforeAll(async () => {
    user = await stack.createUser();
    queueId = (await directQueue(user)).queueId;
  });

  /** The same request as a parked poll, a non-blocking poll and a DELETE. */
  async function expectRefused(client: ApiClient, msg: string, headers: Record<string, string> = {}) {
    const answers = [
      await client.get(EVENTS, { queue_id: queueId, last_event_id: -1 }, { headers }),
      await client.get(EVENTS, { queue_id: queueId, last_event_id: -1, dont_block: true }, { headers }),
      await client.delete(EVENTS, { queue_id: queueId }, { headers }),
    ];
    for (const answer of answers) {
      expectError(answer, 401, 'UNAUTHORIZED', msg);
      expect(answer.headers['www-authenticate']).toBe('Basic realm="zulip"');
    }
  }

  test('no credentials', async () => {
    await expectRefused(direct(null), NOT_LOGGED_IN);
  });

  test('a malformed Authorization header', async () => {
    await expectRefused(direct(null), 'This endpoint requires HTTP basic authentication.', {
      authorization: 'Bearer abc',
    });
    await expectRefused(direct(null), 'Invalid authorization header for basic auth', {
      authorization: `Basic ${Buffer.from('no-colon').toString('base64')}`,
    });
  });

  test('a key of the wrong shape, a wrong key, the key with another email', async () => {
    await expectRefused(direct({ email: user.deliveryEmail, apiKey: 'short' }), 'Malformed API key');
    await expectRefused(direct({ email: user.deliveryEmail, apiKey: 'a'.repeat(32) }), 'Invalid API key');
    await expectRefused(direct({ email: 'nobody@example.com', apiKey: user.apiKey }), 'Invalid API key');
  });

  test("a key sent with another organisation's Host, or a Host that names none", async () => {
    const other = await stack.createRealm('direct-b', 'direct-b.example.test');
    const memberOfB = await stack.createUser({ realm: other });
    await expectRefused(directOf(user, 'direct-b.example.test'), 'Account is not associated with this subdomain');
    await expectRefused(directOf(user, 'nowhere.example.test'), 'Account is not associated with this subdomain');
    // B's member, on B's Host, is served; on A's Host refused.
    const queueOfB = await registerEventQueue(memberOfB.client, { event_types: ['alert_words'] });
    expect((await pollOf(directOf(memberOfB, 'direct-b.example.test'), queueOfB.queueId)).status).toBe(200);
    expectError(
      await pollOf(directOf(memberOfB), queueOfB.queueId),
      401,
      'UNAUTHORIZED',
      'Account is not associated with this subdomain',
    );
  });

  test('a deactivated organisation', async () => {
    const realm = await stack.createRealm('direct-closing', 'direct-closing.example.test');
    const member = await stack.createUser({ realm });
    const queue = await registerEventQueue(member.client, { event_types: ['alert_words'] });
    await stack.db.realm.update({ where: { id: realm.id }, data: { deactivated: true } });
    // As the deactivating action does: registering cached the member's lookup.
    await invalidateAuthCache(stack.redis, stack.deps.env, [hashApiKey(member.apiKey)]);
    expectError(
      await pollOf(directOf(member, 'direct-closing.example.test'), queue.queueId),
      401,
      'REALM_DEACTIVATED',
      'This organization has been deactivated',
    );
  });
});

describe('a revoked key or a deactivated user is refused on the direct path at once', () => {
  /** Polls until the event replica holds the lookup in memory, then drops Redis's copy: only memory can answer. */
  async function cachedInReplicaMemoryOnly(user: TestUser, queueId: string): Promise<void> {
    for (let i = 0; i < 3; i++) expect((await pollOf(directOf(user), queueId)).status).toBe(200);
    await stack.redis.del(new RedisKeys(stack.deps.env.REDIS_PREFIX).auth(hashApiKey(user.apiKey)));
    expect((await pollOf(directOf(user), queueId)).status).toBe(200);
  }

  test('a regenerated key: the old one is refused, the new one served', async () => {
    const user = await stack.createUser();
    const queue = await directQueue(user);
    await cachedInReplicaMemoryOnly(user, queue.queueId);
    const newKey = await doRegenerateApiKey(stack.deps, user.id);
    expectError(await pollOf(directOf(user), queue.queueId), 401, 'UNAUTHORIZED', 'Invalid API key');
    const renewed = direct({ email: user.deliveryEmail, apiKey: newKey });
    expect((await pollOf(renewed, queue.queueId)).status).toBe(200);
  });

  test('a user deactivated by an administrator (through the gateway)', async () => {
    const admin = await stack.createUser({ role: Role.ADMINISTRATOR });
    const user = await stack.createUser();
    const queue = await directQueue(user);
    await cachedInReplicaMemoryOnly(user, queue.queueId);
    expect((await admin.client.delete(`/api/v1/users/${user.id}`)).status).toBe(200);
    expectError(await pollOf(directOf(user), queue.queueId), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    expectError(
      await directOf(user).delete(EVENTS, { queue_id: queue.queueId }),
      401,
      'USER_DEACTIVATED',
      'Account is deactivated',
    );
  });
});

describe('rate limits: the same budget as the gateway', () => {
  let limited: Stack;
  beforeAll(async () => {
    limited = await startStack({
      services: ['events'],
      rateLimits: { RATE_LIMIT_USER_REQUESTS: 4, RATE_LIMIT_USER_WINDOW_SECONDS: 600 },
      env: { EVENTS_HEARTBEAT_MIN_MS: '300', EVENTS_HEARTBEAT_JITTER_MS: '50' },
    });
  });
  afterAll(() => limited.close());

  test('non-blocking polls and DELETE spend it (shared with the gateway); polls that may park never do', async () => {
    const user = await limited.createUser();
    const client = new ApiClient(limited.serviceUrls.events!, {
      email: user.deliveryEmail,
      apiKey: user.apiKey,
    }).withHost(limited.realm.host);
    // One request of the budget through the gateway (register), three directly.
    const queue = await registerEventQueue(user.client, { event_types: ['alert_words'] });
    const first = await client.get(EVENTS, { queue_id: queue.queueId, last_event_id: -1, dont_block: true });
    expect(first.headers['x-ratelimit-limit']).toBe('4');
    expect(first.headers['x-ratelimit-remaining']).toBe('2');
    for (let i = 0; i < 2; i++)
      expect((await client.get(EVENTS, { queue_id: queue.queueId, last_event_id: -1, dont_block: true })).status).toBe(
        200,
      );
    const refused = await client.get(EVENTS, { queue_id: queue.queueId, last_event_id: -1, dont_block: true });
    expectError(refused, 429, 'RATE_LIMIT_HIT');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expectError(await client.delete(EVENTS, { queue_id: queue.queueId }), 429, 'RATE_LIMIT_HIT');
    // The gateway sees the same spent budget.
    expectError(
      await user.client.get(EVENTS, { queue_id: queue.queueId, last_event_id: -1, dont_block: true }),
      429,
      'RATE_LIMIT_HIT',
    );
    // A poll that may park is still served (here answered by a heartbeat), directly as through the gateway.
    for (const poller of [client, user.client]) {
      const heartbeat = await poller.get(EVENTS, { queue_id: queue.queueId, last_event_id: -1 });
      expect(heartbeat.status).toBe(200);
      expect(heartbeat.body.events.map((event: { type: string }) => event.type)).toEqual(['heartbeat']);
    }
  });
});
