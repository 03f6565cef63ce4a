// POST /api/v1/external/<integration>: a third-party tool's webhook (Zulip's webhook_view). The
// gateway authenticated the bot (api_key in the query string, or HTTP Basic); here the body is
// read as the integration needs it and the URL's options parsed.

import { JsonableError, optional, param, ResourceNotFoundError, v, type AuthedContext } from '@teamchat/core';
import { doReceiveWebhook, InvalidWebhookJsonError } from '../actions/webhooks';
import type { MessagesDeps } from '../deps';
import { webhookPeople } from '../lib/webhook-people';
import {
  MissingHttpEventHeaderError,
  UnsupportedWebhookEventTypeError,
  type WebhookRequest,
} from '../webhooks/integration';
import { INTEGRATIONS } from '../webhooks/registry';

/** Tools post whole objects (a push of many commits, an alert group): more than a message's megabyte. */
const WEBHOOK_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

async function readBody(req: AuthedContext<MessagesDeps>['req']): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > WEBHOOK_BODY_LIMIT_BYTES) throw new JsonableError('Request body too large', { status: 413 });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > WEBHOOK_BODY_LIMIT_BYTES) throw new JsonableError('Request body too large', { status: 413 });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const eventList = v.list(v.str());

export async function receiveWebhook({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const name = String(req.params.integration_name ?? '');
  const integration = INTEGRATIONS.get(name);
  if (!integration) throw new ResourceNotFoundError();
  const parsed = params.parse({
    stream: optional(param.string()),
    topic: optional(param.string()),
    only_events: optional(param.json(eventList)),
    exclude_events: optional(param.json(eventList)),
  });
  const body = await readBody(req);
  const { webhookName } = integration;
  let json: { value: unknown } | undefined;
  let form: URLSearchParams | undefined;
  const request: WebhookRequest = {
    webhookName,
    body,
    contentType: req.headers['content-type']?.split(';')[0]?.trim().toLowerCase(),
    json() {
      if (!json) {
        try {
          json = { value: JSON.parse(body) };
        } catch {
          throw new InvalidWebhookJsonError();
        }
      }
      return json.value;
    },
    form: () => (form ??= new URLSearchParams(body)),
    header: (header) => req.get(header),
    requireHeader(header, integrationName) {
      const value = req.get(header);
      if (value === undefined) throw new MissingHttpEventHeaderError(header, integrationName);
      return value;
    },
    option(option) {
      if (!params.has(option)) return undefined;
      params.markUsed(option);
      return params.raw.get(option);
    },
    unsupported: (eventType) => new UnsupportedWebhookEventTypeError(webhookName, eventType),
    people: webhookPeople(deps.db, requester.realmId),
  };
  await doReceiveWebhook(
    deps,
    requester,
    integration,
    request,
    {
      stream: parsed.stream,
      topic: parsed.topic,
      onlyEvents: parsed.only_events,
      excludeEvents: parsed.exclude_events,
    },
    req.path,
  );
  return integration.successData ?? {};
}
