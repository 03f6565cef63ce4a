// Grafana (Zulip's zerver/webhooks/grafana): unified alerting (8.0 and later: `alerts`, one
// message each, topic "[alertname]") and the legacy alerts of 7.x (topic: the alert's title).
import type { WebhookIntegration, WebhookMessage } from './integration';
import { dig, list, str, truthy } from './integration';
import { pythonStr } from '../lib/python-json';

const STATUS_LINE = (icon: string, state: string) => `${icon} **${state}**\n\n`;

function entries(value: unknown): [string, unknown][] {
  return value && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : [];
}

function unifiedAlert(request: Parameters<WebhookIntegration['messages']>[0], alert: unknown): WebhookMessage {
  const status = str(alert, 'status');
  if (status !== 'firing' && status !== 'resolved') throw request.unsupported(status);
  let content = STATUS_LINE(status === 'firing' ? ':alert:' : ':checkbox:', status.toUpperCase());
  const alertname = dig(alert, 'labels', 'alertname');
  let topic: string;
  if (truthy(alertname)) {
    topic = `[${str(alert, 'labels', 'alertname')}]`;
    content += `**${str(alert, 'labels', 'alertname')}**\n\n`;
  } else {
    topic = `[${str(alert, 'fingerprint')}]`;
  }
  content += `This alert was fired at <time:${str(alert, 'startsAt')}>.`;
  const endsAt = str(alert, 'endsAt');
  if (endsAt !== '0001-01-01T00:00:00Z') content += `\n\nThis alert was resolved at <time:${endsAt}>.`;
  const labels = entries(dig(alert, 'labels'));
  if (labels.length > 0) {
    content += `\n\nLabels:\n${labels.map(([key]) => `- ${key}: ${str(alert, 'labels', key)}\n`).join('')}\n`;
  }
  const values = dig(alert, 'values');
  if (truthy(values)) {
    content += `Values:\n${entries(values)
      .map(([key, value]) => `- ${key}: ${pythonStr(value)}\n`)
      .join('')}\n`;
  } else if (truthy(dig(alert, 'valueString'))) {
    content += `Values:\n${str(alert, 'valueString')}\n\n`;
  }
  const annotations = entries(dig(alert, 'annotations'));
  if (annotations.length > 0) {
    content += `Annotations:\n${annotations.map(([key]) => `- ${key}: ${str(alert, 'annotations', key)}\n`).join('')}`;
  }
  if (truthy(dig(alert, 'generatorURL'))) content += `\n[Generator](${str(alert, 'generatorURL')})`;
  if (truthy(dig(alert, 'silenceURL'))) content += `\n[Silence](${str(alert, 'silenceURL')})`;
  if (truthy(dig(alert, 'imageURL'))) content += `\n[Image](${str(alert, 'imageURL')})`;
  content += '\n';
  return { topic, content, eventType: status };
}

const LEGACY_STATES = ['no_data', 'paused', 'alerting', 'ok', 'pending', 'unknown'];

function legacyAlert(request: Parameters<WebhookIntegration['messages']>[0], payload: unknown): WebhookMessage {
  const topic = str(payload, 'title');
  let evalMatches = '';
  const matches = dig(payload, 'evalMatches');
  if (matches !== undefined && matches !== null) {
    for (const match of list(payload, 'evalMatches')) {
      evalMatches += `**${str(match, 'metric')}:** ${pythonStr(dig(match, 'value'))}\n`;
    }
  }
  const message = dig(payload, 'message') !== undefined ? `${str(payload, 'message')}\n\n` : '';
  const state = str(payload, 'state');
  if (!LEGACY_STATES.includes(state)) throw request.unsupported(state);
  const icon = state === 'alerting' ? ':alert:' : state === 'ok' ? ':squared_ok:' : ':info:';
  let content =
    STATUS_LINE(icon, state.toUpperCase()) +
    `[${str(payload, 'ruleName')}](${str(payload, 'ruleUrl')})\n\n${message}${evalMatches}`;
  if (dig(payload, 'imageUrl') !== undefined) {
    content += `\n[Click to view visualization](${str(payload, 'imageUrl')})`;
  }
  return { topic, content: content.trim(), eventType: state };
}

export const grafana: WebhookIntegration = {
  webhookName: 'Grafana',
  messages(request) {
    const payload = request.json();
    if (dig(payload, 'alerts') !== undefined) {
      return list(payload, 'alerts').map((alert) => unifiedAlert(request, alert));
    }
    return [legacyAlert(request, payload)];
  },
};
