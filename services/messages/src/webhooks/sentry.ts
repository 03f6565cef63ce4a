// Sentry (Zulip's zerver/webhooks/sentry): an internal integration's events (an exception with the
// lines around where it was raised, or a captured message) and issues (created, resolved, assigned,
// ignored); a plain webhook's payload, which carries the event without `data`; and the deprecated
// payload of Sentry's old legacy webhooks plugin. The topic is the event's or issue's title.
import type { WebhookIntegration, WebhookMessage, WebhookRequest } from './integration';
import { dig, has, list, str, truthy } from './integration';
import { pythonStr } from '../lib/python-json';

/** Sentry's platform → the code block's language (Pygments' lexer names). */
const SYNTAX_HIGHLIGHT_AS: Record<string, string> = {
  go: 'go',
  java: 'java',
  javascript: 'javascript',
  node: 'javascript',
  python: 'python3',
  ruby: 'ruby',
};

/** "2023-05-31T11:06:16.123+00:00" → "2023-05-31 11:06:16". */
const readableTime = (datetime: string) => datetime.split('.')[0]!.replace('T', ' ');

/** Each line of a frame's context indented as Sentry shows it; empty lines stay empty. */
function tracebackLines(lines: unknown): string {
  if (lines === null || lines === undefined) return '';
  return (lines as unknown[]).map((line) => (line === '' ? '\n' : `     ${pythonStr(line)}\n`)).join('');
}

function eventMessage(request: WebhookRequest, event: unknown): WebhookMessage {
  const title = pythonStr(dig(event, 'title'));
  const platform = dig(event, 'platform');
  // Sentry's Python SDKs before version 7 (Raven) are deprecated; its sample event is one, let through.
  if (
    platform === 'python' &&
    Number.parseInt(pythonStr(dig(event, 'version')), 10) < 7 &&
    dig(event, 'title') !== 'This is an example Python exception'
  ) {
    throw request.unsupported('Raven SDK');
  }
  const header = (kind: string) =>
    `**${kind}:** [${title}](${pythonStr(dig(event, 'web_url'))})\n` +
    `\`\`\`quote\n**level:** ${pythonStr(dig(event, 'level'))}\n**timestamp:** ${readableTime(str(event, 'datetime'))}\n`;

  if (has(event, 'exception')) {
    const filename = dig(event, 'metadata', 'filename');
    const stacktrace = [...list(event, 'exception', 'values')].reverse().find((value) => has(value, 'stacktrace'));
    if (truthy(stacktrace) && truthy(filename)) {
      const frame = [...list(stacktrace, 'stacktrace', 'frames')]
        .reverse()
        .find((candidate) => dig(candidate, 'filename') === filename);
      const contextLine = dig(frame, 'context_line');
      if (truthy(frame) && contextLine !== undefined && contextLine !== null) {
        const syntax = Object.hasOwn(SYNTAX_HIGHLIGHT_AS, pythonStr(platform))
          ? SYNTAX_HIGHLIGHT_AS[pythonStr(platform)]!
          : '';
        return {
          topic: title,
          content:
            `${header('New exception')}**filename:** ${pythonStr(filename)}\n\`\`\`\n\n` +
            `Traceback:\n\`\`\`${syntax}\n${tracebackLines(dig(frame, 'pre_context'))}---> ${pythonStr(contextLine)}\n` +
            `${tracebackLines(dig(frame, 'post_context'))}\`\`\``,
        };
      }
    }
    return { topic: title, content: `${header('New exception')}**filename:** ${pythonStr(filename)}\n\`\`\`` };
  }
  if (has(event, 'logentry')) return { topic: title, content: `${header('New message event')}\`\`\`` };
  throw request.unsupported('unknown-event type');
}

function issueMessage(request: WebhookRequest, action: unknown, issue: unknown, actor: unknown): WebhookMessage {
  const title = pythonStr(dig(issue, 'title'));
  const assignedTo = dig(issue, 'assignedTo');
  const assignee = !truthy(assignedTo)
    ? 'No one'
    : dig(assignedTo, 'type') === 'team'
      ? `team ${pythonStr(dig(assignedTo, 'name'))}`
      : pythonStr(dig(assignedTo, 'name'));
  const actorName = () => pythonStr(dig(actor, 'name'));
  switch (action) {
    case 'created':
      return {
        topic: title,
        content:
          `**New issue created:** ${title}\n\`\`\`quote\n**level:** ${pythonStr(dig(issue, 'level'))}\n` +
          `**timestamp:** ${readableTime(str(issue, 'lastSeen'))}\n**assignee:** ${assignee}\n\`\`\``,
      };
    case 'resolved':
      return { topic: title, content: `Issue **${title}** was marked as resolved by **${actorName()}**.` };
    case 'assigned':
      return {
        topic: title,
        content: `Issue **${title}** has now been assigned to **${assignee}** by **${actorName()}**.`,
      };
    case 'ignored':
      return { topic: title, content: `Issue **${title}** was ignored by **${actorName()}**.` };
    default:
      throw request.unsupported(`${pythonStr(action)} action`);
  }
}

/** Seconds since the epoch → ISO time in UTC, as Python's datetime.fromtimestamp(…, utc).isoformat(). */
function isoFromTimestamp(seconds: number): string {
  const micros = Math.round(seconds * 1e6);
  const whole = new Date(Math.floor(micros / 1000)).toISOString().slice(0, 19);
  return `${whole}.${String(((micros % 1e6) + 1e6) % 1e6).padStart(6, '0')}+00:00`;
}

/**
 * A plain webhook's payload has the event at the top, without `data`: given the event's page and
 * time it reads as an internal integration's. Without an event_id it is the deprecated payload.
 */
function webhookPayloadAsData(payload: unknown): unknown {
  const event = dig(payload, 'event');
  if (!truthy(dig(event, 'event_id'))) return null;
  const withLink = {
    ...(event as Record<string, unknown>),
    web_url: new URL(`events/${pythonStr(dig(event, 'event_id'))}/`, str(payload, 'url')).toString(),
    datetime: isoFromTimestamp(Number(dig(event, 'timestamp') ?? dig(event, 'received'))),
  };
  return { ...(payload as Record<string, unknown>), event: withLink };
}

export const sentry: WebhookIntegration = {
  webhookName: 'Sentry',
  messages(request) {
    const payload = request.json();
    let data = dig(payload, 'data');
    if (data === undefined || data === null) data = webhookPayloadAsData(payload);
    if (!truthy(data)) {
      return [
        {
          topic: pythonStr(dig(payload, 'project_name')),
          content:
            `New [issue](${pythonStr(dig(payload, 'url'))}) (level: ${str(payload, 'level').toUpperCase()}):\n\n` +
            `\`\`\` quote\n${pythonStr(dig(payload, 'message'))}\n\`\`\``,
        },
      ];
    }
    if (has(data, 'event')) return [eventMessage(request, dig(data, 'event'))];
    if (has(data, 'issue')) {
      return [issueMessage(request, dig(payload, 'action'), dig(data, 'issue'), dig(payload, 'actor'))];
    }
    // Python's str() of the list of keys.
    throw request.unsupported(
      `[${Object.keys(data as object)
        .map((key) => `'${key}'`)
        .join(', ')}]`,
    );
  },
};
