// Every integration by the name in its URL, /api/v1/external/<name> (Zulip's names).
import { alertmanager } from './alertmanager';
import { bitbucket2 } from './bitbucket2';
import { circleci } from './circleci';
import { github } from './github';
import { gitlab } from './gitlab';
import { grafana } from './grafana';
import type { WebhookIntegration } from './integration';
import { jira } from './jira';
import { json } from './json';
import { opsgenie } from './opsgenie';
import { pagerduty } from './pagerduty';
import { sentry } from './sentry';
import { slackIncoming } from './slack-incoming';

export const INTEGRATIONS: ReadonlyMap<string, WebhookIntegration> = new Map([
  ['json', json],
  ['slack_incoming', slackIncoming],
  ['alertmanager', alertmanager],
  ['grafana', grafana],
  ['github', github],
  ['gitlab', gitlab],
  ['bitbucket2', bitbucket2],
  ['jira', jira],
  ['sentry', sentry],
  ['pagerduty', pagerduty],
  ['opsgenie', opsgenie],
  ['circleci', circleci],
]);
