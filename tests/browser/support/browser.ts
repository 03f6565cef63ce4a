// Headless Chromium (Debian's chromium package) driven through playwright-core, and what a
// browser test watches on every page it opens: uncaught page errors, console errors, and every
// request answered with a 4xx or 5xx. A step of a test fails when any of
// them happened during it, with the whole list (method, URL, status, body) in the failure.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags that work on these machines (no GPU, no sandbox as root, no calls home). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const root = path.resolve(__dirname, '..', '..', '..');

export interface Problem {
  who: string;
  kind: 'page error' | 'console error' | 'request failed' | 'HTTP status';
  text: string;
}

/** One person at one browser: their own context (cookies, storage) and page. */
export class Person {
  readonly problems: Problem[] = [];
  private readonly pending = new Set<Promise<void>>();
  /** Console messages a step expects (e.g. the browser's own remark on a header Zulip sends too). */
  expectedConsole: RegExp[] = [];

  constructor(
    readonly name: string,
    readonly context: BrowserContext,
    readonly page: Page,
  ) {
    context.on('weberror', (error) => this.problem('page error', error.error().stack ?? String(error.error())));
    context.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (this.expectedConsole.some((pattern) => pattern.test(message.text()))) return;
      // A refused request: the response handler records it, with its body.
      if (/^Failed to load resource: the server responded with a status of \d+/.test(message.text())) return;
      // The app's own blob: URLs (its unread-count favicon, revoked as the count changes): no server in it.
      if (message.location().url.startsWith('blob:')) return;
      const where = message.location();
      this.problem('console error', `${message.text()} (${where.url}:${where.lineNumber})`);
    });
    context.on('requestfailed', (request) => {
      const reason = request.failure()?.errorText ?? 'failed';
      // A navigation or a long-poll the page itself abandoned (leaving, reloading) is not a failure.
      if (reason === 'net::ERR_ABORTED') return;
      if (request.url().startsWith('blob:')) return;
      this.problem('request failed', `${request.method()} ${request.url()}: ${reason}`);
    });
    context.on('response', (response) => {
      const status = response.status();
      if (status < 400) return;
      const request = response.request();
      const seen = { method: request.method(), url: response.url(), status };
      const reading = response
        .text()
        .catch(() => '(no body)')
        .then((body) =>
          this.problem(
            'HTTP status',
            `${seen.method} ${seen.url} → ${status}: ${body.replace(/\s+/g, ' ').slice(0, 600)}`,
          ),
        );
      this.pending.add(reading);
      void reading.finally(() => this.pending.delete(reading));
    });
  }

  private problem(kind: Problem['kind'], text: string) {
    this.problems.push({ who: this.name, kind, text });
  }

  /** The problems so far, once the bodies of refused requests have been read; clears them. */
  async takeProblems(): Promise<Problem[]> {
    await Promise.all([...this.pending]);
    return this.problems.splice(0);
  }
}

/** A browser with one context per person, and numbered screenshots in var/browser/<suite>/. */
export class BrowserSession {
  private shots = 0;
  readonly people: Person[] = [];

  private constructor(
    readonly browser: Browser,
    readonly baseUrl: string,
    readonly shotDir: string,
  ) {}

  static async start(suite: string, baseUrl: string): Promise<BrowserSession> {
    if (!fs.existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (npm test installs it when run as root)`);
    const shotDir = path.join(root, 'var', 'browser', suite);
    fs.rmSync(shotDir, { recursive: true, force: true });
    fs.mkdirSync(shotDir, { recursive: true });
    // playwright-core gives each launch a fresh user-data dir of its own and removes it on close.
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    return new BrowserSession(browser, baseUrl, shotDir);
  }

  async person(name: string): Promise<Person> {
    const context = await this.browser.newContext({
      baseURL: this.baseUrl,
      viewport: { width: 1280, height: 800 },
      timezoneId: 'UTC',
      locale: 'en-US',
      // Granted, as a person who allowed them would: the app then does not ask with a banner.
      permissions: ['notifications'],
    });
    // Every wait of a step is bounded well below jest's timeout, so a missing element says which
    // (generous: npm test runs two suites at once on two cores).
    context.setDefaultTimeout(30_000);
    const person = new Person(name, context, await context.newPage());
    this.people.push(person);
    return person;
  }

  /** var/browser/<suite>/NN-<step>.png of a person's page. */
  async screenshot(person: Person, step: string): Promise<string> {
    const file = path.join(this.shotDir, `${String(++this.shots).padStart(2, '0')}-${step}.png`);
    await person.page.screenshot({ path: file });
    return file;
  }

  /**
   * Runs one step of a scenario: its problems (in every person's browser) fail it, listed in
   * full, and a failure leaves a screenshot of each person's page.
   */
  async step(name: string, run: () => Promise<void>): Promise<void> {
    let failure: unknown;
    try {
      await run();
    } catch (error) {
      failure = error;
    }
    const problems = (await Promise.all(this.people.map((person) => person.takeProblems()))).flat();
    if (failure === undefined && problems.length === 0) return;
    for (const person of this.people)
      await this.screenshot(person, `${name}-FAILED-${person.name}`).catch(() => undefined);
    const listed = problems.map((problem) => `  [${problem.who}] ${problem.kind}: ${problem.text}`).join('\n');
    const message = [
      `step "${name}" failed`,
      failure === undefined ? '' : `: ${failure instanceof Error ? failure.message : String(failure)}`,
      problems.length ? `\n${problems.length} problem(s) in the browsers:\n${listed}` : '',
    ].join('');
    const error = new Error(message);
    if (failure instanceof Error) error.stack = `${message}\n${failure.stack ?? ''}`;
    throw error;
  }

  async close(): Promise<void> {
    await this.browser.close();
  }
}
