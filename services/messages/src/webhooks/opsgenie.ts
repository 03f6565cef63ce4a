// Opsgenie (Zulip's zerver/webhooks/opsgenie): every alert action, one message to the topic named
// after the Opsgenie integration that sent it, with a line for each detail the action carries.
import type { WebhookIntegration } from './integration';
import { dig, has, list, str } from './integration';

/** The alert's details shown, in this order: field → label. */
const DETAILS: [string, string][] = [
  ['note', 'Note'],
  ['recipient', 'Recipient'],
  ['addedTags', 'Tags added'],
  ['team', 'Team added'],
  ['owner', 'Assigned owner'],
  ['removedTags', 'Tags removed'],
  ['message', 'Message'],
  ['tags', 'Tags'],
  ['escalationName', 'Escalation'],
];

export const opsgenie: WebhookIntegration = {
  webhookName: 'Opsgenie',
  messages(request) {
    const payload = request.json();
    const action = str(payload, 'action');
    const alertId = str(payload, 'alert', 'alertId');
    const integrationName = str(payload, 'integrationName');
    const tags = (dig(payload, 'alert', 'tags') === undefined ? [] : list(payload, 'alert', 'tags'))
      .map((_tag, index) => `\`${str(payload, 'alert', 'tags', index)}\``)
      .join(', ');
    let details = '';
    for (const [field, label] of DETAILS) {
      let value: string;
      if (field === 'tags') {
        if (!tags) continue;
        value = tags;
      } else if (field === 'escalationName' && has(payload, field)) {
        value = str(payload, field);
      } else if (has(payload, field, 'alert')) {
        value = str(payload, 'alert', field);
      } else {
        continue;
      }
      details += `* **${label}**: ${value}\n`;
    }
    return [
      {
        topic: integrationName,
        content:
          `[Opsgenie alert for ${integrationName}](https://app.opsgenie.com/alert/V2#/show/${alertId}):\n` +
          `* **Type**: ${action}\n${details}`,
        eventType: action,
      },
    ];
  },
};
