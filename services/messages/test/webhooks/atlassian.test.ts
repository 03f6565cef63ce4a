// What Zulip's tables of Bitbucket and Jira do not show through a post (fixtures/, Zulip 10.2's,
// Apache 2.0): how Bitbucket names a person (its test_get_user_info calls the view's helper
// directly), the event names only_events matches, and Jira's [~user] mentions, which no fixture has.

import fs from 'node:fs';
import path from 'node:path';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { createWebhookBot, FIXTURES_DIR, newestMessageId, type WebhookBot } from './harness';

let stack: Stack;
let owner: TestUser;
let bot: WebhookBot;

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  owner = await stack.createUser({ fullName: 'Bot Owner' });
  bot = await createWebhookBot(stack, owner);
  await stack.createStream({ name: 'atlassian', subscribers: [owner.id, bot.id] });
});
afterAll(() => stack.close());

const fixture = (integration: string, name: string) =>
  JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, integration, `${name}.json`), 'utf8')) as Record<string, any>;

/** Posts the payload and answers the messages it made, oldest first. */
async function post(integration: string, payload: unknown, query = '', headers: Record<string, string> = {}) {
  const since = await newestMessageId(stack);
  const response = await stack
    .anonymous()
    .request(
      'POST',
      `/api/v1/external/${integration}?api_key=${encodeURIComponent(bot.apiKey)}&stream=atlassian${query}`,
      {},
      { body: JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers }, validate: false },
    );
  expect(response.body).toMatchObject({ result: 'success' });
  const fetched = await owner.client.get('/api/v1/messages', {
    anchor: since + 1,
    num_before: 0,
    num_after: 10,
    apply_markdown: false,
  });
  return (fetched.body.messages as { subject: string; content: string }[]).map((m) => [m.subject, m.content]);
}

describe('bitbucket2', () => {
  test('a person is their display name, else their nickname, else "Unknown user"', async () => {
    const fork = fixture('bitbucket2', 'fork');
    const forked = (actor: object) => post('bitbucket2', { ...fork, actor });
    const into =
      'forked the repository into [kolaszek/repository-name2](https://bitbucket.org/kolaszek/repository-name2).';
    expect(await forked({ nickname: 'alice', display_name: 'Alice Smith' })).toEqual([
      ['Repository name', `Alice Smith ${into}`],
    ]);
    expect(await forked({ nickname: 'alice' })).toEqual([['Repository name', `alice ${into}`]]);
    expect(await forked({})).toEqual([['Repository name', `Unknown user ${into}`]]);
  });

  test('only_events names the event types of Zulip’s ALL_EVENT_TYPES', async () => {
    const onlyPullRequests = `&only_events=${encodeURIComponent('["pull_request_*"]')}`;
    expect(await post('bitbucket2', fixture('bitbucket2', 'fork'), onlyPullRequests)).toEqual([]);
    const approved = await post(
      'bitbucket2',
      fixture('bitbucket2', 'pull_request_approved_or_unapproved'),
      onlyPullRequests,
      {
        'x-event-key': 'pullrequest:approved',
      },
    );
    expect(approved).toEqual([
      [
        'Repository name / PR #1 new commit',
        'Tomasz approved [PR #1](https://bitbucket.org/kolaszek/repository-name/pull-requests/1).',
      ],
    ]);
    const excludeRepo = `&exclude_events=${encodeURIComponent('["repo:updated"]')}`;
    const repoUpdated = fixture('bitbucket2', 'repo_updated');
    expect(await post('bitbucket2', repoUpdated, excludeRepo, { 'x-event-key': 'repo:updated' })).toEqual([]);
  });

  test('a pull request event Zulip does not post is answered as unsupported', async () => {
    const response = await stack.anonymous().request(
      'POST',
      `/api/v1/external/bitbucket2?api_key=${encodeURIComponent(bot.apiKey)}&stream=atlassian`,
      {},
      {
        body: JSON.stringify(fixture('bitbucket2', 'pull_request_approved_or_unapproved')),
        headers: { 'content-type': 'application/json', 'x-event-key': 'pullrequest:changes_request_created' },
        validate: false,
      },
    );
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      result: 'error',
      code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
      msg: "The 'pullrequest:changes_request_created' event isn't currently supported by the Bitbucket2 webhook; ignoring",
    });
  });
});

describe('jira', () => {
  test('[~user] names the account whose full name or email start it is, else the Jira user', async () => {
    await stack.createUser({ email: 'desdemona@example.com', fullName: 'Desdemona' });
    const commented = fixture('jira', 'commented_v2');
    commented.comment.body = 'Ask [~desdemona] and [~DESDEMONA], not [~iago].';
    const [[, content]] = (await post('jira', commented)) as [string, string][];
    expect(content).toContain('``` quote\nAsk **Desdemona** and **Desdemona**, not **iago**.\n```');
  });
});
