// GET /: Zulip's web app for a logged-in user (its bundles, the session's CSRF token, the logout
// form, and page params whose state_data is a live register answer under the web app's
// arguments), the spectator page, and the login redirect for anyone else.
import fs from 'node:fs';
import path from 'node:path';
import { SessionStore, sessionIdFromCookies } from '@teamchat/bus';
import { SESSION_CSRF_HEADER } from '@teamchat/core';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { WEB_APP_REGISTER_PARAMS } from '@teamchat/testing';
import { resolveZulipWebDir, WEBPACK_STATS_FILE } from '../src/lib/zulip-web-dir';
import { pageParamsOf, webRequest } from './helpers';

let stack: Stack;
let owner: TestUser;
let appFiles: string[];

beforeAll(async () => {
  stack = await startStack({ services: ['web', 'events', 'channels', 'messages'] });
  owner = await stack.createUser({ fullName: 'Own Er', role: Role.OWNER });
  const webDir = resolveZulipWebDir(process.env.ZULIP_WEB_DIR)!;
  const stats = JSON.parse(fs.readFileSync(path.join(webDir, WEBPACK_STATS_FILE), 'utf8'));
  appFiles = stats.chunks.app;
});

afterAll(async () => {
  await stack?.close();
});

describe('GET / for a logged-in user', () => {
  let page: Awaited<ReturnType<typeof webRequest>>;

  beforeAll(async () => {
    await stack.createStream({ name: 'general', subscribers: [owner.id] });
    // A name with every character the attribute's escaping is about.
    await stack.createUser({ fullName: `O'Brien <b>&amp; "Co"` });
    page = await webRequest(stack, '/', { user: owner, headers: { [SESSION_CSRF_HEADER]: 'csrf-token-"1"' } });
  });

  test('is the app page, never cached, under a policy that names its inline script', () => {
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toContain('no-store');
    const nonce = /<script nonce="([0-9a-f]{48})">/.exec(page.text)?.[1];
    expect(nonce).toBeDefined();
    expect(page.headers['content-security-policy']).toContain(`script-src 'self' 'nonce-${nonce}'`);
    expect(page.text).toContain('<title>Test Organization - Zulip</title>');
    expect(page.text).toContain('id="app-loading"');
  });

  test("links the app entry's stylesheets and scripts, in order", () => {
    const linked = [...page.text.matchAll(/<(?:link href|script src)="\/static\/webpack-bundles\/([^"]+)"([^>]*)>/g)];
    expect(linked.map((match) => match[1])).toEqual(appFiles.filter((file) => /\.(css|js)$/.test(file)));
    for (const [, file, attributes] of linked) {
      if (file.endsWith('.css')) expect(attributes).toContain('rel="stylesheet"');
      else expect(attributes).toMatch(/defer crossorigin="anonymous"/);
    }
  });

  test("carries the session's CSRF token and a logout form", () => {
    expect(page.text).toMatch(
      /<form id="logout_form" action="\/accounts\/logout\/" method="POST"><input type="hidden" name="csrfmiddlewaretoken" value="csrf-token-&quot;1&quot;">/,
    );
  });

  test("embeds a live register answer under the web app's arguments as state_data", async () => {
    const params = pageParamsOf(page.text);
    expect(params).toMatchObject({
      page_type: 'home',
      development_environment: false,
      request_language: 'en',
      is_spectator: false,
      login_page: '/login/',
      presence_history_limit_days_for_web_app: 365,
      translation_data: {},
    });
    const state = params.state_data as Record<string, unknown>;
    // The same answer as the app's own POST /register under the same arguments, less the envelope.
    const registered = await owner.client.post('/api/v1/register', WEB_APP_REGISTER_PARAMS);
    expect(registered.status).toBe(200);
    const { result: _result, msg: _msg, ...registerState } = registered.body as Record<string, unknown>;
    expect(Object.keys(state).sort()).toEqual(Object.keys(registerState).sort());
    expect(state.queue_id).toEqual(expect.any(String));
    expect(state.queue_id).not.toBe(registerState.queue_id);
    // Capabilities honoured: user settings as an object, linkifiers as URL templates, the
    // archived and empty-topic capabilities in the realm's settings.
    expect(state.user_settings).toEqual(expect.objectContaining({ default_language: 'en' }));
    expect(state).not.toHaveProperty('enter_sends');
    expect(state.realm_linkifiers).toEqual([]);
    expect((state.subscriptions as { name: string }[]).map((sub) => sub.name)).toEqual(['general']);
    // include_subscribers, as the home view's register: the app's buddy list shows each channel's.
    expect((state.subscriptions as { subscribers?: number[] }[])[0].subscribers).toContain(owner.id);
    expect((state.realm_users as { full_name: string }[]).map((user) => user.full_name)).toContain(
      `O'Brien <b>&amp; "Co"`,
    );
    // client_gravatar: the owner's avatar_url is left to the client.
    const self = (state.realm_users as { user_id: number; avatar_url?: string | null }[]).find(
      (user) => user.user_id === owner.id,
    );
    expect(self?.avatar_url ?? null).toBeNull();
    // The queue is the event tier's: the user polls it.
    const poll = await owner.client.get('/api/v1/events', {
      queue_id: state.queue_id as string,
      last_event_id: -1,
      dont_block: true,
    });
    expect(poll.status).toBe(200);
  });
});

describe("a guest's page", () => {
  test('tells of no default channels, as Zulip pretends for guests; a member is told of them', async () => {
    const guest = await stack.createUser({ fullName: 'Gue St', role: Role.GUEST });
    const member = await stack.createUser({ fullName: 'Mem Ber' });
    const lobby = await stack.createStream({ name: 'lobby', subscribers: [guest.id, member.id] });
    await stack.db.stream.update({ where: { id: lobby.id }, data: { is_default: true } });
    await stack.fixtureWritten();
    const defaultsOf = async (user: TestUser) => {
      const answer = await webRequest(stack, '/', { user });
      expect(answer.status).toBe(200);
      return (pageParamsOf(answer.text).state_data as { realm_default_streams: number[] }).realm_default_streams;
    };
    expect(await defaultsOf(member)).toContain(lobby.id);
    expect(await defaultsOf(guest)).toEqual([]);
    // The same from the API's register.
    const registered = await guest.client.post('/api/v1/register', { fetch_event_types: '["default_streams"]' });
    expect(registered.body.realm_default_streams).toEqual([]);
  });
});

describe('GET / without a session', () => {
  test('redirects to the login page', async () => {
    const answer = await webRequest(stack, '/');
    expect(answer.status).toBe(302);
    expect(answer.headers.location).toBe('/login/?next=/');
  });

  test('is the spectator app when the organisation has web-public channels open to spectators', async () => {
    await stack.db.realm.update({
      where: { id: stack.realm.id },
      data: { enable_spectator_access: true, description: 'A <public> place' },
    });
    await stack.createStream({ name: 'public', isWebPublic: true });
    try {
      const answer = await webRequest(stack, '/');
      expect(answer.status).toBe(200);
      const params = pageParamsOf(answer.text);
      expect(params).toMatchObject({
        page_type: 'home',
        is_spectator: true,
        no_event_queue: true,
        state_data: null,
        realm_rendered_description: '<p>A &lt;public&gt; place</p>',
      });
      expect(answer.text).toContain('<title>Public view of Test Organization | Zulip team chat</title>');
    } finally {
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: false } });
    }
  });

  test("a spectator's language is their language cookie's, else the organisation's", async () => {
    await stack.db.realm.update({
      where: { id: stack.realm.id },
      data: { enable_spectator_access: true, default_language: 'de' },
    });
    await stack.createStream({ name: 'web public for languages', isWebPublic: true });
    const languageOf = async (cookie?: string) => {
      // Through the gateway: it passes the language cookie on (never the session's).
      const page = await fetch(`${stack.gatewayUrl}/`, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
      expect(page.status).toBe(200);
      const html = await page.text();
      const params = pageParamsOf(html);
      expect(params.is_spectator).toBe(true);
      return [params.request_language, /<html lang='([^']*)'/.exec(html)?.[1]];
    };
    try {
      expect(await languageOf()).toEqual(['de', 'de']);
      expect(await languageOf('django_language=fr')).toEqual(['fr', 'fr']);
      expect(await languageOf('sessionid=nonsense; django_language=pt-br')).toEqual(['pt-br', 'pt-br']);
      // Not a language code: the organisation's.
      expect(await languageOf('django_language="<b>"')).toEqual(['de', 'de']);
    } finally {
      await stack.db.realm.update({
        where: { id: stack.realm.id },
        data: { enable_spectator_access: false, default_language: 'en' },
      });
    }
  });
});

describe('GET / without a session, on a server without web-public channels', () => {
  test('redirects to the login page even where the organisation would admit spectators', async () => {
    const closed = await startStack({ services: ['web'], env: { WEB_PUBLIC_STREAMS_ENABLED: 'false' } });
    try {
      await closed.db.realm.update({ where: { id: closed.realm.id }, data: { enable_spectator_access: true } });
      await closed.createStream({ name: 'public', isWebPublic: true });
      const answer = await webRequest(closed, '/');
      expect(answer.status).toBe(302);
      expect(answer.headers.location).toBe('/login/?next=/');
    } finally {
      await closed.close();
    }
  });
});

describe('through the gateway', () => {
  test('a browser that logs in gets the app with its session’s CSRF token and a live queue', async () => {
    const user = await stack.createUser({ fullName: 'Brow Ser', password: 'a long enough password' });
    const login = await stack.postLoginForm({ username: user.deliveryEmail, password: 'a long enough password' });
    expect(login.status).toBe(302);
    const cookies = [login.headers['set-cookie'] ?? []].flat().map((cookie) => cookie.split(';')[0]);
    expect(cookies.some((cookie) => cookie.startsWith('sessionid='))).toBe(true);

    const page = await fetch(`${stack.gatewayUrl}/`, { headers: { cookie: cookies.join('; ') }, redirect: 'manual' });
    expect(page.status).toBe(200);
    const html = await page.text();
    const csrfToken = /name="csrfmiddlewaretoken" value="([^"]+)"/.exec(html)?.[1];
    expect(csrfToken).toEqual(expect.any(String));
    const params = pageParamsOf(html);
    const state = params.state_data as { queue_id: string; user_id: number };
    expect(state.user_id).toBe(user.id);
    // The app's next request: the queue polled over /json with the session and the page's token.
    const poll = await fetch(
      `${stack.gatewayUrl}/json/events?queue_id=${state.queue_id}&last_event_id=-1&dont_block=true`,
      {
        headers: { cookie: cookies.join('; '), 'x-csrftoken': csrfToken! },
      },
    );
    expect(poll.status).toBe(200);

    // Its bundles come through the gateway too, without credentials.
    const script = /<script src="(\/static\/webpack-bundles\/app\.[^"]+\.js)"/.exec(html)![1];
    const bundle = await fetch(`${stack.gatewayUrl}${script}`);
    expect([bundle.status, bundle.headers.get('cache-control')]).toEqual([200, 'public, max-age=31536000, immutable']);
  });
  test("two browsers' pages each carry their own session's CSRF token, nonce and state", async () => {
    const pages = [];
    for (const fullName of ['First Browser', 'Second Browser']) {
      const user = await stack.createUser({ fullName, password: 'a long enough password' });
      const login = await stack.postLoginForm({ username: user.deliveryEmail, password: 'a long enough password' });
      const cookie = String(login.headers['set-cookie']![0]).split(';', 1)[0];
      const session = await new SessionStore(stack.redis, stack.deps.env.REDIS_PREFIX).get(
        sessionIdFromCookies(cookie)!,
      );
      const page = await fetch(`${stack.gatewayUrl}/`, { headers: { cookie }, redirect: 'manual' });
      const html = await page.text();
      pages.push({
        user,
        csrfToken: session!.csrfToken,
        html,
        policy: page.headers.get('content-security-policy')!,
      });
    }
    for (const { user, csrfToken, html, policy } of pages) {
      expect(html).toContain(`name="csrfmiddlewaretoken" value="${csrfToken}"`);
      expect((pageParamsOf(html).state_data as { user_id: number }).user_id).toBe(user.id);
      const nonce = /<script nonce="([0-9a-f]{48})">/.exec(html)![1];
      expect(policy).toContain(`'nonce-${nonce}'`);
    }
    expect(pages[0].csrfToken).not.toBe(pages[1].csrfToken);
    expect(/<script nonce="([0-9a-f]{48})">/.exec(pages[0].html)![1]).not.toBe(
      /<script nonce="([0-9a-f]{48})">/.exec(pages[1].html)![1],
    );
  });
});

describe('the login form', () => {
  test("a POST without the form's CSRF cookie and token is Zulip's 403 page, and logs no one in", async () => {
    const user = await stack.createUser({ fullName: 'Csrf Less', password: 'a long enough password' });
    const credentials = { username: user.deliveryEmail, password: 'a long enough password' };
    const page = await stack.anonymous().get('/login/', {}, { validate: false });
    const token = /name="csrfmiddlewaretoken" value="([A-Za-z0-9]{32})"/.exec(String(page.body))![1];
    const cookie = [page.headers['set-cookie'] ?? []].flat().find((line) => line.startsWith('csrftoken='))!;
    expect(cookie).toMatch(new RegExp(`^csrftoken=${token}; .*HttpOnly; Max-Age=31449600; Path=/; SameSite=Lax$`));
    const refusals = [
      // No cookie, no token.
      await stack.anonymous().post('/accounts/login/', credentials, { validate: false }),
      // The token without its cookie.
      await stack
        .anonymous()
        .post('/accounts/login/', { ...credentials, csrfmiddlewaretoken: token }, { validate: false }),
      // The cookie without the token, and with another token.
      await stack.anonymous().post('/accounts/login/', credentials, {
        validate: false,
        headers: { cookie: `csrftoken=${token}` },
      }),
      await stack
        .anonymous()
        .post(
          '/accounts/login/',
          { ...credentials, csrfmiddlewaretoken: 'x'.repeat(32) },
          { validate: false, headers: { cookie: `csrftoken=${token}` } },
        ),
    ];
    for (const refused of refusals) {
      expect(refused.status).toBe(403);
      expect(refused.headers['content-type']).toContain('text/html');
      expect(String(refused.body)).toContain('Access forbidden (403)');
      expect(refused.headers['set-cookie']).toBeUndefined();
    }
    // The page's token with its cookie: logged in.
    const accepted = await stack
      .anonymous()
      .post(
        '/accounts/login/',
        { ...credentials, csrfmiddlewaretoken: token },
        { validate: false, headers: { cookie: `csrftoken=${token}` } },
      );
    expect(accepted.status).toBe(302);
    expect(String(accepted.headers['set-cookie']![0])).toMatch(/^sessionid=/);
    // A browser that has the cookie keeps it: the next form carries the same token.
    const again = await stack
      .anonymous()
      .get('/login/', {}, { validate: false, headers: { cookie: `csrftoken=${token}` } });
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(String(again.body)).toContain(`name="csrfmiddlewaretoken" value="${token}"`);
  });
});
