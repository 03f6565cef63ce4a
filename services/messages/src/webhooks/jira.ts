// Jira (Zulip's zerver/webhooks/jira): the payload's webhookEvent names the event (an issue
// created, updated or deleted, a comment created, updated or deleted); an issue update bundles
// reassignments, comments and transitions, told apart by issue_event_type_name. The topic is
// "<KEY-n>: <summary>"; Jira's wiki markup in comments becomes Markdown, and people Jira names
// become the Zulip account's name when there is one.

import {
  AnomalousWebhookPayloadError,
  dig,
  has,
  list,
  str,
  strOrNull,
  truthy,
  type WebhookIntegration,
  type WebhookPeople,
} from './integration';
import { endsWithPunctuation } from './git';

type P = unknown;

/** Events Jira sends that post nothing. */
const IGNORED_EVENTS = [
  'attachment_created',
  'issuelink_created',
  'issuelink_deleted',
  'jira:version_released',
  'jira:worklog_updated',
  'sprint_closed',
  'sprint_started',
  'worklog_created',
  'worklog_updated',
];

/** A field along a path, or `fallback` where the path is missing (Zulip's get_in), as a string. */
function strOr(payload: P, path: string[], fallback = ''): string {
  let current = payload;
  for (const key of path) {
    if (!has(current, key)) return fallback;
    current = dig(current, key);
  }
  return str(current);
}

/** A string field that may be missing or null (Zulip's get(...).tame(check_none_or(check_string))). */
const optionalStr = (value: unknown, key: string) => (dig(value, key) === undefined ? null : strOrNull(value, key));

/** Jira's wiki markup as Markdown, as far as simple rewriting goes. */
async function jiraMarkupToMarkdown(text: string, people: WebhookPeople): Promise<string> {
  // Python's "." (any character but a newline) where a rule stops at the line's end.
  let content = text
    .replace(/\*([^*]+)\*/g, '**$1**')
    .replace(/\{\{([^*]+?)\}\}/g, '`$1`')
    .replace(/bq\. ([^\n]*)/g, '> $1')
    .replace(/\{quote\}([\s\S]*?)\{quote\}/g, '~~~ quote\n$1\n~~~')
    .replace(/\{noformat\}([\s\S]*?)\{noformat\}/g, '~~~\n$1\n~~~')
    .replace(/\{code[^\n]*\}([\s\S]*?)\{code\}/g, '~~~\n$1\n~~~')
    // [https://example.com] is a bare link, [Title|https://example.com] a titled one.
    .replace(/\[([^|~]+?)\]/g, '[$1]($1)')
    .replace(/\[(?:([^|~]+)\|)([^\]]*)\]/g, '[$1]($2)');
  // [~username] mentions name the Zulip account of that name (or email) if there is one.
  for (const [, username] of [...content.matchAll(/\[~([^\n]*?)\]/g)]) {
    const name = (await people.fullNameByNameOrEmailPrefix(username!)) ?? username;
    content = content.replaceAll(`[~${username}]`, `**${name}**`);
  }
  return content;
}

/** Comments come with "!" escaped as "\\!". */
const unescapeComment = (comment: string) => comment.replaceAll('\\!', '!');

/** Old Jira versions send comment events without the issue: the issue's internal id is in the comment's URL. */
function issueId(payload: P): string {
  if (!has(payload, 'issue')) return str(payload, 'comment', 'self').split('/').at(-3) ?? '';
  return strOr(payload, ['issue', 'key']);
}

function issueTitle(payload: P): string {
  if (!has(payload, 'issue')) return 'Upgrade Jira to get the issue title here.';
  return strOr(payload, ['issue', 'fields', 'summary']);
}

/** The issue as a link to its /browse page, guessed from the issue's REST URL. */
function issueLink(payload: P, id = issueId(payload), withTitle = false): string {
  const text = withTitle ? `${id}: ${issueTitle(payload)}` : id;
  const base = /^([^\n]*)\/rest\/api\//.exec(strOr(payload, ['issue', 'self']));
  return base ? `[${text}](${base[1]}/browse/${id})` : text;
}

const author = (payload: P) => strOr(payload, ['user', 'displayName']);
const commentAuthor = (payload: P) => str(payload, 'comment', 'author', 'displayName');

/** The issue update's kind, for updates that do not name it. */
function updateKind(payload: P): string {
  const kind = has(payload, 'issue_event_type_name') ? str(payload, 'issue_event_type_name') : '';
  if (kind !== '') return kind;
  if (truthy(dig(payload, 'comment'))) return 'issue_commented';
  if (truthy(dig(payload, 'transition'))) return 'issue_transited';
  return kind;
}

function changeLine(field: string | null, from: string | null, to: string): string {
  return `* Changed ${field ?? 'None'}${from ? ` from **${from}**` : ''}${to ? ` to ${to}\n` : ''}`;
}

async function issueUpdated(payload: P, people: WebhookPeople): Promise<string> {
  const issue = issueLink(payload, strOr(payload, ['issue', 'key']), true);
  const assigneeEmail = strOr(payload, ['issue', 'fields', 'assignee', 'emailAddress']);
  let assignee = '';
  if (assigneeEmail !== '') {
    assignee = `**${(await people.fullNameByDeliveryEmail(assigneeEmail)) ?? assigneeEmail}**`;
  }
  const assignedTo = assignee ? ` (assigned to ${assignee})` : '';
  const kind = updateKind(payload);
  if (kind.includes('comment')) {
    const verb =
      kind === 'issue_commented'
        ? 'commented on'
        : kind === 'issue_comment_edited'
          ? 'edited a comment on'
          : 'deleted a comment from';
    const who = dig(payload, 'webhookEvent') === 'comment_created' ? commentAuthor(payload) : author(payload);
    const content = `${who} ${verb} ${issue}${assignedTo}`;
    const comment = strOr(payload, ['comment', 'body']);
    if (!comment) return `${content}.`;
    return `${content}:\n\n\`\`\` quote\n${await jiraMarkupToMarkdown(comment, people)}\n\`\`\``;
  }
  let content = `${author(payload)} updated ${issue}${assignedTo}:\n\n`;
  const changelog = dig(payload, 'changelog');
  if (truthy(changelog)) {
    for (const item of list(payload, 'changelog', 'items')) {
      const field = optionalStr(item, 'field');
      const to = field === 'assignee' && assignee ? assignee : `**${optionalStr(item, 'toString') ?? 'None'}**`;
      content += changeLine(field, optionalStr(item, 'fromString'), to);
    }
  } else if (kind === 'issue_transited') {
    const to = `**${strOr(payload, ['transition', 'to_status'])}**`;
    content += changeLine('status', strOr(payload, ['transition', 'from_status']), to);
  }
  return content;
}

function issueCreated(payload: P): string {
  return [
    `${author(payload)} created ${issueLink(payload, undefined, true)}:`,
    '',
    `* **Priority**: ${strOr(payload, ['issue', 'fields', 'priority', 'name'])}`,
    `* **Assignee**: ${strOr(payload, ['issue', 'fields', 'assignee', 'displayName'], 'no one')}`,
  ].join('\n');
}

function issueDeleted(payload: P): string {
  const period = endsWithPunctuation(issueTitle(payload)) ? '' : '.';
  return `${author(payload)} deleted ${issueLink(payload, undefined, true)}${period}`;
}

const commentEvent = (verb: string, strike: string) => (payload: P) => {
  const comment = unescapeComment(str(payload, 'comment', 'body'));
  return (
    `${commentAuthor(payload)} ${verb} ${issueLink(payload, undefined, true)}\n` +
    `\`\`\` quote\n${strike}${comment}${strike}\n\`\`\`\n`
  );
};

/** Each event's message; its keys are the events only_events and exclude_events name. */
const BODIES: Record<string, (payload: P, people: WebhookPeople) => string | Promise<string>> = {
  'jira:issue_created': issueCreated,
  'jira:issue_deleted': issueDeleted,
  'jira:issue_updated': issueUpdated,
  comment_created: commentEvent('commented on', ''),
  comment_updated: commentEvent('updated their comment on', ''),
  comment_deleted: commentEvent('deleted their comment on', '~~'),
};

export const jira: WebhookIntegration = {
  webhookName: 'Jira',
  unquoteUrlParameters: true,
  async messages(request) {
    const payload = request.json();
    // Transitions from old Jira versions name no event.
    let event = optionalStr(payload, 'webhookEvent');
    if (event === null && truthy(dig(payload, 'transition'))) event = 'jira:issue_updated';
    if (event !== null && IGNORED_EVENTS.includes(event)) return [];
    if (event === null) throw new AnomalousWebhookPayloadError('Jira');
    const body = Object.hasOwn(BODIES, event) ? BODIES[event] : undefined;
    if (!body) throw request.unsupported(event);
    const content = await body(payload, request.people);
    return [{ topic: `${issueId(payload)}: ${issueTitle(payload)}`, content, eventType: event }];
  },
};
