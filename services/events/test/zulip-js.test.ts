// A real client, zulip-js, long-polling through the gateway while the replica serving it is
// stopped (SIGTERM) and another is killed (-9): it keeps receiving every event, once.
import { startStack, type Stack } from '@teamchat/stack';
import { sleep, waitFor } from '@teamchat/testing';
import { EventCluster } from './support/cluster';
import { alertWords, commitEvent } from './support/producers';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zulip = require('zulip-js') as (config: { username: string; apiKey: string; realm: string }) => Promise<ZulipJs>;

interface ZulipJs {
  queues: { register(params: Record<string, unknown>): Promise<Record<string, any>> };
  events: { retrieve(params: Record<string, unknown>): Promise<Record<string, any>> };
}

let stack: Stack;
let cluster: EventCluster;
beforeAll(async () => {
  stack = await startStack();
  cluster = await EventCluster.start(stack, 2, { EVENTS_HEARTBEAT_MIN_MS: '1000', EVENTS_HEARTBEAT_JITTER_MS: '200' });
});
afterAll(async () => {
  await cluster.stop();
  await stack.close();
});

test("zulip-js's callOnEachEvent loop keeps receiving events across replica restarts", async () => {
  const user = await stack.createUser();
  const client = await zulip({ username: user.deliveryEmail, apiKey: user.apiKey, realm: cluster.gatewayUrl });
  const received: string[] = [];
  let running = true;

  // zulip-js's callOnEachEvent, with a way to stop: register once, then retrieve in a loop,
  // acknowledging the highest id seen; errors are logged and the loop goes on.
  const registered = await client.queues.register({ event_types: ['alert_words'] });
  expect(registered.result).toBe('success');
  const queueId = registered.queue_id as string;
  let lastEventId = registered.last_event_id as number;
  const errors: string[] = [];
  const loop = (async () => {
    while (running) {
      try {
        const res = await client.events.retrieve({ queue_id: queueId, last_event_id: lastEventId, dont_block: false });
        if (res.events) {
          for (const event of res.events) {
            lastEventId = Math.max(lastEventId, event.id);
            if (event.type === 'alert_words') received.push(event.alert_words[0]);
          }
        } else {
          errors.push(`${res.code}: ${res.msg}`);
        }
      } catch (error) {
        errors.push(String(error));
      }
      await sleep(100);
    }
  })();

  const send = async (word: string) => {
    await commitEvent(stack, alertWords([word]), [user.id]);
    await waitFor(() => received.includes(word), {
      what: () => `waiting for ${word}; got ${received.join(',')}; errors ${errors.join(' | ')}`,
    });
  };
  await send('before');

  cluster.replicas[0].kill('SIGTERM');
  await cluster.replicas[0].exited;
  await cluster.startReplica();
  await send('after a graceful restart');

  cluster.replicas[1].kill('SIGKILL');
  await cluster.replicas[1].exited;
  await send('after a crash');
  await cluster.startReplica();
  await send('with a new replica');

  running = false;
  await loop;
  expect(received).toEqual(['before', 'after a graceful restart', 'after a crash', 'with a new replica']);
  expect(errors.filter((error) => error.includes('BAD_EVENT_QUEUE_ID'))).toEqual([]);
});
