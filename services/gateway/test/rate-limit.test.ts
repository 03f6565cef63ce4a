// The gateway's API rate limits: per user (authenticated) and per IP address
// (unauthenticated), kept in Redis so every gateway replica spends the same budget, answered
// as Zulip does: 429 RATE_LIMIT_HIT with `retry-after` and the Retry-After header.

import type http from 'node:http';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, sleep } from '@teamchat/testing';
import { rateLimitSettings, ZULIP_RATE_LIMITS } from '@teamchat/runtime';
import { loadGatewayEnv } from '../src/env';

const ME = '/api/v1/users/me';
const SERVER_SETTINGS = '/api/v1/server_settings';

function expectRateLimited(
  response: { status: number; headers: http.IncomingHttpHeaders; body: any },
  windowSeconds: number,
): number {
  expectError(response as never, 429, 'RATE_LIMIT_HIT', 'API usage exceeded rate limit');
  const retryAfter = response.body['retry-after'];
  // Zulip's envelope: exactly result, msg, code and retry-after.
  expect(Object.keys(response.body).sort()).toEqual(['code', 'msg', 'result', 'retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  expect(response.headers['retry-after']).toBe(String(retryAfter));
  expect(response.headers['x-ratelimit-remaining']).toBe('0');
  return retryAfter;
}

describe('with a per-user budget of 3 requests a minute and a per-IP one of 2', () => {
  let stack: Stack;
  let iago: TestUser;
  let othello: TestUser;
  beforeAll(async () => {
    stack = await startStack({
      rateLimits: {
        RATE_LIMIT_USER_REQUESTS: 3,
        RATE_LIMIT_USER_WINDOW_SECONDS: 60,
        RATE_LIMIT_IP_REQUESTS: 2,
        RATE_LIMIT_IP_WINDOW_SECONDS: 60,
      },
    });
    iago = await stack.createUser({ email: 'iago@example.com' });
    othello = await stack.createUser({ email: 'othello@example.com' });
  });
  afterAll(() => stack.close());

  test('a user gets 3 answers, then 429 RATE_LIMIT_HIT with retry-after; other users are not affected', async () => {
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await iago.client.get(ME);
      expect(response.status).toBe(200);
      expect(response.headers['x-ratelimit-limit']).toBe('3');
      remaining.push(String(response.headers['x-ratelimit-remaining']));
      expect(Number(response.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    expectRateLimited(await iago.client.get(ME), 60);
    // Any endpoint: the budget is the user's, not the endpoint's.
    expectRateLimited(await iago.client.post('/api/v1/users/me/presence', { status: 'active' }), 60);
    expect((await othello.client.get(ME)).status).toBe(200);
  });

  test("unauthenticated requests spend their IP address's budget, not a user's", async () => {
    const anonymous = stack.anonymous();
    expect((await anonymous.get(SERVER_SETTINGS)).status).toBe(200);
    expect((await anonymous.get(SERVER_SETTINGS)).status).toBe(200);
    expectRateLimited(await anonymous.get(SERVER_SETTINGS), 60);
    // A wrong password is an unauthenticated request too.
    expectRateLimited(
      await anonymous.post('/api/v1/fetch_api_key', { username: 'iago@example.com', password: 'wrong' }),
      60,
    );
    // The same address, authenticated: the user's own budget.
    expect((await othello.client.get(SERVER_SETTINGS)).status).toBe(200);
  });

  test('a refused request does not reach the service', async () => {
    const user = await stack.createUser({ email: 'desdemona@example.com' });
    for (let i = 0; i < 3; i++)
      expect((await user.client.post('/api/v1/users/me/presence', { status: 'active' })).status).toBe(200);
    await stack.db.userPresence.deleteMany({ where: { user_profile_id: user.id } });
    expectRateLimited(await user.client.post('/api/v1/users/me/presence', { status: 'active' }), 60);
    expect(await stack.db.userPresence.count({ where: { user_profile_id: user.id } })).toBe(0);
  });

  test('concurrent requests spend the budget atomically: exactly 3 of 12 get through', async () => {
    const user = await stack.createUser({ email: 'emilia@example.com' });
    const responses = await Promise.all(Array.from({ length: 12 }, () => user.client.get(ME)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(3);
    for (const refused of responses.filter((r) => r.status !== 200)) expectRateLimited(refused, 60);
  });

  test('the budget is shared by every gateway replica (it lives in Redis)', async () => {
    const user = await stack.createUser({ email: 'cassio@example.com' });
    for (let i = 0; i < 3; i++) expect((await user.client.get(ME)).status).toBe(200);
    // A second gateway on the same Redis and prefix (its own internal secret: it can only refuse).
    const prefix = stack.deps.env.REDIS_PREFIX;
    expect(await stack.redis.exists(`${prefix}ratelimit:user:${user.id}`)).toBe(1);
    const replica = await stack.startGatewayReplica({
      INTERNAL_JWT_SECRET: 'another-replica-secret',
      RATE_LIMIT_USER_REQUESTS: 3,
      RATE_LIMIT_USER_WINDOW_SECONDS: 60,
    });
    try {
      const viaReplica = replica.client(user);
      expectRateLimited(await viaReplica.get(ME), 60);
    } finally {
      await replica.close();
    }
  });
});

// Long-polls and the other event endpoints: event-queue-limits.test.ts.

// Five seconds, not one: on a loaded machine three requests can take over half a second, and a
// one-second window would have refilled a token before the third.
describe('with a budget of 2 requests per 5 seconds', () => {
  let stack: Stack;
  let user: TestUser;
  beforeAll(async () => {
    stack = await startStack({ rateLimits: { RATE_LIMIT_USER_REQUESTS: 2, RATE_LIMIT_USER_WINDOW_SECONDS: 5 } });
    user = await stack.createUser({ email: 'hamlet@example.com' });
  });
  afterAll(() => stack.close());

  test('the budget refills: after retry-after seconds the user is served again', async () => {
    expect((await user.client.get(ME)).status).toBe(200);
    expect((await user.client.get(ME)).status).toBe(200);
    const retryAfter = expectRateLimited(await user.client.get(ME), 5);
    await sleep(retryAfter * 1000 + 100);
    expect((await user.client.get(ME)).status).toBe(200);
  });
});

// Behind the Kubernetes Ingress every connection comes from the ingress
// controller; unless the gateway takes the client's address from X-Forwarded-For (the manifests
// set RATE_LIMIT_TRUST_FORWARDED_FOR), one client exhausts the anonymous budget of everyone.
describe.each([
  [true, 'each client behind the proxy has its own budget'],
  [false, 'without trusting X-Forwarded-For, every client behind the proxy shares one'],
])('behind a proxy, RATE_LIMIT_TRUST_FORWARDED_FOR=%s', (trust, title) => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      rateLimits: {
        RATE_LIMIT_IP_REQUESTS: 2,
        RATE_LIMIT_IP_WINDOW_SECONDS: 60,
        RATE_LIMIT_TRUST_FORWARDED_FOR: trust,
      },
    });
  });
  afterAll(() => stack.close());

  test(title, async () => {
    // What ingress-nginx sends: the client's own header (forgeable) and, last, the peer it saw.
    const via = (client: string) => ({ headers: { 'x-forwarded-for': `10.9.9.9, ${client}` } });
    for (let i = 0; i < 2; i++)
      expect((await stack.anonymous().get(SERVER_SETTINGS, {}, via('203.0.113.1'))).status).toBe(200);
    expectRateLimited(await stack.anonymous().get(SERVER_SETTINGS, {}, via('203.0.113.1')), 60);
    const other = await stack.anonymous().get(SERVER_SETTINGS, {}, via('203.0.113.2'));
    if (trust) expect(other.status).toBe(200);
    else expectRateLimited(other, 60);
    // A forged first entry does not buy a new budget.
    expectRateLimited(
      await stack
        .anonymous()
        .get(SERVER_SETTINGS, {}, { headers: { 'x-forwarded-for': `198.51.100.77, 203.0.113.1` } }),
      60,
    );
  });
});

describe('disabled (RATE_LIMIT_ENABLED=false, for benchmarks)', () => {
  let stack: Stack;
  let user: TestUser;
  beforeAll(async () => {
    stack = await startStack({
      rateLimits: { RATE_LIMIT_ENABLED: false, RATE_LIMIT_USER_REQUESTS: 1, RATE_LIMIT_IP_REQUESTS: 1 },
    });
    user = await stack.createUser({ email: 'horatio@example.com' });
  });
  afterAll(() => stack.close());

  test('no request is refused and no rate-limit headers are sent', async () => {
    for (let i = 0; i < 5; i++) {
      const response = await user.client.get(ME);
      expect(response.status).toBe(200);
      expect(response.headers['x-ratelimit-limit']).toBeUndefined();
      expect((await stack.anonymous().get(SERVER_SETTINGS)).status).toBe(200);
    }
  });
});

describe('configuration', () => {
  const base = { DATABASE_URL: 'postgresql://x@127.0.0.1/x', INTERNAL_JWT_SECRET: 'x'.repeat(32) };

  test("defaults to Zulip's limits: 200 per user and 100 per IP address a minute", () => {
    const settings = rateLimitSettings(loadGatewayEnv(base));
    expect(settings).toEqual(ZULIP_RATE_LIMITS);
    expect(settings.user).toEqual({ limit: 200, windowSeconds: 60 });
    expect(settings.ip).toEqual({ limit: 100, windowSeconds: 60 });
  });

  test('reads every RATE_LIMIT_* variable', () => {
    const env = loadGatewayEnv({
      ...base,
      RATE_LIMIT_ENABLED: 'false',
      RATE_LIMIT_USER_REQUESTS: '50',
      RATE_LIMIT_USER_WINDOW_SECONDS: '10',
      RATE_LIMIT_IP_REQUESTS: '5',
      RATE_LIMIT_IP_WINDOW_SECONDS: '30',
      RATE_LIMIT_TRUST_FORWARDED_FOR: 'true',
    });
    expect(rateLimitSettings(env)).toEqual({
      enabled: false,
      user: { limit: 50, windowSeconds: 10 },
      ip: { limit: 5, windowSeconds: 30 },
      trustForwardedFor: true,
    });
  });

  test('refuses a value that is not a number', () => {
    expect(() => loadGatewayEnv({ ...base, RATE_LIMIT_USER_REQUESTS: 'many' })).toThrow(/RATE_LIMIT_USER_REQUESTS/);
  });
});

describe('failed API-key authentications spend the address budget (a per-IP budget of 3)', () => {
  let stack: Stack;
  let iago: TestUser;
  beforeAll(async () => {
    stack = await startStack({
      rateLimits: { RATE_LIMIT_IP_REQUESTS: 3, RATE_LIMIT_IP_WINDOW_SECONDS: 60 },
    });
    iago = await stack.createUser({ email: 'iago@example.com' });
  });
  afterAll(() => stack.close());

  test('random keys are refused with 401 until the budget is spent, then 429; the account itself is still served', async () => {
    const guess = (i: number) =>
      stack
        .anonymous()
        .get(
          ME,
          {},
          { headers: { authorization: `Basic ${Buffer.from(`iago@example.com:guess${i}`).toString('base64')}` } },
        );
    for (let i = 0; i < 3; i++) expect((await guess(i)).status).toBe(401);
    for (let i = 3; i < 10; i++) expectRateLimited(await guess(i), 60);
    // The real key authenticates, and spends its user's budget, not the address's.
    expect((await iago.client.get(ME)).status).toBe(200);
  });
});
