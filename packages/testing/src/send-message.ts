import type { ApiClient, Params } from './client';

/**
 * Sends a message through the API as `sender` (`POST /api/v1/messages` with Zulip's parameters:
 * `type`, `to`, `topic`, `content`) and answers its id; any other answer than 200 throws with the
 * status and body, so a test that only needs a message fails where the send failed.
 */
export async function sendMessage(sender: { client: ApiClient }, params: Params): Promise<number> {
  const response = await sender.client.post('/api/v1/messages', params);
  if (response.status !== 200) {
    throw new Error(`sending a message failed: ${response.status} ${JSON.stringify(response.body)}`);
  }
  return response.body.id as number;
}
