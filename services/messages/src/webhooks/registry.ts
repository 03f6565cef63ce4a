// Every integration by the name in its URL, /api/v1/external/<name> (Zulip's names).
import { alertmanager } from './alertmanager';
import { circleci } from './circleci';
import { github } from './github';
import { gitlab } from './gitlab';
import { grafana } from './grafana';
import type { WebhookIntegration } from './integration';
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
  ['sentry', sentry],
  ['pagerduty', pagerduty],
  ['opsgenie', opsgenie],
  ['circleci', circleci],
]);
