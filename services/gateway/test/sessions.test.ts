// Zulip's web app authenticates with a session cookie and a CSRF token, calling /json/<x> for
// /api/v1/<x> (docs/web-app.md): the login form, the cookie, /json's rules, and a session's end.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SessionStore, sessionIdFromCookies } from '@teamchat/bus';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, expectError, type ApiResponse } from '@teamchat/testing';

const PASSWORD = 'correct horse battery staple';
const NOT_LOGGED_IN = 'Not logged in: API authentication or user session required';

/** A browser: its cookie and the session's CSRF token (which the page would give it). */
interface Browser {
  cookie: string;
  sessionId: string;
  csrfToken: string;
  /** /json requests with the cookie, and the CSRF header unless told otherwise. */
  client: ApiClient;
}

function setCookieOf(response: ApiResponse): string {
  const header = response.headers['set-cookie'];
  expect(header).toHaveLength(1);
  return header![0];
}

async function logIn(stack: Stack, email: string, password = PASSWORD, host?: string): Promise<ApiResponse> {
  return stack.postLoginForm({ username: email, password }, { host });
}

async function browserOf(stack: Stack, response: ApiResponse): Promise<Browser> {
  expect(response.status).toBe(302);
  const cookie = setCookieOf(response).split(';', 1)[0];
  const sessionId = sessionIdFromCookies(cookie)!;
  const session = await new SessionStore(stack.redis, stack.deps.env.REDIS_PREFIX).get(sessionId);
  const csrfToken = session!.csrfToken;
  return {
    cookie,
    sessionId,
    csrfToken,
    client: new ApiClient(stack.gatewayUrl, null, { cookie, 'x-csrftoken': csrfToken }),
  };
}

async function loggedIn(stack: Stack, user: TestUser): Promise<Browser> {
  return browserOf(stack, await logIn(stack, user.deliveryEmail));
}

let stack: Stack;
let user: TestUser;
const uploadsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'session-uploads-'));
beforeAll(async () => {
  stack = await startStack({
    services: ['web', 'events', 'uploads'],
    env: { LOGIN_RATE_LIMIT_ACCOUNT_ATTEMPTS: '3', UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: uploadsDir },
  });
  user = await stack.createUser({ email: 'hamlet@example.com', password: PASSWORD });
});
afterAll(async () => {
  await stack.close();
  fs.rmSync(uploadsDir, { recursive: true, force: true });
});

describe('the login form', () => {
  test('GET /login/ is a form a person can use', async () => {
    const page = await stack.anonymous().get('/login/', {}, { validate: false });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('action="/accounts/login/"');
    expect(page.body).toContain('name="username"');
    expect(page.body).toContain('name="password"');
    // The icon the app's pages link, so a browser never asks for /favicon.ico (not served, as Zulip).
    expect(page.body).toContain('rel="icon" href="/static/images/favicon.svg?v=4"');
  });

  test('the right password: a session cookie, and the app', async () => {
    const response = await logIn(stack, user.deliveryEmail);
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('/');
    const cookie = setCookieOf(response);
    expect(cookie).toMatch(/^sessionid=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).toContain('Path=/');
    expect(cookie).toContain(`Max-Age=${14 * 24 * 3600}`);
    // EXTERNAL_SCHEME is http in the test stack.
    expect(cookie).not.toContain('Secure');
  });

  test('next= is followed within the site only', async () => {
    const here = await stack.postLoginForm({ username: user.deliveryEmail, password: PASSWORD, next: '/#narrow/x' });
    expect(here.headers.location).toBe('/#narrow/x');
    const elsewhere = await stack.postLoginForm({
      username: user.deliveryEmail,
      password: PASSWORD,
      next: '//evil.test/',
    });
    expect(elsewhere.headers.location).toBe('/');
  });

  test("a wrong password or unknown email: the form again, with Zulip's text, no cookie", async () => {
    for (const username of [user.deliveryEmail, 'nobody@example.com']) {
      const response = await logIn(stack, username, 'wrong password');
      expect(response.status).toBe(200);
      expect(response.headers['set-cookie']).toBeUndefined();
      expect(response.body).toContain('Incorrect email or password.');
      expect(response.body).toContain('id="login_form"');
    }
  });

  test('a deactivated user is told so', async () => {
    const gone = await stack.createUser({ email: 'gone@example.com', password: PASSWORD });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    const response = await logIn(stack, gone.deliveryEmail);
    expect(response.status).toBe(200);
    expect(response.body).toContain(
      'Your account gone@example.com has been deactivated. Please contact your organization administrator to reactivate it.',
    );
  });

  test('an account of another organisation does not log in here', async () => {
    const other = await stack.createRealm('other', 'other.example.test');
    const stranger = await stack.createUser({ email: 'stranger@example.com', password: PASSWORD, realm: other });
    const here = await logIn(stack, stranger.deliveryEmail);
    expect(here.status).toBe(200);
    expect(here.body).toContain('Incorrect email or password.');
    // On its own organisation's Host it does, and that session is refused on this one.
    const browser = await browserOf(stack, await logIn(stack, stranger.deliveryEmail, PASSWORD, other.host));
    expect((await browser.client.withHost(other.host).get('/json/users/me')).status).toBe(200);
    expectError(
      await browser.client.get('/json/users/me'),
      401,
      'UNAUTHORIZED',
      'Account is not associated with this subdomain',
    );
  });

  test('attempts past the login throttle (shared with fetch_api_key) are refused', async () => {
    const target = await stack.createUser({ email: 'target@example.com', password: PASSWORD });
    for (let i = 0; i < 2; i++) expect((await logIn(stack, target.deliveryEmail, 'guess')).status).toBe(200);
    // fetch_api_key spends the same budget.
    const api = await stack
      .anonymous()
      .post('/api/v1/fetch_api_key', { username: target.deliveryEmail, password: 'x' });
    expectError(api, 401, 'AUTHENTICATION_FAILED');
    const response = await logIn(stack, target.deliveryEmail);
    expect(response.status).toBe(200);
    expect(response.headers['set-cookie']).toBeUndefined();
    expect(response.body).toMatch(
      /You&#39;re making too many attempts to sign in\. Try again in \d+ seconds or contact your organization administrator for help\./,
    );
  });

  test("the gateway's session headers cannot come from a client", async () => {
    const page = await stack
      .anonymous()
      .get('/login/', {}, { validate: false, headers: { 'x-teamchat-session-csrf': 'forged-token-value' } });
    expect(page.status).toBe(200);
    // The form's token is its own CSRF cookie's (the web service's), never the forged one.
    expect(page.body).toMatch(/name="csrfmiddlewaretoken" value="[A-Za-z0-9]{32}"/);
    expect(page.body).not.toContain('forged-token-value');
  });

  test('a logged-in browser asking for the login page goes to the app', async () => {
    const browser = await loggedIn(stack, user);
    const page = await browser.client.get('/login/', {}, { validate: false });
    expect(page.status).toBe(302);
    expect(page.headers.location).toBe('/');
  });
});

describe('/json: /api/v1 with the session', () => {
  test('GET works with the cookie alone, as the same endpoint', async () => {
    const browser = await loggedIn(stack, user);
    const me = await new ApiClient(stack.gatewayUrl, null, { cookie: browser.cookie }).get('/json/users/me');
    expect(me.status).toBe(200);
    expect(me.body.user_id).toBe(user.id);
  });

  test('no session: 401 asking for one, as Zulip answers /json', async () => {
    const response = await stack.anonymous().get('/json/users/me');
    expectError(response, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
    expect(response.headers['www-authenticate']).toBe('Session realm="zulip"');
    const garbage = await new ApiClient(stack.gatewayUrl, null, { cookie: 'sessionid=nonsense' }).get('/json/users/me');
    expectError(garbage, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test('HTTP Basic is not read on /json (Zulip: the session only)', async () => {
    const response = await user.client.get('/json/users/me');
    expectError(response, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test('a change needs the CSRF token: missing or wrong is 403 CSRF_FAILED, right works', async () => {
    const browser = await loggedIn(stack, user);
    const noToken = new ApiClient(stack.gatewayUrl, null, { cookie: browser.cookie });
    const missing = await noToken.post('/json/users/me/alert_words', { alert_words: ['x'] });
    expectError(missing, 403, 'CSRF_FAILED', 'CSRF error: CSRF token missing.');
    expect(missing.body.reason).toBe('CSRF token missing.');
    const wrong = await noToken.post(
      '/json/users/me/alert_words',
      { alert_words: ['x'] },
      { headers: { 'x-csrftoken': 'a'.repeat(43) } },
    );
    expectError(wrong, 403, 'CSRF_FAILED', "CSRF error: CSRF token from the 'X-Csrftoken' HTTP header incorrect.");
    // Another session's token is as wrong.
    const other = await loggedIn(stack, user);
    const crossed = await noToken.post(
      '/json/users/me/alert_words',
      { alert_words: ['x'] },
      { headers: { 'x-csrftoken': other.csrfToken } },
    );
    expectError(crossed, 403, 'CSRF_FAILED');
    const ok = await browser.client.post('/json/users/me/alert_words', { alert_words: ['x'] });
    expect(ok.status).toBe(200);
    expect(ok.body.alert_words).toContain('x');
  });

  test('a path no rule has is a 404', async () => {
    const browser = await loggedIn(stack, user);
    expectError(await browser.client.get('/json/no/such/thing'), 404, 'BAD_REQUEST');
  });

  test('events: register and a long-poll through the gateway with the cookie', async () => {
    const browser = await loggedIn(stack, user);
    const queue = await browser.client.post('/json/register', { event_types: ['alert_words'] });
    expect(queue.status).toBe(200);
    const poll = browser.client.get('/json/events', { queue_id: queue.body.queue_id, last_event_id: -1 });
    await sleep(100);
    expect((await user.client.post('/api/v1/users/me/alert_words', { alert_words: ['polled'] })).status).toBe(200);
    const answer = await poll;
    expect(answer.status).toBe(200);
    expect(answer.body.events.map((event: { type: string }) => event.type)).toContain('alert_words');
  });
});

describe("the event tier's public entry takes the session too (the Ingress sends /json/events there)", () => {
  /** A client of the event tier's own port, as the Ingress forwards it. */
  const direct = (headers: Record<string, string>) =>
    new ApiClient(stack.serviceUrls.events!, null, { host: stack.realm.host, ...headers });

  test('a long-poll with the cookie receives its events', async () => {
    const browser = await loggedIn(stack, user);
    const queue = await browser.client.post('/json/register', { event_types: ['alert_words'] });
    const poll = direct({ cookie: browser.cookie }).get('/json/events', {
      queue_id: queue.body.queue_id,
      last_event_id: -1,
    });
    await sleep(100);
    expect((await user.client.post('/api/v1/users/me/alert_words', { alert_words: ['direct'] })).status).toBe(200);
    const answer = await poll;
    expect(answer.status).toBe(200);
    expect(answer.body.events.map((event: { type: string }) => event.type)).toContain('alert_words');
  });

  test('without a session (Basic is not read on /json): 401 asking for one', async () => {
    const response = await direct({}).get('/json/events', { queue_id: 'x', last_event_id: -1, dont_block: true });
    expectError(response, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
    expect(response.headers['www-authenticate']).toBe('Session realm="zulip"');
    const basic = await new ApiClient(stack.serviceUrls.events!, {
      email: user.deliveryEmail,
      apiKey: user.apiKey,
    })
      .withHost(stack.realm.host)
      .get('/json/events', { queue_id: 'x', last_event_id: -1, dont_block: true });
    expectError(basic, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test('DELETE needs the CSRF token', async () => {
    const browser = await loggedIn(stack, user);
    const queue = await browser.client.post('/json/register', { event_types: ['alert_words'] });
    const params = { queue_id: queue.body.queue_id };
    const refused = await direct({ cookie: browser.cookie }).delete('/json/events', params);
    expectError(refused, 403, 'CSRF_FAILED', 'CSRF error: CSRF token missing.');
    const deleted = await direct({ cookie: browser.cookie, 'x-csrftoken': browser.csrfToken }).delete(
      '/json/events',
      params,
    );
    expect(deleted.status).toBe(200);
  });

  test('an ended session is refused there at once', async () => {
    const browser = await loggedIn(stack, user);
    await browser.client.get('/accounts/logout/', {}, { validate: false });
    const response = await direct({ cookie: browser.cookie }).get('/json/events', {
      queue_id: 'x',
      last_event_id: -1,
      dont_block: true,
    });
    expectError(response, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });
});

describe("a session's end", () => {
  test('logout ends the session: the old cookie is refused, and the browser goes to the login page', async () => {
    const browser = await loggedIn(stack, user);
    const refused = await new ApiClient(stack.gatewayUrl, null, { cookie: browser.cookie }).post(
      '/accounts/logout/',
      { csrfmiddlewaretoken: 'wrong' },
      { validate: false },
    );
    expect(refused.status).toBe(403);
    expect((await browser.client.get('/json/users/me')).status).toBe(200);
    const out = await new ApiClient(stack.gatewayUrl, null, { cookie: browser.cookie }).post(
      '/accounts/logout/',
      { csrfmiddlewaretoken: browser.csrfToken },
      { validate: false },
    );
    expect(out.status).toBe(302);
    expect(out.headers.location).toBe('/login/');
    expect(setCookieOf(out)).toMatch(/^sessionid=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=\//);
    expectError(await browser.client.get('/json/users/me'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test('GET /accounts/logout/ logs out too (Zulip takes either)', async () => {
    const browser = await loggedIn(stack, user);
    const out = await browser.client.get('/accounts/logout/', {}, { validate: false });
    expect(out.status).toBe(302);
    expectError(await browser.client.get('/json/users/me'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test("a user's deactivation ends every session of theirs", async () => {
    const admin = await stack.createUser({ role: Role.ADMINISTRATOR });
    const leaving = await stack.createUser({ email: 'leaving@example.com', password: PASSWORD });
    const first = await loggedIn(stack, leaving);
    const second = await loggedIn(stack, leaving);
    expect((await first.client.get('/json/users/me')).status).toBe(200);
    expect((await admin.client.delete(`/api/v1/users/${leaving.id}`)).status).toBe(200);
    for (const browser of [first, second]) {
      expectError(await browser.client.get('/json/users/me'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
    }
    // Reactivated, the old sessions stay ended.
    expect((await admin.client.post(`/api/v1/users/${leaving.id}/reactivate`)).status).toBe(200);
    expectError(await first.client.get('/json/users/me'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test('a password change ends the other sessions, not the one that made it', async () => {
    const changer = await stack.createUser({ email: 'changer@example.com', password: PASSWORD });
    const here = await loggedIn(stack, changer);
    const elsewhere = await loggedIn(stack, changer);
    const changed = await here.client.patch('/json/settings', {
      old_password: PASSWORD,
      new_password: 'a brand new passphrase',
    });
    expect(changed.status).toBe(200);
    expect((await here.client.get('/json/users/me')).status).toBe(200);
    expectError(await elsewhere.client.get('/json/users/me'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
    expect((await logIn(stack, changer.deliveryEmail, 'a brand new passphrase')).status).toBe(302);
  });
});

describe("Zulip's method override: a POST form's `method` field", () => {
  test('urlencoded, /api/v1: POST with method=PATCH is PATCH /settings (the field no parameter of it)', async () => {
    const renamed = await stack.createUser({ fullName: 'Before' });
    const response = await renamed.client.post(
      '/api/v1/settings',
      { method: 'PATCH', full_name: 'After' },
      { validate: false },
    );
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ result: 'success', msg: '' });
    expect((await renamed.client.get('/api/v1/users/me')).body.full_name).toBe('After');
  });

  test('multipart, /json (CSRF checked as the POST it is): method=DELETE removes alert words', async () => {
    const browser = await loggedIn(stack, user);
    await browser.client.post('/json/users/me/alert_words', { alert_words: ['keep', 'drop'] });
    const noToken = await new ApiClient(stack.gatewayUrl, null, { cookie: browser.cookie }).post(
      '/json/users/me/alert_words',
      { method: 'DELETE', alert_words: ['drop'] },
      { encoding: 'multipart' },
    );
    expectError(noToken, 403, 'CSRF_FAILED');
    const response = await browser.client.post(
      '/json/users/me/alert_words',
      { method: 'DELETE', alert_words: ['drop'] },
      { encoding: 'multipart', validate: false },
    );
    expect(response.status).toBe(200);
    expect(response.body.alert_words).toContain('keep');
    expect(response.body.alert_words).not.toContain('drop');
    expect(response.body.ignored_parameters_unsupported).toBeUndefined();
  });

  test('multipart, /api/v1, and urlencoded, /json: PATCH /settings', async () => {
    const multipart = await user.client.post(
      '/api/v1/settings',
      { method: 'PATCH', full_name: 'Hamlet One' },
      { encoding: 'multipart', validate: false },
    );
    expect(multipart.status).toBe(200);
    expect((await user.client.get('/api/v1/users/me')).body.full_name).toBe('Hamlet One');
    const browser = await loggedIn(stack, user);
    const form = await browser.client.post(
      '/json/settings',
      { method: 'PATCH', full_name: 'Hamlet Two' },
      { validate: false },
    );
    expect(form.status).toBe(200);
    expect((await user.client.get('/api/v1/users/me')).body.full_name).toBe('Hamlet Two');
  });

  test("a method the path does not have is 405, as Zulip's rest_dispatch", async () => {
    const response = await user.client.post('/api/v1/settings', { method: 'PUT' }, { validate: false });
    expect(response.status).toBe(405);
    expect(response.body.msg).toBe('Method Not Allowed');
  });

  test('without the field, a POST stays a POST', async () => {
    const response = await user.client.post('/api/v1/users/me/alert_words', { alert_words: ['plain'] });
    expect(response.status).toBe(200);
    expect(response.body.alert_words).toContain('plain');
  });
});

describe('uploaded files load with the cookie', () => {
  test("the 'file' mode takes the session cookie: a file uploaded on /json downloads with it", async () => {
    const browser = await loggedIn(stack, user);
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('hello from a browser')], { type: 'text/plain' }), 'note.txt');
    const uploaded = await fetch(`${stack.gatewayUrl}/json/user_uploads`, {
      method: 'POST',
      headers: { cookie: browser.cookie, 'x-csrftoken': browser.csrfToken },
      body: form,
    });
    expect(uploaded.status).toBe(200);
    const { url } = (await uploaded.json()) as { url: string };
    const withCookie = await new ApiClient(stack.gatewayUrl, null, { cookie: browser.cookie }).get(
      url,
      {},
      { validate: false },
    );
    expect(withCookie.status).toBe(200);
    expect(withCookie.raw.toString()).toBe('hello from a browser');
    const without = await stack.anonymous().get(url, {}, { validate: false });
    expectError(without, 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });

  test("the web app's tus uploads (/api/v1/tus/) are admitted by the cookie, as Zulip's tusd hook", async () => {
    const browser = await loggedIn(stack, user);
    const create = (headers: Record<string, string>) =>
      fetch(`${stack.gatewayUrl}/api/v1/tus/`, {
        method: 'POST',
        headers: {
          'tus-resumable': '1.0.0',
          'upload-length': '5',
          'upload-metadata': `filename ${Buffer.from('a.txt').toString('base64')}`,
          ...headers,
        },
      });
    expect((await create({ cookie: browser.cookie })).status).toBe(201);
    expect((await create({})).status).toBe(401);
  });
});

describe('a session lasts SESSION_COOKIE_AGE_SECONDS', () => {
  let short: Stack;
  beforeAll(async () => {
    short = await startStack({ services: ['web'], env: { SESSION_COOKIE_AGE_SECONDS: '2' } });
  });
  afterAll(() => short.close());

  test('past it, the session is refused (401) and the cookie said so', async () => {
    const hasty = await short.createUser({ email: 'hasty@example.com', password: PASSWORD });
    const response = await logIn(short, hasty.deliveryEmail);
    expect(setCookieOf(response)).toContain('Max-Age=2');
    const browser = await browserOf(short, response);
    expect((await browser.client.get('/json/users/me')).status).toBe(200);
    await sleep(2500);
    expectError(await browser.client.get('/json/users/me'), 401, 'UNAUTHORIZED', NOT_LOGGED_IN);
  });
});
