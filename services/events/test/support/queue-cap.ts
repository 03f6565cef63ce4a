// Shared by the tests of the per-user queue cap (queue-cap, abandoned-parks): registering queues
// with distinct times of last activity, and finding which of them are still alive.
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

/** A queue of message events with no initial state; returns once the clock has moved on. */
export async function registerQueue(user: TestUser): Promise<string> {
  const response = await user.client.post('/api/v1/register', {
    event_types: JSON.stringify(['message']),
    fetch_event_types: JSON.stringify([]),
  });
  expect(response.status).toBe(200);
  // Distinct times for every queue's last activity.
  await sleep(20);
  return response.body.queue_id;
}

/** A non-blocking poll of the queue (which also counts as its latest activity). */
export const pollQueue = (user: TestUser, queueId: string) =>
  user.client.get('/api/v1/events', { queue_id: queueId, last_event_id: -1, dont_block: true });

/** The queues among `queueIds` still alive; each of the others must answer BAD_EVENT_QUEUE_ID. */
export async function liveQueues(user: TestUser, queueIds: string[]): Promise<string[]> {
  const live: string[] = [];
  for (const queueId of queueIds) {
    const response = await pollQueue(user, queueId);
    if (response.status === 200) live.push(queueId);
    else expectError(response, 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId}`);
  }
  return live;
}
