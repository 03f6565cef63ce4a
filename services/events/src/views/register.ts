import type { AuthedContext } from '@teamchat/core';
import { doRegisterQueue } from '../actions/register-queue';
import type { EventsDeps } from '../deps';
import { parseQueueRequest } from '../lib/queue-options';

/** POST /register: a new event queue and the initial state it starts from. */
export async function registerQueue({ deps, params, requester }: AuthedContext<EventsDeps>) {
  const request = parseQueueRequest(params, requester, deps.events.config);
  const { queueId, state } = await doRegisterQueue(deps, requester, request);
  // Every event already folded into the state was dropped from the queue: start from its beginning.
  return { queue_id: queueId, last_event_id: -1, ...state };
}
