import { BadEventQueueIdError, JsonableError, type Requester } from '@teamchat/core';
import type { EventsDeps } from '../deps';

/** Deletes one of the requester's queues (Zulip's cleanup_event_queue). */
export async function doDeleteQueue(deps: EventsDeps, requester: Requester, queueId: string): Promise<void> {
  const { store } = deps.events;
  const outcome = await store.delete(queueId, requester.userId);
  if (outcome === 'missing') throw new BadEventQueueIdError(queueId);
  if (outcome === 'forbidden') {
    // Another realm's queue is answered exactly like one that does not exist; another user's
    // queue in one's own realm gets Zulip's refusal.
    if ((await store.queueRealmId(queueId)) !== requester.realmId) throw new BadEventQueueIdError(queueId);
    throw new JsonableError('You are not authorized to access this queue');
  }
  await store.forget([{ queueId, userId: requester.userId, realmId: requester.realmId }]);
}
