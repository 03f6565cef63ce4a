// Posting Zulip's recorded payloads (fixtures/) through the gateway as the tool would, and reading
// back what arrived, for comparison with what Zulip 10.2 posts for each (expected/<name>.json).

import fs from 'node:fs';
import path from 'node:path';
import type { ApiResponse } from '@teamchat/testing';
import type { Stack, TestUser } from '@teamchat/stack';

export const FIXTURES_DIR = path.join(__dirname, 'fixtures');

/** One case of Zulip's tests: a payload posted to a URL, and what Zulip posts for it. */
export interface ZulipCase {
  test: string;
  fixture?: string;
  /** A body the test wrote itself instead of a fixture (an object: sent as JSON). */
  body?: string | Record<string, unknown> | null;
  /** The webhook URL's query, with APIKEY for the bot's key. */
  query: string;
  /** Absent: application/json; null: none sent. */
  contentType?: string | null;
  /** Django's META names (HTTP_X_GITHUB_EVENT). */
  headers?: Record<string, string>;
  directMessage?: boolean;
  noop?: boolean;
  topic?: string;
  content?: string;
  error?: string;
  basicAuth?: boolean;
  /** Cases that check several messages, in the order posted. */
  messages?: { topic: string; content: string }[];
}

export interface ZulipTable {
  source: string;
  unhandled: [string, string][];
  cases: ZulipCase[];
}

export function zulipTable(integration: string): ZulipTable {
  return JSON.parse(fs.readFileSync(path.join(__dirname, 'expected', `${integration}.json`), 'utf8')) as ZulipTable;
}

/** HTTP_X_GITHUB_EVENT → X-GitHub-Event's wire name (header names are case-insensitive). */
function headerName(metaName: string): string {
  return metaName
    .replace(/^HTTP_/, '')
    .replaceAll('_', '-')
    .toLowerCase();
}

export interface WebhookBot {
  id: number;
  apiKey: string;
  email: string;
  owner: TestUser;
}

/** An incoming-webhook bot of `owner`'s, made through the API as a person would. */
export async function createWebhookBot(stack: Stack, owner: TestUser, shortName = 'webhook'): Promise<WebhookBot> {
  const created = await owner.client.post('/api/v1/bots', {
    full_name: 'Zulip Webhook Bot',
    short_name: shortName,
    bot_type: 2,
  });
  if (created.status !== 200) throw new Error(`bot not created: ${JSON.stringify(created.body)}`);
  const row = await stack.db.userProfile.findUniqueOrThrow({ where: { id: created.body.user_id as number } });
  return { id: row.id, apiKey: created.body.api_key as string, email: row.delivery_email, owner };
}

/** What a case's post made: the answer, and the messages that arrived (oldest first). */
export interface Outcome {
  response: ApiResponse;
  messages: { id: number; type: string; subject: string; content: string; display_recipient: unknown }[];
}

export async function newestMessageId(stack: Stack): Promise<number> {
  const newest = await stack.db.message.findFirst({ orderBy: { id: 'desc' }, select: { id: true } });
  return newest?.id ?? 0;
}

/** A fixture's text: JSON mostly, a form body (.txt) for tools that post forms. */
function fixtureText(integration: string, fixture: string): string {
  const json = path.join(FIXTURES_DIR, integration, `${fixture}.json`);
  return fs.readFileSync(fs.existsSync(json) ? json : path.join(FIXTURES_DIR, integration, `${fixture}.txt`), 'utf8');
}

export async function postCase(
  stack: Stack,
  integration: string,
  bot: WebhookBot,
  testCase: ZulipCase,
  extraHeaders: Record<string, string> = {},
): Promise<Outcome> {
  const since = await newestMessageId(stack);
  const query = testCase.query.replace('APIKEY', encodeURIComponent(bot.apiKey));
  const body =
    testCase.fixture !== undefined
      ? fixtureText(integration, testCase.fixture)
      : typeof testCase.body === 'object' && testCase.body !== null
        ? JSON.stringify(testCase.body)
        : (testCase.body ?? '');
  const headers: Record<string, string> = { ...extraHeaders };
  for (const [name, value] of Object.entries(testCase.headers ?? {})) headers[headerName(name)] = value;
  if (testCase.contentType !== null) headers['content-type'] = testCase.contentType ?? 'application/json';
  const client = testCase.basicAuth ? stack.client({ email: bot.email, apiKey: bot.apiKey }) : stack.anonymous();
  const response = await client.request(
    'POST',
    `/api/v1/external/${integration}?${query}`,
    {},
    {
      body,
      headers,
      validate: false,
    },
  );
  const fetched = await bot.owner.client.get('/api/v1/messages', {
    anchor: since + 1,
    num_before: 0,
    num_after: 50,
    apply_markdown: false,
    // Zulip's tests read the stored topic: "" stays "", not the realm's name for it.
    allow_empty_topic_name: true,
  });
  return { response, messages: fetched.body.messages };
}

/** The difference between what arrived and what Zulip posts, or null when they agree. */
export function difference(testCase: ZulipCase, outcome: Outcome, channel: string): string | null {
  const { response, messages } = outcome;
  if (testCase.error !== undefined) {
    return response.body?.msg === testCase.error
      ? null
      : `answer ${JSON.stringify(response.body)}, Zulip: ${testCase.error}`;
  }
  if (response.status !== 200 || response.body?.result !== 'success') {
    return `answer ${response.status} ${JSON.stringify(response.body)}`;
  }
  if (testCase.noop)
    return messages.length === 0 ? null : `posted ${JSON.stringify(messages[0]!.content)}, Zulip posts nothing`;
  if (testCase.messages) {
    const expected = testCase.messages.map(({ topic, content }) => ({ channel, topic, content }));
    const arrived = messages.map((m) => ({ channel: m.display_recipient, topic: m.subject, content: m.content }));
    return JSON.stringify(arrived) === JSON.stringify(expected)
      ? null
      : `posted ${JSON.stringify(arrived)}, Zulip: ${JSON.stringify(expected)}`;
  }
  // Zulip's check_webhook reads the newest message (a push of a branch and a tag posts two).
  const message = messages[messages.length - 1];
  if (!message) return 'nothing posted';
  if (testCase.directMessage) {
    if (message.type !== 'private') return `a ${message.type} message, Zulip sends a direct message`;
  } else {
    if (message.type !== 'stream' || message.display_recipient !== channel) {
      return `sent to ${JSON.stringify(message.display_recipient)}, Zulip to #${channel}`;
    }
    if (message.subject !== testCase.topic)
      return `topic ${JSON.stringify(message.subject)}, Zulip: ${JSON.stringify(testCase.topic)}`;
  }
  if (message.content !== testCase.content) {
    return `content ${JSON.stringify(message.content)}, Zulip: ${JSON.stringify(testCase.content)}`;
  }
  return null;
}

/** The channel a case's URL names (Zulip's tests' CHANNEL_NAME). */
export function channelOf(testCase: ZulipCase): string | undefined {
  return new URLSearchParams(testCase.query).get('stream') ?? undefined;
}
