// Secrets: API keys, passwords and browser sessions are stored only as hashes, and no key,
// password, session cookie, Authorization header or internal token shows up in the logs, in error answers, in events or
// anywhere in the database or Redis. Bots' keys and webhook tokens are also kept, sealed
// (docs/adr/0007): they show up only for those who administer the bot, and in realm_bot events. The internal token the gateway signs cannot be forged,
// replayed on another method or path, or used to act in another realm.

import { Writable } from 'node:stream';
import jwt from 'jsonwebtoken';
import { INTERNAL_TOKEN_HEADER, signInternalToken, type InternalClaims } from '@teamchat/core';
import { hashApiKey, Role, verifyPassword } from '@teamchat/domain';
import { doSetPassword } from '@teamchat/service-users';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, expectError, registerEventQueue, type ApiResponse, type ReceivedEvent } from '@teamchat/testing';
import http from 'node:http';

/** Every log line the stack writes, at debug level. */
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _encoding, callback) {
    logLines.push(chunk.toString('utf8'));
    callback();
  },
});

/** Everything the clients were told (bodies and headers). */
const answers: { what: string; text: string }[] = [];
function keep(what: string, response: ApiResponse): ApiResponse {
  answers.push({ what, text: `${JSON.stringify(response.headers)} ${response.raw.toString('utf8')}` });
  return response;
}

let stack: Stack;
let owner: TestUser;
let member: TestUser;
const OWNER_PASSWORD = 'owner-Secret-passw0rd';
const MEMBER_PASSWORD = 'member-Secret-passw0rd';
const JOINER_PASSWORD = 'joiner-Secret-passw0rd';
/** Keys issued during the test (by fetch_api_key and sign-up), besides the fixtures'. */
const issuedKeys: string[] = [];
/**
 * A bot's key and its outgoing webhook token: kept sealed (docs/adr/0007), shown only to those
 * who administer the bot (the answers listed in BOT_ANSWERS, and realm_bot events).
 */
const botSecrets: string[] = [];
const BOT_ANSWERS = new Set(['create bot', 'list bots', 'register realm_bots', 'events']);
/** Browser session ids (the sessionid cookie): only the login's Set-Cookie may carry one; Redis keeps their sha256. */
const sessionIds: string[] = [];

beforeAll(async () => {
  stack = await startStack({
    services: ['messages', 'channels', 'events', 'web'],
    logs: { level: 'debug', destination: logSink },
  });
  owner = await stack.createUser({ email: 'owner@example.com', role: Role.OWNER });
  member = await stack.createUser({ email: 'member@example.com' });
  await doSetPassword(stack.deps, owner.id, OWNER_PASSWORD);
  await doSetPassword(stack.deps, member.id, MEMBER_PASSWORD);
});
afterAll(() => stack?.close());

/** The secrets of the run: keys, passwords, and the Basic header values built from them. */
function secrets(): string[] {
  const keys = [owner.apiKey, member.apiKey, ...issuedKeys];
  const basic = keys.flatMap((key) =>
    [owner.deliveryEmail, member.deliveryEmail].map((email) => Buffer.from(`${email}:${key}`).toString('base64')),
  );
  return [...keys, OWNER_PASSWORD, MEMBER_PASSWORD, JOINER_PASSWORD, ...basic, ...botSecrets, ...sessionIds];
}

const JWT_PATTERN = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\./;

describe('a session of logins and requests (recorded for the checks below)', () => {
  test('logs in, signs up, makes requests right and wrong', async () => {
    const anonymous = stack.anonymous();
    // Logins: right and wrong passwords.
    const login = keep(
      'fetch_api_key',
      await anonymous.post('/api/v1/fetch_api_key', { username: owner.deliveryEmail, password: OWNER_PASSWORD }),
    );
    expect(login.status).toBe(200);
    issuedKeys.push(login.body.api_key);
    expectError(
      keep(
        'wrong password',
        await anonymous.post('/api/v1/fetch_api_key', {
          username: member.deliveryEmail,
          password: `${MEMBER_PASSWORD}x`,
        }),
      ),
      401,
      'AUTHENTICATION_FAILED',
    );
    // The password sent as a query parameter, as a careless client might.
    keep(
      'password in query',
      await anonymous.request(
        'POST',
        `/api/v1/fetch_api_key?username=${encodeURIComponent(member.deliveryEmail)}&password=${MEMBER_PASSWORD}x`,
      ),
    );

    // Sign-up through an invitation link: a password and a new key.
    const events = await registerEventQueue(owner.client, {
      event_types: ['realm_user', 'user_group', 'subscription', 'message', 'realm_bot'],
    });
    const invite = keep(
      'invite',
      await owner.client.post('/api/v1/invites/multiuse', { invite_expires_in_minutes: 60, invite_as: 400 }),
    );
    const key = String(invite.body.invite_link).split('/join/')[1].replace(/\/$/, '');
    const joined = keep(
      'signup',
      await anonymous.post('/api/v1/invites/multiuse/accept', {
        key,
        email: 'joiner@example.com',
        full_name: 'Joiner',
        password: JOINER_PASSWORD,
      }),
    );
    expect(joined.status).toBe(200);
    issuedKeys.push(joined.body.api_key);

    // An outgoing webhook bot: its key and token are shown to its owner, and kept sealed.
    const bot = keep(
      'create bot',
      await owner.client.post('/api/v1/bots', {
        full_name: 'Secret Bot',
        short_name: 'secret',
        bot_type: 3,
        payload_url: JSON.stringify('https://bots.example.com/'),
      }),
    );
    expect(bot.status).toBe(200);
    botSecrets.push(bot.body.api_key);
    keep('list bots', await owner.client.get('/api/v1/bots'));
    const { registration } = await registerEventQueue(owner.client, { fetch_event_types: ['realm_bot'] });
    const shown = registration.realm_bots.find((entry: { user_id: number }) => entry.user_id === bot.body.user_id);
    expect(shown.api_key).toBe(bot.body.api_key);
    botSecrets.push(shown.services[0].token);
    answers.push({ what: 'register realm_bots', text: JSON.stringify(registration) });
    keep('bot request', await stack.client({ email: shown.email, apiKey: bot.body.api_key }).get('/api/v1/users/me'));

    // Requests with the keys, right and wrong (in Basic and in ?api_key=), and failing ones.
    keep('users/me', await owner.client.get('/api/v1/users/me'));
    keep(
      'bad key',
      await stack
        .client({ email: owner.deliveryEmail, apiKey: `${owner.apiKey.slice(0, -1)}X` })
        .get('/api/v1/users/me'),
    );
    keep(
      'key of another',
      await stack.client({ email: member.deliveryEmail, apiKey: owner.apiKey }).get('/api/v1/users/me'),
    );
    keep(
      'malformed key',
      await stack.client({ email: owner.deliveryEmail, apiKey: `${owner.apiKey}extra` }).get('/api/v1/users/me'),
    );
    keep(
      'api_key in query',
      await stack.anonymous().get(`/user_uploads/1/ab/missing.txt?api_key=${member.apiKey}`, {}, { validate: false }),
    );
    keep(
      'failing request',
      await owner.client.post('/api/v1/messages', {
        type: 'stream',
        to: 'no such channel',
        topic: 't',
        content: member.apiKey,
      }),
    );
    keep(
      'send a message',
      await member.client.post('/api/v1/messages', { type: 'direct', to: [owner.id], content: 'hello' }),
    );
    // Every event up to the message (the sign-up's realm_user/subscription events among them).
    const received: ReceivedEvent[] = [];
    while (!received.some((event) => event.type === 'message')) received.push(...(await events.next(1)));
    received.push(...(await events.drain()));
    expect(received.some((event) => event.type === 'realm_user' && event.op === 'add')).toBe(true);
    expect(received.some((event) => event.type === 'realm_bot' && event.op === 'add')).toBe(true);
    answers.push({ what: 'events', text: JSON.stringify(received) });
    await events.delete();

    // A browser's session (the web app's login form), used on /json, right and wrong (no CSRF token).
    const browserLogin = keep(
      'browser login',
      await stack.postLoginForm({ username: member.deliveryEmail, password: MEMBER_PASSWORD }),
    );
    expect(browserLogin.status).toBe(302);
    const cookie = browserLogin.headers['set-cookie']![0].split(';', 1)[0];
    sessionIds.push(cookie.slice('sessionid='.length));
    const browser = new ApiClient(stack.gatewayUrl, null, { cookie });
    expect(keep('browser request', await browser.get('/json/users/me')).status).toBe(200);
    expectError(
      keep('browser refused', await browser.post('/json/typing', { op: 'start', to: '[1]' })),
      403,
      'CSRF_FAILED',
    );
  });
});

describe('storage', () => {
  test('API keys are stored as their sha256 only; passwords as scrypt hashes', async () => {
    const keys = await stack.db.apiKey.findMany({ include: { user: { select: { delivery_email: true } } } });
    const hashes = new Set(keys.map((row) => row.key_hash));
    for (const key of [owner.apiKey, member.apiKey, ...issuedKeys, botSecrets[0]]) {
      expect(hashes.has(hashApiKey(key))).toBe(true);
      expect(hashes.has(key)).toBe(false);
    }
    // Only the bot's key is also kept, sealed.
    expect(keys.filter((row) => row.sealed_key !== null).map((row) => row.key_hash)).toEqual([
      hashApiKey(botSecrets[0]),
    ]);
    for (const row of keys) expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);

    const users = await stack.db.userProfile.findMany({
      where: { delivery_email: { in: ['owner@example.com', 'member@example.com', 'joiner@example.com'] } },
    });
    expect(users).toHaveLength(3);
    const passwords: Record<string, string> = {
      'owner@example.com': OWNER_PASSWORD,
      'member@example.com': MEMBER_PASSWORD,
      'joiner@example.com': JOINER_PASSWORD,
    };
    for (const user of users) {
      expect(user.password_hash).toMatch(/^scrypt\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
      expect(await verifyPassword(passwords[user.delivery_email], user.password_hash)).toBe(true);
    }
  });

  test('no secret appears in any table (events in the outbox included)', async () => {
    const tables = await stack.db.$queryRaw<
      { tablename: string }[]
    >`SELECT tablename::text AS tablename FROM pg_tables WHERE schemaname = 'public'`;
    const found: string[] = [];
    for (const { tablename } of tables) {
      for (const secret of secrets()) {
        // A bot's secrets travel in realm_bot events (to its owner and administrators), as in
        // Zulip: such an event is in the outbox until Redis holds it, as in Redis's checks below.
        const botEventsExcepted =
          tablename === 'event_outbox' && botSecrets.includes(secret)
            ? ` AND t.payload->'event'->>'type' IS DISTINCT FROM 'realm_bot'`
            : '';
        const rows = await stack.db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM "${tablename}" t WHERE strpos(t::text, $1) > 0${botEventsExcepted}`,
          secret,
        );
        if (rows[0].n > 0) found.push(`${tablename}: ${secret.slice(0, 4)}…`);
      }
    }
    expect(found).toEqual([]);
  });

  test('no secret appears in Redis (auth cache, event queues, streams)', async () => {
    const prefix = stack.deps.env.REDIS_PREFIX;
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await stack.redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      for (const key of keys) {
        const type = await stack.redis.type(key);
        let text = key;
        if (type === 'string') text += (await stack.redis.get(key)) ?? '';
        else if (type === 'hash') text += JSON.stringify(await stack.redis.hgetall(key));
        else if (type === 'list') text += JSON.stringify(await stack.redis.lrange(key, 0, -1));
        else if (type === 'set') text += JSON.stringify(await stack.redis.smembers(key));
        else if (type === 'zset') text += JSON.stringify(await stack.redis.zrange(key, 0, -1));
        else if (type === 'stream') text += JSON.stringify(await stack.redis.xrange(key, '-', '+'));
        for (const secret of secrets()) {
          if (!text.includes(secret)) continue;
          // A bot's secrets travel in realm_bot events (to its owner and administrators), as in Zulip.
          if (botSecrets.includes(secret) && (await onlyInBotEvents(key, type, secret))) continue;
          found.push(`${key} (${type}): ${secret.slice(0, 4)}…`);
        }
      }
    } while (cursor !== '0');
    expect(found).toEqual([]);
  });
});

/** Whether every entry of a Redis stream or list holding `secret` is a realm_bot event. */
async function onlyInBotEvents(key: string, type: string, secret: string): Promise<boolean> {
  let entries: string[];
  if (type === 'stream') entries = (await stack.redis.xrange(key, '-', '+')).map((entry) => JSON.stringify(entry));
  else if (type === 'list') entries = await stack.redis.lrange(key, 0, -1);
  else return false;
  return entries
    .filter((entry) => entry.includes(secret))
    .every((entry) => /\\*"type\\*":\\*"realm_bot\\*"/.test(entry));
}

describe('what is said about it', () => {
  test('the logs (debug level, every service and the gateway) hold no key, password, Basic header or internal token', () => {
    const text = logLines.join('');
    // The session was logged: requests of the gateway and of the services, the failed ones too.
    expect(text).toContain('"path":"/api/v1/fetch_api_key"');
    expect(text).toContain('"status":401');
    expect(logLines.filter((line) => line.includes('"msg":"request"')).length).toBeGreaterThan(10);
    const found = secrets().filter((secret) => text.includes(secret));
    expect(found.map((secret) => `${secret.slice(0, 4)}…`)).toEqual([]);
    expect(text).not.toMatch(JWT_PATTERN);
  });

  test('error answers and events hold no secret (only fetch_api_key and sign-up return the new key)', () => {
    const found: string[] = [];
    for (const answer of answers) {
      const allowed = [
        ...(answer.what === 'fetch_api_key' || answer.what === 'signup' ? issuedKeys : []),
        ...(answer.what === 'browser login' ? sessionIds : []),
        ...(BOT_ANSWERS.has(answer.what) ? botSecrets : []),
      ];
      for (const secret of secrets()) {
        if (!allowed.includes(secret) && answer.text.includes(secret))
          found.push(`${answer.what}: ${secret.slice(0, 4)}…`);
      }
      expect(answer.text).not.toMatch(JWT_PATTERN);
    }
    expect(found).toEqual([]);
  });
});

// --- the internal token ---------------------------------------------------------------------

function callService(
  service: 'users' | 'messages',
  method: string,
  path: string,
  token: string | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const url = new URL(path, stack.serviceUrls[service]);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, headers: { ...headers, ...(token ? { [INTERNAL_TOKEN_HEADER]: token } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function claimsFor(user: TestUser, method: string, path: string): InternalClaims {
  return {
    user: { userId: user.id, realmId: user.realm.id, role: user.profile.role, email: user.email, isBot: false },
    realmId: user.realm.id,
    method,
    path,
  };
}

const secret = () => stack.deps.env.INTERNAL_JWT_SECRET;

describe('the internal token', () => {
  test('a service accepts a token the gateway would sign (the baseline)', async () => {
    const response = await callService(
      'users',
      'GET',
      '/api/v1/users/me',
      signInternalToken(secret(), claimsFor(owner, 'GET', '/api/v1/users/me')),
    );
    expect(response.status).toBe(200);
    expect(response.body.user_id).toBe(owner.id);
  });

  test('no token, or one signed with another secret, is refused', async () => {
    expectError(
      (await callService('users', 'GET', '/api/v1/users/me', undefined)) as never,
      401,
      'UNAUTHORIZED',
      'Requests must come through the gateway',
    );
    const forged = signInternalToken('not-the-secret-'.repeat(3), claimsFor(owner, 'GET', '/api/v1/users/me'));
    expectError(
      (await callService('users', 'GET', '/api/v1/users/me', forged)) as never,
      401,
      'UNAUTHORIZED',
      'Invalid internal token',
    );
  });

  test('unsigned (alg none), tampered and expired tokens are refused', async () => {
    const valid = signInternalToken(secret(), claimsFor(member, 'GET', '/api/v1/users/me'));
    const [header, payload, signature] = valid.split('.');
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    // Tampered: the member's token made to claim the owner (same signature).
    const tamperedPayload = Buffer.from(
      JSON.stringify({ ...decoded, u: [owner.id, decoded.u[1], Role.OWNER, owner.email, false] }),
    ).toString('base64url');
    expectError(
      (await callService('users', 'GET', '/api/v1/users/me', `${header}.${tamperedPayload}.${signature}`)) as never,
      401,
      'UNAUTHORIZED',
    );
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    expectError((await callService('users', 'GET', '/api/v1/users/me', none)) as never, 401, 'UNAUTHORIZED');
    const expired = jwt.sign(
      { ...decoded, exp: Math.floor(Date.now() / 1000) - 10, iat: Math.floor(Date.now() / 1000) - 70 },
      secret(),
      { algorithm: 'HS256' },
    );
    expectError(
      (await callService('users', 'GET', '/api/v1/users/me', expired)) as never,
      401,
      'UNAUTHORIZED',
      'Invalid internal token',
    );
  });

  test('a token is good for its method and path only', async () => {
    const token = signInternalToken(secret(), claimsFor(member, 'GET', '/api/v1/users/me'));
    expectError(
      (await callService('users', 'DELETE', '/api/v1/users/me', token)) as never,
      401,
      'UNAUTHORIZED',
      'Invalid internal token',
    );
    expectError(
      (await callService('users', 'GET', '/api/v1/users', token)) as never,
      401,
      'UNAUTHORIZED',
      'Invalid internal token',
    );
    expectError(
      (await callService('users', 'GET', `/api/v1/users/${owner.id}`, token)) as never,
      401,
      'UNAUTHORIZED',
      'Invalid internal token',
    );
    expectError(
      (await callService('messages', 'POST', '/api/v1/messages', token)) as never,
      401,
      'UNAUTHORIZED',
      'Invalid internal token',
    );
    // The query string is not part of the binding, but the path is: /users/me?x=1 is the same request.
    expect((await callService('users', 'GET', '/api/v1/users/me?include_subscribers=true', token)).status).toBe(200);
  });

  test('a client cannot send its own token through the gateway', async () => {
    const token = signInternalToken(secret(), claimsFor(owner, 'GET', '/api/v1/users/me'));
    // Without credentials: the gateway refuses, whatever the token says.
    expectError(
      await stack.anonymous().get('/api/v1/users/me', {}, { headers: { [INTERNAL_TOKEN_HEADER]: token } }),
      401,
      'UNAUTHORIZED',
    );
    // With the member's credentials: the member, not the token's owner.
    const response = await member.client.get('/api/v1/users/me', {}, { headers: { [INTERNAL_TOKEN_HEADER]: token } });
    expect(response.body.user_id).toBe(member.id);
  });

  describe('across realms', () => {
    let otherOwner: TestUser;
    let otherInviteKey: string;
    beforeAll(async () => {
      const other = await stack.createRealm('other', 'other.example.test');
      otherOwner = await stack.createUser({ realm: other, email: 'boss@other.example.test', role: Role.OWNER });
      const invite = await otherOwner.client.post('/api/v1/invites/multiuse', {
        invite_expires_in_minutes: 60,
        invite_as: 400,
      });
      otherInviteKey = String(invite.body.invite_link).split('/join/')[1].replace(/\/$/, '');
    });

    test('a token for realm A acts in realm A whatever Host the request names', async () => {
      const token = signInternalToken(secret(), claimsFor(member, 'GET', '/api/v1/users'));
      const response = await callService('users', 'GET', '/api/v1/users', token, {
        host: 'other.example.test',
        'x-forwarded-host': 'other.example.test',
      });
      expect(response.status).toBe(200);
      const emails = (response.body.members as { email: string }[]).map((m) => m.email);
      expect(emails).toContain(member.email);
      expect(emails).not.toContain(otherOwner.email);
    });

    test("an anonymous token for realm A cannot use realm B's invitation", async () => {
      const claims: InternalClaims = {
        user: null,
        realmId: stack.realm.id,
        method: 'POST',
        path: '/api/v1/invites/multiuse/accept',
      };
      const body = new URLSearchParams({
        key: otherInviteKey,
        email: 'intruder@example.com',
        full_name: 'Intruder',
        password: 'intruder-password',
      }).toString();
      const response = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = http.request(new URL('/api/v1/invites/multiuse/accept', stack.serviceUrls.users), {
          method: 'POST',
          headers: {
            [INTERNAL_TOKEN_HEADER]: signInternalToken(secret(), claims),
            'content-type': 'application/x-www-form-urlencoded',
            host: 'other.example.test',
          },
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
          );
        });
        req.on('error', reject);
        req.end(body);
      });
      expectError(
        response as never,
        404,
        'BAD_REQUEST',
        "Whoops. We couldn't find your confirmation link in the system.",
      );
      expect(await stack.db.userProfile.count({ where: { delivery_email: 'intruder@example.com' } })).toBe(0);
    });

    test("realm B's user cannot use its key at realm A's host through the gateway", async () => {
      const atRealmA = stack.client({ email: otherOwner.deliveryEmail, apiKey: otherOwner.apiKey });
      expectError(
        await atRealmA.get('/api/v1/users/me'),
        401,
        'UNAUTHORIZED',
        'Account is not associated with this subdomain',
      );
    });
  });
});
