import type http from 'node:http';
import {
  asJsonableError,
  INTERNAL_TOKEN_HEADER,
  JsonableError,
  observeServiceRequest,
  optional,
  param,
  RequestParams,
  required,
  REQUEST_ID_HEADER,
  RESPONDED,
  sendError,
  sendJson,
  UnauthorizedError,
  verifyInternalToken,
  type AuthedContext,
  type InternalClaims,
  type Requester,
  type ViewResult,
} from '@teamchat/core';
import { doCreateQueue } from '../actions/register-queue';
import { doDeleteQueue } from '../actions/delete-queue';
import type { EventsDeps } from '../deps';
import { eventsBody } from '../lib/polls';
import { isDirect } from '../lib/public-entry';
import { parseQueueRequest, REGISTER_PARAMETERS } from '../lib/queue-options';

const NOTHING_IGNORED: string[] = [];
const EVENTS_PATH = '/api/v1/events';

/**
 * GET /events: the queue's events after `last_event_id` (acknowledging and dropping the
 * ones up to it); parks until one comes or a heartbeat is due, unless `dont_block`. Without
 * a `queue_id`, a non-blocking call registers a queue (without initial state) with the
 * register parameters it carries.
 */
async function getEventsFor(
  deps: EventsDeps,
  params: RequestParams,
  requester: Requester,
  res: http.ServerResponse,
): Promise<void> {
  const {
    queue_id: queueId,
    last_event_id: lastEventId,
    dont_block: dontBlock,
  } = params.parse({
    queue_id: optional(param.string()),
    last_event_id: optional(param.int()),
    dont_block: optional(param.bool(), false),
  });
  if (queueId === undefined) {
    if (!dontBlock) throw new JsonableError("Missing 'queue_id' argument");
    const newQueueId = await doCreateQueue(deps, requester, parseQueueRequest(params, requester, deps.events.config));
    sendJson(res, 200, eventsBody(newQueueId, '[]', params.ignored()));
    return;
  }
  if (lastEventId === undefined) throw new JsonableError("Missing 'last_event_id' argument");
  // Register parameters mean nothing for an existing queue, but Zulip accepts them here all the same.
  params.markUsed(...REGISTER_PARAMETERS);
  const ignored = params.ignored();
  await deps.events.polls.poll({
    queueId,
    userId: requester.userId,
    lastEventId,
    dontBlock,
    // A parked poll keeps its request: no array of its own when nothing was ignored (the usual case).
    ignored: ignored.length ? ignored : NOTHING_IGNORED,
    res,
  });
}

/** GET /events through the service's express app (requests that carry a body). */
export async function getEvents({ deps, params, requester, res }: AuthedContext<EventsDeps>): Promise<ViewResult> {
  await getEventsFor(deps, params, requester, res);
  return RESPONDED;
}

/** A GET /events without a body: the long-poll hot path, served with plain node:http. */
export function isPlainGetEvents(req: http.IncomingMessage): boolean {
  if (
    req.method !== 'GET' ||
    req.headers['content-length'] !== undefined ||
    req.headers['transfer-encoding'] !== undefined
  )
    return false;
  const url = req.url ?? '';
  return url === EVENTS_PATH || url.startsWith(`${EVENTS_PATH}?`);
}

function logFailure(deps: EventsDeps, req: http.IncomingMessage, error: unknown): JsonableError {
  const jsonable = asJsonableError(error);
  if (jsonable.status >= 500)
    deps.logger.error(
      { err: error, path: '/api/v1/events', request_id: req.headers[REQUEST_ID_HEADER] },
      'request failed',
    );
  return jsonable;
}

/**
 * Serves a plain GET /events without express (a parked long-poll should not pay for layers of
 * middleware, thousands of them per replica). Same token check, same parameter parser, same
 * envelopes. A client's own poll (the Ingress sends it here directly, docs/adr/0006) is
 * authenticated by its Basic credentials instead of the gateway's token.
 */
export async function serveGetEvents(
  deps: EventsDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  let claims: InternalClaims | undefined;
  observeServiceRequest('events', deps.logger, req, res, () => ({
    method: 'GET',
    route: EVENTS_PATH,
    path: EVENTS_PATH,
    claims,
  }));
  try {
    // The path is known (isPlainGetEvents); a WHATWG URL per poll would cost more than the query's parse.
    const queryStart = req.url!.indexOf('?');
    const query = new URLSearchParams(queryStart === -1 ? '' : req.url!.slice(queryStart + 1));
    let requester: Requester;
    if (isDirect(req)) {
      requester = await deps.events.entry.admit(req, res, query);
      claims = { user: requester, realmId: requester.realmId, method: 'GET', path: EVENTS_PATH };
    } else {
      const token = req.headers[INTERNAL_TOKEN_HEADER];
      claims = verifyInternalToken(
        deps.env.INTERNAL_JWT_SECRET,
        typeof token === 'string' ? token : undefined,
        'GET',
        EVENTS_PATH,
      );
      if (!claims.user) throw new UnauthorizedError();
      requester = claims.user;
    }
    const raw = new Map<string, string>();
    for (const [name, value] of query) raw.set(name, value);
    await getEventsFor(deps, new RequestParams(raw), requester, res);
  } catch (error) {
    sendError(res, logFailure(deps, req, error));
  }
}

/**
 * A client's own POST /register, DELETE /events (or GET /events with a body), which the express
 * app serves: admitted by its Basic credentials first (docs/adr/0006), then handed to `app`
 * with an internal token.
 */
export async function serveDirectViaApp(
  deps: EventsDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  app: http.RequestListener,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://events');
  try {
    await deps.events.entry.admitForApp(req, res, url);
  } catch (error) {
    observeServiceRequest('events', deps.logger, req, res, () => ({
      method: req.method ?? 'GET',
      route: url.pathname,
      path: url.pathname,
    }));
    // Drain the body so the client sees the answer instead of a reset.
    req.resume();
    sendError(res, logFailure(deps, req, error));
    return;
  }
  app(req, res);
}

/** DELETE /events: removes a queue (a poll parked on it is answered with no events, as Zulip's). */
export async function deleteQueue({ deps, params, requester }: AuthedContext<EventsDeps>) {
  const { queue_id: queueId } = params.parse({ queue_id: required(param.string()) });
  await doDeleteQueue(deps, requester, queueId);
  return {};
}
