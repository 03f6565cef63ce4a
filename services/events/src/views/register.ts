import { cookieLanguage, type ViewContext } from '@teamchat/core';
import { doRegisterQueue, doRegisterSpectator } from '../actions/register-queue';
import type { EventsDeps } from '../deps';
import { parseQueueRequest, parseSpectatorRequest } from '../lib/queue-options';

/**
 * POST /register: a new event queue and the initial state it starts from; for a logged-out
 * visitor (the gateway lets them through from /json only), the spectator's state without a queue.
 */
export async function registerQueue({ req, deps, params, requester, realmId }: ViewContext<EventsDeps>) {
  if (!requester) return doRegisterSpectator(deps, realmId, parseSpectatorRequest(params, cookieLanguage(req)));
  const request = parseQueueRequest(params, requester, deps.events.config);
  const { queueId, state } = await doRegisterQueue(deps, requester, request);
  // Every event already folded into the state was dropped from the queue: start from its beginning.
  return { queue_id: queueId, last_event_id: -1, ...state };
}
