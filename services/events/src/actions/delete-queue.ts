import { BadEventQueueIdError, JsonableError, type Requester } from '@teamchat/core';
import type { EventsDeps } from '../deps';

/** Deletes one of the requester's queues (Zulip's cleanup_event_queue). */
export async function doDeleteQueue(deps: EventsDeps, requester: Requester, queueId: string): Promise<void> {
  const { store } = deps.events;
  const outcome = await store.delete(queueId, requester.userId, requester.realmId);
  if (outcome === 'missing') throw new BadEventQueueIdError(queueId);
  if (outcome === 'forbidden') throw new JsonableError('You are not authorized to access this queue');
  await store.forget([{ queueId, userId: requester.userId, realmId: requester.realmId }]);
}
