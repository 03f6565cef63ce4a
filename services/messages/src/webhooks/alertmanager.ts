// Prometheus Alertmanager (Zulip's zerver/webhooks/alertmanager): one message per topic and
// status, the topic from a label (`name`, default "instance"), each alert's line from another
// (`desc`, default "alertname").
import type { WebhookIntegration, WebhookMessage } from './integration';
import { dig, list, str } from './integration';

function labelOrAnnotation(alert: unknown, field: string, fallback: string): string {
  const fromLabels = dig(alert, 'labels', field);
  const found = fromLabels !== undefined ? fromLabels : dig(alert, 'annotations', field);
  return found === undefined ? fallback : str({ value: found }, 'value');
}

export const alertmanager: WebhookIntegration = {
  webhookName: 'Alertmanager',
  messages(request) {
    const payload = request.json();
    const nameField = request.option('name') ?? 'instance';
    const descField = request.option('desc') ?? 'alertname';
    const topics = new Map<string, { firing: string[]; resolved: string[] }>();
    for (const alert of list(payload, 'alerts')) {
      const name = labelOrAnnotation(alert, nameField, '(unknown)');
      const desc = labelOrAnnotation(alert, descField, `<missing field: ${descField}>`);
      const url = str(alert, 'generatorURL').replace('tab=1', 'tab=0');
      const statuses = topics.get(name) ?? { firing: [], resolved: [] };
      topics.set(name, statuses);
      const status = str(alert, 'status');
      if (status !== 'firing' && status !== 'resolved') throw request.unsupported(status);
      statuses[status].push(`${desc} ([source](${url}))`);
    }
    const messages: WebhookMessage[] = [];
    for (const [topic, statuses] of topics) {
      for (const status of ['firing', 'resolved'] as const) {
        const lines = statuses[status];
        if (lines.length === 0) continue;
        const [icon, title] = status === 'firing' ? [':alert:', 'FIRING'] : [':squared_ok:', 'Resolved'];
        const content =
          lines.length === 1
            ? `${icon} **${title}** ${lines[0]}`
            : `${icon} **${title}**\n${lines.map((line) => `* ${line}`).join('\n')}`;
        messages.push({ topic, content });
      }
    }
    return messages;
  },
};
