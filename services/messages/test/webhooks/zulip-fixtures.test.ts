// Each integration against Zulip's own recorded payloads (fixtures/, copied from Zulip 10.2's
// zerver/webhooks/<name>/fixtures, Apache 2.0) and the topic and message Zulip posts for each
// (expected/<name>.json, facts read from its tests.py). Every case is posted through the gateway
// with the bot's key in the URL, and the stored Markdown (apply_markdown=false) compared.
// A case we knowingly post differently is listed in KNOWN_DIFFERENCES with the reason, and
// fails if it starts agreeing.

import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import {
  channelOf,
  createWebhookBot,
  difference,
  postCase,
  zulipTable,
  type WebhookBot,
  type ZulipCase,
} from './harness';

/** Event headers Zulip's tests derive from the fixture's name (each view's fixture_to_headers). */
const FIXTURE_HEADERS: Record<string, (fixture: string) => Record<string, string>> = {
  // get_http_headers_from_filename: the name up to "__" is the event.
  github: (fixture) => ({ 'x-github-event': fixture.split('__')[0]! }),
  // "push_hook__push_commits_more_than_limit" → "Push Hook"; build fixtures set theirs in the test.
  gitlab: (fixture): Record<string, string> =>
    fixture.startsWith('build')
      ? {}
      : {
          'x-gitlab-event': fixture
            .split('__')[0]!
            .replaceAll('_', ' ')
            .replace(/[A-Za-z]+/g, (word) => word[0]!.toUpperCase() + word.slice(1).toLowerCase()),
        },
};

/**
 * Zulip tests whose facts the table could not take (they patch Zulip's internals rather than post
 * a payload): integration → test name → what it checks and where we check it instead.
 */
const NOT_IN_TABLE: Record<string, Record<string, string>> = {
  slack_incoming: {
    test_message_without_payload:
      "Slack's own error envelope ({ok: false, error}) is not given: a form without `payload` is answered with " +
      "Zulip's envelope, 400 \"Missing 'payload' argument\" (the same message)",
  },
  bitbucket2: {
    test_get_user_info:
      'a unit test of get_user_info (display_name, else nickname, else "Unknown user"): atlassian.test.ts posts ' +
      'a fixture with each kind of actor',
  },
};

/** integration → Zulip test name → why we post something else. */
const KNOWN_DIFFERENCES: Record<string, Record<string, string>> = {};

const INTEGRATIONS = [
  'json',
  'slack_incoming',
  'alertmanager',
  'grafana',
  'github',
  'gitlab',
  'bitbucket2',
  'jira',
  'sentry',
  'pagerduty',
  'opsgenie',
  'circleci',
];

/** Integrations whose URL's stream and topic Zulip decodes once more (unquote_url_parameters). */
const UNQUOTES_URL = new Set(['bitbucket2', 'jira']);

/** People of Zulip's test realm whom an integration's fixtures name by email; ours has them too. */
const REALM_PEOPLE: Record<string, { email: string; fullName: string }[]> = {
  jira: [{ email: 'othello@zulip.com', fullName: 'Othello, the Moor of Venice' }],
};

let stack: Stack;
let owner: TestUser;
let bot: WebhookBot;
const channels = new Set<string>();

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  owner = await stack.createUser({ fullName: 'Bot Owner' });
  bot = await createWebhookBot(stack, owner);
  for (const person of Object.values(REALM_PEOPLE).flat()) await stack.createUser(person);
});
afterAll(() => stack.close());

async function channelFor(integration: string, testCase: ZulipCase): Promise<string> {
  const named = channelOf(testCase) ?? 'webhooks';
  const name = UNQUOTES_URL.has(integration) ? decodeURIComponent(named) : named;
  if (!channels.has(name)) {
    channels.add(name);
    await stack.createStream({ name, subscribers: [owner.id, bot.id] });
  }
  return name;
}

describe.each(INTEGRATIONS)('%s', (integration) => {
  const table = zulipTable(integration);
  const known = KNOWN_DIFFERENCES[integration] ?? {};

  test('every Zulip test is in the table or listed with its reason', () => {
    expect(table.unhandled.map(([name]) => name).sort()).toEqual(Object.keys(NOT_IN_TABLE[integration] ?? {}).sort());
  });

  test.each(table.cases.map((testCase) => [testCase.test, testCase] as const))('%s', async (name, testCase) => {
    const channel = await channelFor(integration, testCase);
    const headers = testCase.fixture ? (FIXTURE_HEADERS[integration]?.(testCase.fixture) ?? {}) : {};
    const found = difference(testCase, await postCase(stack, integration, bot, testCase, headers), channel);
    if (known[name]) expect(found).not.toBeNull();
    else expect(found).toBeNull();
  });
});
