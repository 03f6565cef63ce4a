// PagerDuty (Zulip's zerver/webhooks/pagerduty): incidents from each of PagerDuty's three webhook
// versions — V1 and V2 post a list of `messages` (V1 names the event `type`, V2 `event`), V3 one
// `event` — posted to the topic "Incident <number>" (V3: "Incident <title> (#<number>)").
import type { WebhookIntegration, WebhookMessage } from './integration';
import { dig, has, int, list, str, strOrNull, truthy } from './integration';

const V1_ACTIONS: Record<string, string> = {
  'incident.trigger': 'triggered',
  'incident.acknowledge': 'acknowledged',
  'incident.unacknowledge': 'unacknowledged',
  'incident.resolve': 'resolved',
  'incident.assign': 'assigned',
  'incident.escalate': 'escalated',
  'incident.delegate': 'delineated',
};

const V2_ACTIONS: Record<string, string> = {
  'incident.trigger': 'triggered',
  'incident.acknowledge': 'acknowledged',
  'incident.resolve': 'resolved',
  'incident.assign': 'assigned',
};

const V3_ACTIONS: Record<string, string> = {
  'incident.triggered': 'triggered',
  'incident.acknowledged': 'acknowledged',
  'incident.unacknowledged': 'unacknowledged',
  'incident.resolved': 'resolved',
  'incident.reassigned': 'reassigned',
};

/** What each version's payload gives the message. */
interface Incident {
  /** The event's name in its version ("incident.trigger", "incident.triggered"). */
  type: string;
  /** As only_events/exclude_events name it ("triggered"). */
  action: string;
  numberOrTitle: string;
  url: string;
  serviceName: string;
  serviceUrl: string;
  /** "[name](url)" of whom it is assigned to, or "nobody". */
  assignee: string;
  /** "[name](url)" of who changed it, when the payload says. */
  agent?: string;
  triggerMessage: string;
}

const agentLink = (name: string, url: string) => `[${name}](${url})`;
const quote = (message: string) => `\`\`\` quote\n${message}\n\`\`\``;
/** The part of an address before the @ (Python's email.headerregistry.Address(addr_spec=…).username). */
const localPart = (email: string) => email.slice(0, email.lastIndexOf('@') === -1 ? undefined : email.lastIndexOf('@'));

function fromV1(message: unknown, type: string): Incident {
  const incident = dig(message, 'data', 'incident');
  const assignedTo = dig(incident, 'assigned_to_user');
  const resolvedBy = dig(incident, 'resolved_by_user');
  const summary = dig(incident, 'trigger_summary_data');
  const trigger: string[] = [];
  if (truthy(summary)) {
    for (const field of ['subject', 'description']) {
      const text = dig(summary, field) === undefined ? '' : str(summary, field);
      if (text) trigger.push(text);
    }
  }
  return {
    type,
    action: V1_ACTIONS[type]!,
    numberOrTitle: String(int(incident, 'incident_number')),
    url: str(incident, 'html_url'),
    serviceName: str(incident, 'service', 'name'),
    serviceUrl: str(incident, 'service', 'html_url'),
    assignee: truthy(assignedTo)
      ? agentLink(localPart(str(assignedTo, 'email')), str(assignedTo, 'html_url'))
      : 'nobody',
    agent: truthy(resolvedBy) ? agentLink(localPart(str(resolvedBy, 'email')), str(resolvedBy, 'html_url')) : undefined,
    triggerMessage: quote(trigger.join('\n')),
  };
}

function fromV2(message: unknown, type: string): Incident {
  const incident = dig(message, 'incident');
  const assignments = list(incident, 'assignments');
  const changedBy = dig(incident, 'last_status_change_by');
  const description = dig(incident, 'description') === undefined ? null : strOrNull(incident, 'description');
  return {
    type,
    action: V2_ACTIONS[type]!,
    numberOrTitle: String(int(incident, 'incident_number')),
    url: str(incident, 'html_url'),
    serviceName: str(incident, 'service', 'name'),
    serviceUrl: str(incident, 'service', 'html_url'),
    assignee:
      assignments.length > 0
        ? agentLink(str(assignments[0], 'assignee', 'summary'), str(assignments[0], 'assignee', 'html_url'))
        : 'nobody',
    agent:
      changedBy !== undefined && changedBy !== null
        ? agentLink(str(changedBy, 'summary'), str(changedBy, 'html_url'))
        : undefined,
    // Zulip fails on an incident without a description (its template has no trigger_message): none is quoted here.
    triggerMessage: description === null ? '' : quote(description),
  };
}

function fromV3(event: unknown, type: string): Incident {
  const data = dig(event, 'data');
  const assignees = list(data, 'assignees');
  const agent = dig(event, 'agent');
  return {
    type,
    action: V3_ACTIONS[type]!,
    numberOrTitle: `${str(data, 'title')} (#${int(data, 'number')})`,
    url: str(data, 'html_url'),
    serviceName: str(data, 'service', 'summary'),
    serviceUrl: str(data, 'service', 'html_url'),
    assignee: assignees.length > 0 ? agentLink(str(assignees[0], 'summary'), str(assignees[0], 'html_url')) : 'nobody',
    agent: agent !== undefined && agent !== null ? agentLink(str(agent, 'summary'), str(agent, 'html_url')) : undefined,
    // V3 payloads carry no trigger message.
    triggerMessage: '',
  };
}

function incidentMessage(incident: Incident): WebhookMessage {
  const link = `Incident [${incident.numberOrTitle}](${incident.url})`;
  let content: string;
  switch (incident.type) {
    case 'incident.trigger':
    case 'incident.triggered':
    case 'incident.unacknowledge':
    case 'incident.unacknowledged':
      content =
        `${link} ${incident.action} by [${incident.serviceName}](${incident.serviceUrl}) ` +
        `(assigned to ${incident.assignee}).\n\n${incident.triggerMessage}`;
      break;
    case 'incident.resolve':
    case 'incident.resolved':
      content =
        incident.agent !== undefined
          ? `${link} resolved by ${incident.agent}.\n\n${incident.triggerMessage}`
          : `${link} resolved.\n\n${incident.triggerMessage}`;
      break;
    case 'incident.assign':
    case 'incident.reassigned':
      content = `${link} ${incident.action} to ${incident.assignee}.\n\n${incident.triggerMessage}`;
      break;
    default:
      content = `${link} ${incident.action} by ${incident.assignee}.\n\n${incident.triggerMessage}`;
  }
  return { topic: `Incident ${incident.numberOrTitle}`, content, eventType: incident.action };
}

function typeOf(message: unknown, field: string): string | null {
  return dig(message, field) === undefined ? null : strOrNull(message, field);
}

export const pagerduty: WebhookIntegration = {
  webhookName: 'PagerDuty',
  messages(request) {
    const payload = request.json();
    const messages = dig(payload, 'messages');
    const posted: WebhookMessage[] = [];
    if (truthy(messages)) {
      const all = list(payload, 'messages');
      // V1: every message has a `type`.
      for (const message of all) {
        const type = typeOf(message, 'type');
        if (type === null) break;
        if (!Object.hasOwn(V1_ACTIONS, type)) throw request.unsupported(type);
        posted.push(incidentMessage(fromV1(message, type)));
      }
      // V2: every message has an `event`.
      for (const message of all) {
        const type = typeOf(message, 'event');
        if (type === null) break;
        if (!Object.hasOwn(V2_ACTIONS, type)) throw request.unsupported(type);
        posted.push(incidentMessage(fromV2(message, type)));
      }
    } else if (has(payload, 'event')) {
      const event = dig(payload, 'event');
      const type = typeOf(event, 'event_type');
      if (type === null || !Object.hasOwn(V3_ACTIONS, type)) throw request.unsupported(type ?? 'None');
      posted.push(incidentMessage(fromV3(event, type)));
    }
    return posted;
  },
};
