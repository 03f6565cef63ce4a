// What an integration is: one file that turns a third-party tool's request (its payload, its
// headers, the URL's own options) into the messages Zulip would post, registered by URL name in
// registry.ts. The framework (views/webhooks.ts, actions/webhooks.ts) does the rest: who sends,
// where to (stream/topic), which events are wanted (only_events/exclude_events), the errors.

import { JsonableError } from '@teamchat/core';

/** One message to post: its topic (the URL's `topic` wins over it) and Markdown content. */
export interface WebhookMessage {
  topic: string;
  content: string;
  /** The event's full type, matched against only_events/exclude_events (Zulip's complete_event_type). */
  eventType?: string;
}

export interface WebhookRequest {
  /** The integration's name as Zulip's client and errors spell it ("GitHub"). */
  readonly webhookName: string;
  /** The raw body as text. */
  readonly body: string;
  /** The body parsed as JSON: throws Zulip's "Malformed JSON" (and tells the bot's owner) if it is not. */
  json(): unknown;
  /** The body's form fields (urlencoded), for tools that post forms. */
  form(): URLSearchParams;
  /** The request's Content-Type, without parameters. */
  readonly contentType: string | undefined;
  /** A request header, case-insensitive. */
  header(name: string): string | undefined;
  /** An event-type header the integration cannot work without (Zulip's validate_extract_webhook_http_header). */
  requireHeader(name: string, integrationName: string): string;
  /** An option of the webhook URL's query string (e.g. GitHub's `branches`). */
  option(name: string): string | undefined;
  /** Zulip's UNSUPPORTED_WEBHOOK_EVENT_TYPE for this integration. */
  unsupported(eventType: string | null): UnsupportedWebhookEventTypeError;
  /** The bot's organisation's people, for tools that name them (Jira's assignees and mentions). */
  readonly people: WebhookPeople;
}

/** Accounts of the bot's organisation, found as Zulip's integrations find them, by full name. */
export interface WebhookPeople {
  /** The account with this delivery email, any case, active or not (Zulip's get_user_by_delivery_email). */
  fullNameByDeliveryEmail(email: string): Promise<string | null>;
  /** The first active account (by id) named `name` or whose email starts with it, any case. */
  fullNameByNameOrEmailPrefix(name: string): Promise<string | null>;
}

export interface WebhookIntegration {
  /** As Zulip's webhook_view names it: the client is Zulip<name>Webhook. */
  webhookName: string;
  /** Zero messages is a valid answer (an event nothing is posted for). */
  messages(request: WebhookRequest): WebhookMessage[] | Promise<WebhookMessage[]>;
  /** Extra fields of the success answer (Slack's clients expect {ok: true}). */
  successData?: Record<string, unknown>;
  /**
   * The URL's stream and topic are percent-decoded once more (Zulip's unquote_url_parameters):
   * some tools (Atlassian's) escape the URL twice.
   */
  unquoteUrlParameters?: boolean;
}

/** Zulip's UnsupportedWebhookEventTypeError: answered with HTTP 200, the event is dropped. */
export class UnsupportedWebhookEventTypeError extends JsonableError {
  constructor(webhookName: string, eventType: string | null) {
    super(`The '${eventType}' event isn't currently supported by the ${webhookName} webhook; ignoring`, {
      code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
      status: 200,
      data: { webhook_name: webhookName, event_type: eventType },
    });
  }
}

/** Zulip's AnomalousWebhookPayloadError: the request does not look like this tool's. */
export class AnomalousWebhookPayloadError extends JsonableError {
  constructor(webhookName: string) {
    super(`Unable to parse request: Did ${webhookName} generate this event?`, {
      code: 'ANOMALOUS_WEBHOOK_PAYLOAD',
      data: { webhook_name: webhookName },
    });
  }
}

/** Zulip's MissingHTTPEventHeaderError. */
export class MissingHttpEventHeaderError extends JsonableError {
  constructor(
    readonly header: string,
    /** The tool's name in the notice to the bot's owner. */
    readonly integrationName: string,
  ) {
    super(`Missing the HTTP event header '${header}'`, { code: 'MISSING_HTTP_EVENT_HEADER', data: { header } });
  }
}

/** A payload field read along a path, or undefined when any step is missing (Zulip's WildValue.get). */
export function dig(value: unknown, ...path: (string | number)[]): unknown {
  let current = value;
  for (const step of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[step];
  }
  return current;
}

/** A payload field that must be a string (Zulip's tame(check_string)): a 400 otherwise. */
export function str(value: unknown, ...path: (string | number)[]): string {
  const found = dig(value, ...path);
  if (typeof found !== 'string') throw new JsonableError(`${['payload', ...path].join('.')} is not a string`);
  return found;
}

/** A payload field that must be a list. */
export function list(value: unknown, ...path: (string | number)[]): unknown[] {
  const found = dig(value, ...path);
  if (!Array.isArray(found)) throw new JsonableError(`${['payload', ...path].join('.')} is not a list`);
  return found;
}

/** A payload field that must be an integer. */
export function int(value: unknown, ...path: (string | number)[]): number {
  const found = dig(value, ...path);
  if (typeof found !== 'number' || !Number.isInteger(found)) {
    throw new JsonableError(`${['payload', ...path].join('.')} is not an integer`);
  }
  return found;
}

/** A payload field that must be a boolean. */
export function bool(value: unknown, ...path: (string | number)[]): boolean {
  const found = dig(value, ...path);
  if (typeof found !== 'boolean') throw new JsonableError(`${['payload', ...path].join('.')} is not a boolean`);
  return found;
}

/** A payload field that must be a string or null (Zulip's check_none_or(check_string)). */
export function strOrNull(value: unknown, ...path: (string | number)[]): string | null {
  return dig(value, ...path) === null ? null : str(value, ...path);
}

/** Whether an object has the key (Python's `key in payload`). */
export function has(value: unknown, key: string, ...path: (string | number)[]): boolean {
  const found = dig(value, ...path);
  return found !== null && typeof found === 'object' && key in found;
}

/** Python's truth of a JSON value. */
export function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (value && typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}
