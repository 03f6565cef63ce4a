import { setTimeout as sleep } from 'node:timers/promises';
import { invalidateAuthCache, isCluster, readAuthCache, RedisKeys, writeAuthCache } from '@teamchat/bus';
import { hashApiKey, Role } from '@teamchat/domain';
import { doRegenerateApiKey } from '@teamchat/service-users';
import type { Db } from '@teamchat/db';
import { Authenticator } from '@teamchat/runtime';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, expectError } from '@teamchat/testing';

let stack: Stack;
let user: TestUser;
beforeAll(async () => {
  stack = await startStack();
  user = await stack.createUser({ email: 'cordelia@example.com' });
});
afterAll(() => stack.close());

const ME = '/api/v1/users/me';
const NOT_LOGGED_IN = 'Not logged in: API authentication or user session required';

function withAuthorization(header: string) {
  return stack.anonymous().get(ME, {}, { headers: { authorization: header } });
}

describe('every authentication failure is a 401 UNAUTHORIZED', () => {
  test('no credentials', async () => {
    const response = await stack.anonymous().get(ME);
    expectError(response, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
    expect(response.headers['www-authenticate']).toBe('Basic realm="zulip"');
  });

  test('not HTTP Basic', async () => {
    expectError(
      await withAuthorization('Bearer abc'),
      401,
      'UNAUTHORIZED',
      'This endpoint requires HTTP basic authentication.',
    );
  });

  test('Basic without a colon', async () => {
    expectError(
      await withAuthorization(`Basic ${Buffer.from('no-colon').toString('base64')}`),
      401,
      'UNAUTHORIZED',
      'Invalid authorization header for basic auth',
    );
  });

  test('a key of the wrong shape', async () => {
    const response = await stack.client({ email: user.deliveryEmail, apiKey: 'short' }).get(ME);
    expectError(response, 401, 'UNAUTHORIZED', 'Malformed API key');
  });

  test('a wrong key', async () => {
    const response = await stack.client({ email: user.deliveryEmail, apiKey: 'a'.repeat(32) }).get(ME);
    expectError(response, 401, 'UNAUTHORIZED', 'Invalid API key');
  });

  test('the right key with another email, or an unknown email', async () => {
    const other = await stack.createUser();
    for (const email of [other.deliveryEmail, 'nobody@example.com']) {
      const response = await stack.client({ email, apiKey: user.apiKey }).get(ME);
      expectError(response, 401, 'UNAUTHORIZED', 'Invalid API key');
    }
  });

  test('a deactivated user, also when the lookup was cached', async () => {
    const victim = await stack.createUser();
    expect((await victim.client.get(ME)).status).toBe(200);
    await stack.db.userProfile.update({ where: { id: victim.id }, data: { is_active: false } });
    await invalidateAuthCache(stack.redis, stack.deps.env, [hashApiKey(victim.apiKey)]);
    expectError(await victim.client.get(ME), 401, 'USER_DEACTIVATED', 'Account is deactivated');
  });

  test('a deactivated realm', async () => {
    const realm = await stack.createRealm('closing', 'closing.example.test');
    const member = await stack.createUser({ realm });
    await stack.db.realm.update({ where: { id: realm.id }, data: { deactivated: true } });
    expectError(await member.client.get(ME), 401, 'REALM_DEACTIVATED', 'This organization has been deactivated');
  });

  test('a deactivated user of a deactivated realm: the realm is named (Zulip checks it first)', async () => {
    const realm = await stack.createRealm('closed', 'closed.example.test');
    const member = await stack.createUser({ realm });
    await stack.db.userProfile.update({ where: { id: member.id }, data: { is_active: false } });
    await stack.db.realm.update({ where: { id: realm.id }, data: { deactivated: true } });
    expectError(await member.client.get(ME), 401, 'REALM_DEACTIVATED', 'This organization has been deactivated');
  });

  test("a key used on another realm's host", async () => {
    await stack.createRealm('elsewhere', 'elsewhere.example.test');
    const response = await user.client.withHost('elsewhere.example.test').get(ME);
    expectError(response, 401, 'UNAUTHORIZED', 'Account is not associated with this subdomain');
  });

  test('a key used on a host that names no organisation is refused (not associated with the subdomain)', async () => {
    for (const host of ['nowhere.example.test', '127.0.0.2:9991']) {
      const response = await user.client.withHost(host).get(ME);
      expectError(response, 401, 'UNAUTHORIZED', 'Account is not associated with this subdomain');
    }
    // The legacy ?api_key= of file URLs too.
    const file = await stack
      .anonymous()
      .withHost('nowhere.example.test')
      .get('/user_uploads/1/ab/x.txt', { api_key: user.apiKey }, { validate: false });
    expectError(file, 401, 'UNAUTHORIZED', 'Account is not associated with this subdomain');
  });
});

describe('the auth cache', () => {
  test('a lookup is cached in Redis under the key hash, never the key', async () => {
    const cached = await stack.createUser();
    await cached.client.get(ME);
    const cacheKey = new RedisKeys(stack.deps.env.REDIS_PREFIX).auth(hashApiKey(cached.apiKey));
    const value = await stack.redis.get(cacheKey);
    expect(JSON.parse(value!)).toMatchObject({ userId: cached.id, realmId: stack.realm.id, role: Role.MEMBER });
    expect(value).not.toContain(cached.apiKey);
    expect(await stack.redis.ttl(cacheKey)).toBeGreaterThan(0);
  });

  test("a lookup that read the old key before it changed cannot cache it after the change's invalidation", async () => {
    const changing = await stack.createUser();
    expect((await changing.client.get(ME)).status).toBe(200);
    const hash = hashApiKey(changing.apiKey);
    const before = await readAuthCache(stack.redis, stack.deps.env, hash);
    await doRegenerateApiKey(stack.deps, changing.id);
    // What a process that had not heard the invalidation yet writes when its PostgreSQL read comes back.
    await writeAuthCache(stack.redis, stack.deps.env, hash, before!);
    expect(await readAuthCache(stack.redis, stack.deps.env, hash)).toBeNull();
    expectError(await changing.client.get(ME), 401, 'UNAUTHORIZED', 'Invalid API key');
  });

  // Many times over: the gateway's memory refused a regenerated key late about once in 200
  // rotations under load (the invalidation still in Redis, or unread behind the request).
  test('regenerating the key refuses the old one at once, every time', async () => {
    const rotating = await stack.createUser();
    let client = rotating.client;
    for (let rotation = 0; rotation < 150; rotation++) {
      // Twice: the second is served from the gateway's memory.
      for (let i = 0; i < 2; i++) expect((await client.get(ME)).status).toBe(200);
      const newKey = await doRegenerateApiKey(stack.deps, rotating.id);
      expectError(await client.get(ME), 401, 'UNAUTHORIZED', 'Invalid API key');
      client = stack.client({ email: rotating.deliveryEmail, apiKey: newKey });
      expect((await client.get(ME)).body.user_id).toBe(rotating.id);
    }
  });
});

describe('a crowd of first lookups', () => {
  test('is read from PostgreSQL in a few statements, not one each, each client getting its own user', async () => {
    const crowd = await Promise.all(Array.from({ length: 40 }, () => stack.createUser()));
    let reads = 0;
    const counted = stack.deps.db.$extends({
      query: {
        apiKey: {
          findMany: ({ args, query }) => {
            reads++;
            return query(args);
          },
        },
      },
    }) as unknown as Db;
    const authenticator = new Authenticator(counted, stack.redis, stack.deps.env, stack.deps.logger, 'crowd-test');
    try {
      const unknownKey = 'b'.repeat(32);
      const answers = await Promise.allSettled([
        ...crowd.map((member) =>
          authenticator.authenticate({ email: member.deliveryEmail, apiKey: member.apiKey }, undefined),
        ),
        authenticator.authenticate({ email: null, apiKey: unknownKey }, undefined),
      ]);
      expect(answers.slice(0, -1).map((answer) => answer.status === 'fulfilled' && answer.value.userId)).toEqual(
        crowd.map((member) => member.id),
      );
      expect(answers.at(-1)).toMatchObject({ status: 'rejected', reason: { message: 'Invalid API key' } });
      // Gathered per turn of the event loop, as the Redis misses come back: 41 before batching.
      expect(reads).toBeLessThanOrEqual(4);
    } finally {
      authenticator.close();
    }
  });
});

/** An Authenticator whose Redis reads of cached lookups are counted. */
async function countingAuthenticator(name: string, db: Db = stack.deps.db) {
  const counter = { gets: 0 };
  const redis = new Proxy(stack.redis, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property !== 'get') return value.bind(target);
      return (...args: unknown[]) => {
        counter.gets++;
        return value.apply(target, args);
      };
    },
  });
  const authenticator = new Authenticator(db, redis, stack.deps.env, stack.deps.logger, name);
  // Memory serves nothing until the invalidation channel is subscribed: wait until a repeat is answered from it.
  const probe = await stack.createUser();
  const credentials = { email: probe.deliveryEmail, apiKey: probe.apiKey };
  for (let tries = 0; !isCluster(stack.redis) && tries < 100; tries++) {
    const before = counter.gets;
    await authenticator.authenticate(credentials, undefined);
    if (counter.gets === before) break;
    await sleep(20);
  }
  return { authenticator, counter };
}

describe('lookups under way are shared', () => {
  test('many requests with one key at once read Redis once (each on a Redis Cluster, where memory is off)', async () => {
    const { authenticator, counter } = await countingAuthenticator('shared-lookup-test');
    try {
      const crowd = await stack.createUser();
      const before = counter.gets;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          authenticator.authenticate({ email: crowd.deliveryEmail, apiKey: crowd.apiKey }, undefined),
        ),
      );
      expect(answers.map((answer) => answer.userId)).toEqual(Array(20).fill(crowd.id));
      expect(counter.gets - before).toBe(isCluster(stack.redis) ? 20 : 1);
    } finally {
      authenticator.close();
    }
  });

  test('a lookup under way when the key changes answers no request made after the change, nor caches for one', async () => {
    // The first PostgreSQL read of each rotation is held after it read: its answer is the old key's.
    let held: { read: () => void; release: Promise<void> } | undefined;
    const db = stack.deps.db.$extends({
      query: {
        apiKey: {
          findMany: async ({ args, query }) => {
            const result = await query(args);
            const hold = held;
            held = undefined;
            if (hold) {
              hold.read();
              await hold.release;
            }
            return result;
          },
        },
      },
    }) as unknown as Db;
    const { authenticator } = await countingAuthenticator('shared-lookup-invalidation-test', db);
    const rotating = await stack.createUser();
    let apiKey = rotating.apiKey;
    try {
      for (let rotation = 0; rotation < 5; rotation++) {
        let read!: () => void;
        let release!: () => void;
        const readDone = new Promise<void>((resolve) => (read = resolve));
        held = { read, release: new Promise<void>((resolve) => (release = resolve)) };
        const first = authenticator.authenticate({ email: null, apiKey }, undefined);
        await readDone;
        const newKey = await doRegenerateApiKey(stack.deps, rotating.id);
        const after = authenticator.authenticate({ email: null, apiKey }, undefined);
        // Held until the request after the change is answered (or would wait for the first lookup).
        await Promise.race([after.catch(() => undefined), sleep(300)]);
        release();
        // Sent before the change answered: may go either way.
        await first.catch(() => undefined);
        await expect(after).rejects.toThrow('Invalid API key');
        // Neither cached the old key for the requests after.
        await expect(authenticator.authenticate({ email: null, apiKey }, undefined)).rejects.toThrow('Invalid API key');
        expect((await stack.client({ email: rotating.deliveryEmail, apiKey }).get(ME)).status).toBe(401);
        apiKey = newKey;
      }
    } finally {
      authenticator.close();
    }
  });
});

describe("the gateways' in-memory copies", () => {
  test('a second gateway refuses a user at once when the first deactivates them', async () => {
    const admin = await stack.createUser({ role: Role.ADMINISTRATOR });
    const victim = await stack.createUser();
    const replica = await stack.startGatewayReplica();
    try {
      const viaReplica = replica.client(victim);
      // Both gateways now hold the lookup in memory (the second request of each is served from it).
      for (const client of [victim.client, viaReplica, victim.client, viaReplica])
        expect((await client.get(ME)).status).toBe(200);
      // The Redis copy is gone after the first request of each gateway: only memory can answer now.
      await stack.redis.del(new RedisKeys(stack.deps.env.REDIS_PREFIX).auth(hashApiKey(victim.apiKey)));
      expect((await viaReplica.get(ME)).body.user_id).toBe(victim.id);

      expect((await admin.client.delete(`/api/v1/users/${victim.id}`)).status).toBe(200);
      expectError(await viaReplica.get(ME), 401, 'USER_DEACTIVATED', 'Account is deactivated');
      expectError(await victim.client.get(ME), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    } finally {
      await replica.close();
    }
  });
});

describe('routing', () => {
  test('an unknown /api/v1 path is a 404 envelope, before any authentication', async () => {
    for (const client of [stack.anonymous(), user.client]) {
      const response = await client.get('/api/v1/no_such_endpoint');
      expectError(response, 404, 'BAD_REQUEST', 'Endpoint does not exist');
    }
  });

  test("an unknown path under a service's prefix is that service's 404", async () => {
    expectError(await user.client.get('/api/v1/users/me/no_such_thing'), 404, 'BAD_REQUEST', 'Endpoint does not exist');
  });

  test('every answer carries a request id; a sane one from the client is kept', async () => {
    const generated = await user.client.get(ME);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const given = await user.client.get(ME, {}, { headers: { 'x-request-id': 'trace-12345678' } });
    expect(given.headers['x-request-id']).toBe('trace-12345678');
  });

  test('a service that is down gives a 503 envelope', async () => {
    const response = await user.client.get('/api/v1/drafts');
    expect(response.status).toBe(503);
    expect(response.body).toMatchObject({
      result: 'error',
      code: 'BAD_REQUEST',
      msg: 'The messages service is unavailable',
    });
  });
});

describe('services accept only requests that came through the gateway', () => {
  const direct = () => new ApiClient(stack.serviceUrls.users!, { email: user.deliveryEmail, apiKey: user.apiKey });

  test('without an internal token', async () => {
    expectError(await direct().get(ME), 401, 'UNAUTHORIZED', 'Requests must come through the gateway');
  });

  test('with a forged, misdirected or expired token', async () => {
    const jwt = await import('jsonwebtoken');
    const { signInternalToken } = await import('@teamchat/core');
    const claims = {
      user: { userId: user.id, realmId: stack.realm.id, role: 400, email: user.email, isBot: false },
      realmId: stack.realm.id,
      method: 'GET',
    };
    const forged = signInternalToken('not-the-secret', { ...claims, path: ME });
    const otherPath = signInternalToken(stack.deps.env.INTERNAL_JWT_SECRET, {
      ...claims,
      path: '/api/v1/server_settings',
    });
    const expired = jwt.default.sign(
      {
        u: [user.id, stack.realm.id, 400, user.email, false],
        r: stack.realm.id,
        m: 'GET',
        p: ME,
        rid: 'x',
        exp: Math.floor(Date.now() / 1000) - 10,
      },
      stack.deps.env.INTERNAL_JWT_SECRET,
      { issuer: 'teamchat-gateway', audience: 'teamchat-services' },
    );
    for (const token of [forged, otherPath, expired]) {
      const response = await new ApiClient(stack.serviceUrls.users!).get(
        ME,
        {},
        { headers: { 'x-teamchat-internal-token': token } },
      );
      expectError(response, 401, 'UNAUTHORIZED', 'Invalid internal token');
    }
    const valid = signInternalToken(stack.deps.env.INTERNAL_JWT_SECRET, { ...claims, path: ME });
    const accepted = await new ApiClient(stack.serviceUrls.users!).get(
      ME,
      {},
      { headers: { 'x-teamchat-internal-token': valid } },
    );
    expect(accepted.body.user_id).toBe(user.id);
  });

  test('the gateway drops a client-supplied internal token and the credentials before forwarding', async () => {
    const bogus = await user.client.get(ME, {}, { headers: { 'x-teamchat-internal-token': 'garbage' } });
    expect(bogus.status).toBe(200);
  });
});

describe('past the auth cache lifetime (AUTH_CACHE_TTL_SECONDS)', () => {
  const TTL_SECONDS = 2;
  let short: Stack;
  beforeAll(async () => {
    short = await startStack({ authCacheTtlSeconds: TTL_SECONDS });
  });
  afterAll(() => short.close());
  const pastTheLifetime = () => sleep(TTL_SECONDS * 1000 + 500);

  test('a change nobody announced is seen once the cached lookup has expired, in Redis and in memory', async () => {
    const member = await short.createUser();
    expect((await member.client.get(ME)).status).toBe(200);
    const cacheKey = new RedisKeys(short.deps.env.REDIS_PREFIX).auth(hashApiKey(member.apiKey));
    expect(await short.redis.ttl(cacheKey)).toBeLessThanOrEqual(TTL_SECONDS);
    // Written straight to PostgreSQL: no invalidation, so only the lifetime bounds what is served.
    await short.db.userProfile.update({ where: { id: member.id }, data: { is_active: false } });
    await pastTheLifetime();
    expectError(await member.client.get(ME), 401, 'USER_DEACTIVATED', 'Account is deactivated');
  });

  test("an invalidation's tombstone refuses late writes for the lifetime, then lookups are cached again", async () => {
    const member = await short.createUser();
    expect((await member.client.get(ME)).status).toBe(200);
    const hash = hashApiKey(member.apiKey);
    const stale = await readAuthCache(short.redis, short.deps.env, hash);
    await short.db.userProfile.update({ where: { id: member.id }, data: { role: Role.MODERATOR } });
    await invalidateAuthCache(short.redis, short.deps.env, [hash]);
    await writeAuthCache(short.redis, short.deps.env, hash, stale!);
    expect(await readAuthCache(short.redis, short.deps.env, hash)).toBeNull();

    await pastTheLifetime();
    expect((await member.client.get(ME)).status).toBe(200);
    expect(await readAuthCache(short.redis, short.deps.env, hash)).toMatchObject({
      userId: member.id,
      role: Role.MODERATOR,
    });
  });
});
