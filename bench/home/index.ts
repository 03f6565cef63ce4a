// Benchmark of Zulip's web app's home page: what the page costs over the register it embeds.
// One organisation of 8,000 users (bench/lib/organisation.ts), one user logged in with a session
// as a browser is, and in turns:
//   1. GET / through the gateway with the session cookie: the gateway resolves the session and
//      forwards to the web service, which calls the event tier's POST /register under the home
//      page's arguments and embeds the answer in Zulip's page;
//   2. POST /api/v1/register through the gateway with the same user's API key and the same
//      arguments: the register alone.
// Client milliseconds (median) and the stack's CPU per request (gateway, web, event tier and the
// benchmark database's PostgreSQL backends), page vs register; the goal is within 1.2x.
// Run: npm run bench -- home   (see bench/README.md).

import http from 'node:http';
import { chromium } from 'playwright-core';
import { createLogger } from '@teamchat/core';
import { hashPassword } from '@teamchat/domain';
import { createBaseDeps } from '@teamchat/runtime';
import { createTestDatabase } from '@teamchat/testing';
import { HOME_REGISTER_PARAMS } from '../../services/web/src/lib/page-params';
import { CHROMIUM, CHROMIUM_ARGS } from '../../tests/browser/support/browser';
import { createOrganisation } from '../lib/organisation';
import { benchEnv, databaseBackendPids, onInterrupt, startService, stop, type Proc } from '../lib/procs';
import { median, report, type Row } from '../lib/report';
import { describeTurns, measureTurn, type TurnFigure } from '../lib/turns';

const QUICK = process.env.BENCH_QUICK === '1';
const num = (name: string, quick: number, full: number) => Number(process.env[name] ?? (QUICK ? quick : full));
const USERS = num('BENCH_HOME_USERS', 2000, 8000);
/** Requests of each kind per turn, one at a time. */
const REQUESTS = num('BENCH_HOME_REQUESTS', 5, 10);
/** Turns (page, register, page, register...); medians are reported. */
const TURNS = num('BENCH_HOME_TURNS', 2, 4);
const PASSWORD = 'bench home password';
/** Messages in the user's channel (the first message list's). */
const MESSAGES = num('BENCH_HOME_MESSAGES', 50, 50);
/** Logins and cold opens in chromium (0: no browser phase). */
const BROWSER_RUNS = num('BENCH_HOME_BROWSER_RUNS', 2, 5);
/** The app's message rows on screen (the app keeps other views' lists in the page, hidden). */
const MESSAGE_ROW = '.message-list:visible .message_row';

const started = performance.now();
const log = (line: string) =>
  console.log(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}`);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: number;
  ms: number;
  body: Buffer;
}

function request(url: string, options: http.RequestOptions, body?: string): Promise<Answer> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          bytes: all.length,
          ms: performance.now() - startedAt,
          body: all,
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A turn of REQUESTS requests, each answer checked. */
function measure(
  send: () => Promise<Answer>,
  check: (answer: Answer) => void,
  pids: Record<string, number>,
  backends: number[],
): Promise<TurnFigure> {
  return measureTurn(REQUESTS, pids, backends, async () => {
    const answer = await send();
    check(answer);
    return answer;
  });
}

/**
 * Chromium as a person uses the app, BROWSER_RUNS times each, medians: (1) a fresh browser
 * (nothing cached, no cookie) on the login form, from its submit to the first message row of
 * /#feed (the login's next=); (2) in that browser, now logged in and with the app's files in its
 * cache, a new tab opening /#feed, from navigation to the first message row.
 */
async function browserPhase(
  gateway: string,
  host: string,
  email: string,
): Promise<{ loginMs: number; openMs: number; logins: number[]; opens: number[] }> {
  const port = new URL(gateway).port;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${host} 127.0.0.1`],
  });
  const origin = `http://${host}:${port}`;
  const logins: number[] = [];
  const opens: number[] = [];
  try {
    for (let run = 0; run < BROWSER_RUNS; run++) {
      const context = await browser.newContext({ baseURL: origin, viewport: { width: 1280, height: 900 } });
      try {
        const page = await context.newPage();
        await page.goto(`/login/?next=${encodeURIComponent('/#feed')}`);
        await page.locator('#login_form #id_username').fill(email);
        await page.locator('#login_form #id_password').fill(PASSWORD);
        const submitted = performance.now();
        await page.locator('#login_form button[type="submit"]').click();
        await page.locator(MESSAGE_ROW).first().waitFor({ state: 'visible', timeout: 120_000 });
        logins.push(performance.now() - submitted);
        await page.close();

        const tab = await context.newPage();
        const opened = performance.now();
        await tab.goto('/#feed', { waitUntil: 'commit' });
        await tab.locator(MESSAGE_ROW).first().waitFor({ state: 'visible', timeout: 120_000 });
        opens.push(performance.now() - opened);
      } finally {
        await context.close();
      }
      log(
        `   chromium run ${run + 1}: login → first row ${logins.at(-1)!.toFixed(0)} ms, open → first row ${opens.at(-1)!.toFixed(0)} ms`,
      );
    }
  } finally {
    await browser.close();
  }
  return { loginMs: median(logins), openMs: median(opens), logins, opens };
}

async function main(): Promise<void> {
  const database = await createTestDatabase();
  onInterrupt(() => database.drop());
  const { env, serviceEnv } = benchEnv(database.url, { prefix: 'bench:home:', eventPartitions: 1 });
  const deps = createBaseDeps('bench', { ...env, DB_POOL_SIZE: 4 }, { logger: createLogger('bench', 'warn') });
  const procs: Proc[] = [];
  try {
    log(`» an organisation of ${USERS} users; ${TURNS} turns of ${REQUESTS} home pages and ${REQUESTS} registers`);
    const { realm, users } = await createOrganisation(deps, 'home', 'Home', USERS);
    const user = users[Math.floor(users.length / 2)];
    await deps.db.userProfile.update({ where: { id: user.id }, data: { password_hash: await hashPassword(PASSWORD) } });
    await deps.reads.recordWrite(realm.id);
    await deps.db.$executeRawUnsafe('VACUUM ANALYZE');

    // The users service checks the login's password; the pages and registers do not touch it.
    const usersProc = await startService('users', 'users', { ...serviceEnv, DB_POOL_SIZE: '3' });
    procs.push(usersProc);
    const usersUrl = `http://127.0.0.1:${usersProc.port}`;
    const events = await startService('events', 'events', { ...serviceEnv, DB_POOL_SIZE: '10', USERS_URL: usersUrl });
    procs.push(events);
    const eventsUrl = `http://127.0.0.1:${events.port}`;
    // The app's first message list: its channels and messages come from these two.
    const channelsProc = await startService('channels', 'channels', { ...serviceEnv, DB_POOL_SIZE: '3' });
    procs.push(channelsProc);
    const messagesProc = await startService('messages', 'messages', { ...serviceEnv, DB_POOL_SIZE: '4' });
    procs.push(messagesProc);
    const web = await startService('web', 'web', {
      ...serviceEnv,
      DB_POOL_SIZE: '3',
      EVENTS_URL: eventsUrl,
      USERS_URL: usersUrl,
    });
    procs.push(web);
    const gatewayProc = await startService('gateway', 'gateway', {
      ...serviceEnv,
      DB_POOL_SIZE: '3',
      USERS_URL: usersUrl,
      EVENTS_URL: eventsUrl,
      WEB_URL: `http://127.0.0.1:${web.port}`,
      CHANNELS_URL: `http://127.0.0.1:${channelsProc.port}`,
      MESSAGES_URL: `http://127.0.0.1:${messagesProc.port}`,
      RATE_LIMIT_ENABLED: 'false',
    });
    procs.push(gatewayProc);
    const gateway = `http://127.0.0.1:${gatewayProc.port}`;
    const pids = { gateway: gatewayProc.child.pid!, web: web.child.pid!, events: events.child.pid! };

    // A browser's session, as the login form makes it (its page first: the CSRF cookie and token).
    const loginPage = await request(`${gateway}/login/`, { method: 'GET', headers: { host: realm.host } });
    const csrfCookie = (loginPage.headers['set-cookie'] ?? []).map((line) => line.split(';')[0]).join('; ');
    const csrfToken = /name="csrfmiddlewaretoken" value="([^"]+)"/.exec(loginPage.body.toString())?.[1] ?? '';
    const form = new URLSearchParams({
      username: user.email,
      password: PASSWORD,
      csrfmiddlewaretoken: csrfToken,
    }).toString();
    const login = await request(
      `${gateway}/accounts/login/`,
      {
        method: 'POST',
        headers: {
          host: realm.host,
          cookie: csrfCookie,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(form),
        },
      },
      form,
    );
    const cookie = (login.headers['set-cookie'] ?? []).map((line) => line.split(';')[0]).join('; ');
    if (login.status !== 302 || !cookie.includes('sessionid='))
      throw new Error(`login: ${login.status} ${login.body.toString().slice(0, 300)}`);

    const apiAuth = `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString('base64')}`;
    const apiPost = async (path: string, params: Record<string, string>) => {
      const body = new URLSearchParams(params).toString();
      const answer = await request(
        `${gateway}${path}`,
        {
          method: 'POST',
          headers: {
            host: realm.host,
            authorization: apiAuth,
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': Buffer.byteLength(body),
          },
        },
        body,
      );
      if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.body.toString().slice(0, 300)}`);
    };
    // A channel of the user's with MESSAGES messages: what the app's first message list shows.
    await apiPost('/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'bench home' }]) });
    for (let i = 0; i < MESSAGES; i++)
      await apiPost('/api/v1/messages', {
        type: 'stream',
        to: 'bench home',
        topic: `topic ${i % 5}`,
        content: `Message ${i} of the home bench, with **some** markup and a [link](https://example.com/${i}).`,
      });

    const registerForm = new URLSearchParams(
      Object.entries(HOME_REGISTER_PARAMS).map(([name, value]): [string, string] => [
        name,
        typeof value === 'string' ? value : JSON.stringify(value),
      ]),
    ).toString();
    const homePage = () => request(`${gateway}/`, { method: 'GET', headers: { host: realm.host, cookie } });
    const register = () =>
      request(
        `${gateway}/api/v1/register`,
        {
          method: 'POST',
          headers: {
            host: realm.host,
            authorization: `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': Buffer.byteLength(registerForm),
          },
        },
        registerForm,
      );
    const checkPage = (answer: Answer) => {
      if (answer.status !== 200 || !answer.body.includes('"queue_id"'))
        throw new Error(`home page: ${answer.status} ${answer.body.toString().slice(0, 300)}`);
    };
    const checkRegister = (answer: Answer) => {
      if (answer.status !== 200) throw new Error(`register: ${answer.status} ${answer.body.toString().slice(0, 300)}`);
    };

    // Warm-up: the code paths compiled, the event tier's realm-wide state built once.
    for (let i = 0; i < 3; i++) {
      checkPage(await homePage());
      checkRegister(await register());
    }
    const backends = await databaseBackendPids(deps.db);
    const pages: TurnFigure[] = [];
    const registers: TurnFigure[] = [];
    for (let turn = 0; turn < TURNS; turn++) {
      pages.push(await measure(homePage, checkPage, pids, backends));
      registers.push(await measure(register, checkRegister, pids, backends));
    }
    log(`   home page: ${describeTurns(pages)}; ${(pages[0].bytes / 1024).toFixed(0)} KiB`);
    log(`   register:  ${describeTurns(registers)}; ${(registers[0].bytes / 1024).toFixed(0)} KiB`);
    const page = { ms: median(pages.map((f) => f.ms)), cpuMs: median(pages.map((f) => f.cpuMs)) };

    const alone = { ms: median(registers.map((f) => f.ms)), cpuMs: median(registers.map((f) => f.cpuMs)) };
    const webCpu = median(pages.map((f) => f.byProcess.web));
    const browser = BROWSER_RUNS > 0 ? await browserPhase(gateway, realm.host, user.email) : null;
    const rows: Row[] = [
      {
        metric: `home page vs POST /register at ${USERS} users, client ms (median)`,
        value: page.ms,
        baseline: alone.ms,
        unit: 'ms',
        better: 'lower',
        goal: '<= 1.2',
      },
      {
        metric: `home page vs POST /register at ${USERS} users, stack CPU ms per request`,
        value: page.cpuMs,
        baseline: alone.cpuMs,
        unit: 'ms',
        better: 'lower',
        goal: '<= 1.2',
      },
      {
        metric: "the web service's CPU per page vs the register's stack CPU",
        value: webCpu,
        baseline: alone.cpuMs,
        unit: 'ms',
        better: 'lower',
      },
      ...(browser
        ? [
            {
              metric: "chromium: the login form's submit to the first message row of /#feed vs GET / (ms, median)",
              value: browser.loginMs,
              baseline: page.ms,
              unit: 'ms',
              better: 'lower' as const,
            },
            {
              metric: 'chromium: a cold open of /#feed with a session to its first message row vs GET / (ms, median)',
              value: browser.openMs,
              baseline: page.ms,
              unit: 'ms',
              better: 'lower' as const,
            },
            {
              metric: 'chromium: a cold open of /#feed to its first message row vs POST /register (ms, median)',
              value: browser.openMs,
              baseline: alone.ms,
              unit: 'ms',
              better: 'lower' as const,
            },
          ]
        : []),
    ];
    console.log('');
    report('home', rows, {
      browser,
      users: USERS,
      pages,
      registers,
      pageBytes: pages[0].bytes,
      registerBytes: registers[0].bytes,
    });
  } finally {
    await Promise.all(procs.map(stop));
    await deps.close();
    await database.drop();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
