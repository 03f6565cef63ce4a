// The event types Sentry's, PagerDuty's, Opsgenie's and CircleCI's payloads are filtered by
// (only_events/exclude_events), as each Zulip view names them in ALL_EVENT_TYPES
// (zerver/webhooks/<name>/view.py): one of Zulip's fixtures each, posted with its event type
// excluded (nothing arrives) and then as the only one wanted (it arrives).

import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { createWebhookBot, postCase, type WebhookBot } from './harness';

let stack: Stack;
let owner: TestUser;
let bot: WebhookBot;

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  owner = await stack.createUser({ fullName: 'Bot Owner' });
  bot = await createWebhookBot(stack, owner);
  await stack.createStream({ name: 'alerts', subscribers: [owner.id, bot.id] });
});
afterAll(() => stack.close());

test.each([
  ['pagerduty', 'triggered_v3', 'triggered', 'Incident Test Incident 3 (#9)'],
  ['pagerduty', 'resolve_v2', 'resolved', 'Incident 33'],
  ['pagerduty', 'unacknowledge', 'unacknowledged', 'Incident 3'],
  ['opsgenie', 'addnote', 'AddNote', 'Integration1'],
  ['circleci', 'ping', 'ping', 'Test event'],
  ['circleci', 'github_workflow_completed', 'workflow-completed', 'circleci-webhook-test'],
  ['circleci', 'gitlab_job_completed', 'job-completed', 'circleci-webhook-test'],
])('%s %s is the event %s', async (integration, fixture, eventType, topic) => {
  const post = (filter: string) =>
    postCase(stack, integration, bot, {
      test: fixture,
      fixture,
      query: `api_key=APIKEY&stream=alerts&${filter}=${encodeURIComponent(JSON.stringify([eventType]))}`,
    });
  const excluded = await post('exclude_events');
  expect(excluded.response.body).toEqual({ result: 'success', msg: '' });
  expect(excluded.messages).toEqual([]);
  const wanted = await post('only_events');
  expect(wanted.response.body).toEqual({ result: 'success', msg: '' });
  expect(wanted.messages.map((message) => message.subject)).toEqual([topic]);
});

test("Sentry's messages carry no event type: only_events does not drop them, as in Zulip", async () => {
  const posted = await postCase(stack, 'sentry', bot, {
    test: 'issue_resolved',
    fixture: 'issue_resolved',
    query: `api_key=APIKEY&stream=alerts&only_events=${encodeURIComponent('["created"]')}`,
  });
  expect(posted.messages.map((message) => message.subject)).toEqual([
    'Exception: program has entered an invalid state.',
  ]);
});
