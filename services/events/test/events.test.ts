import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents, type EventQueue, sleep } from '@teamchat/testing';
import { alertWords, commitEvent, directTyping, sendTransient } from './support/producers';

const QUEUE_CAP = 20;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    services: ['events'],
    env: {
      EVENTS_HEARTBEAT_MIN_MS: '1500',
      EVENTS_HEARTBEAT_JITTER_MS: '300',
      EVENTS_QUEUE_MAX_EVENTS: String(QUEUE_CAP),
    },
  });
});
afterAll(() => stack.close());

function metaKey(queueId: string): string {
  return `${stack.deps.env.REDIS_PREFIX}{q:${queueId}}:m`;
}

/** Resolves once a poll of the queue is parked (the queue records the parked poll). */
async function parked(queueId: string): Promise<void> {
  while ((await stack.redis.hexists(metaKey(queueId), 'k')) === 0) await sleep(10);
}

async function queueFor(user: TestUser, params = {}): Promise<EventQueue> {
  return registerEventQueue(user.client, { event_types: ['alert_words', 'typing'], fetch_event_types: [], ...params });
}

describe('GET /events', () => {
  test('returns the events in order, ids from 0; last_event_id acknowledges and drops them', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user);
    for (const word of ['one', 'two', 'three']) await commitEvent(stack, alertWords([word]), [user.id]);
    await settleEvents(stack);
    const events = await queue.poll();
    expect(events).toEqual([
      { id: 0, type: 'alert_words', alert_words: ['one'] },
      { id: 1, type: 'alert_words', alert_words: ['two'] },
      { id: 2, type: 'alert_words', alert_words: ['three'] },
    ]);
    // Not acknowledged yet: asking again from -1 gives them again.
    const again = await user.client.get('/api/v1/events', {
      queue_id: queue.queueId,
      last_event_id: -1,
      dont_block: true,
    });
    expect(again.body).toEqual({ result: 'success', msg: '', events, queue_id: queue.queueId });

    await commitEvent(stack, alertWords(['four']), [user.id]);
    expect(await queue.next(1)).toEqual([{ id: 3, type: 'alert_words', alert_words: ['four'] }]);
    // Acknowledged up to 2 with the last poll, so the server dropped 0..2.
    const redis = await stack.redis.llen(`${stack.deps.env.REDIS_PREFIX}{q:${queue.queueId}}:e`);
    expect(redis).toBe(1);
    expectError(
      await user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: 1 }),
      400,
      'BAD_REQUEST',
      'An event newer than 1 has already been pruned!',
    );
    // An id the queue never gave out: Redis lost the queue's recent history (a restart that
    // rolled writes back). The queue is answered as gone, so the client registers again.
    expectError(
      await user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: 10 }),
      400,
      'BAD_EVENT_QUEUE_ID',
      `Bad event queue ID: ${queue.queueId}`,
    );
    expectError(
      await user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: 2, dont_block: true }),
      400,
      'BAD_EVENT_QUEUE_ID',
    );
    expect(await stack.redis.exists(`${stack.deps.env.REDIS_PREFIX}{q:${queue.queueId}}:m`)).toBe(0);
  });

  test('a parked poll is answered when an event arrives', async () => {
    const sender = await stack.createUser();
    const user = await stack.createUser();
    const queue = await queueFor(user);
    const polling = queue.poll();
    await parked(queue.queueId);
    await sendTransient(stack, directTyping(sender, [user, sender]), [user.id, sender.id]);
    expect(await polling).toEqual([{ id: 0, ...directTyping(sender, [user, sender]) }]);
  });

  test('a poll with nothing to say ends with a heartbeat, which takes an id', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user);
    expect(await queue.poll()).toEqual([{ type: 'heartbeat', id: 0 }]);
    await commitEvent(stack, alertWords(['after the heartbeat']), [user.id]);
    expect(await queue.poll()).toEqual([{ id: 1, type: 'alert_words', alert_words: ['after the heartbeat'] }]);
  });

  test('dont_block answers at once', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user);
    const { status, body } = await user.client.get('/api/v1/events', {
      queue_id: queue.queueId,
      last_event_id: -1,
      dont_block: true,
    });
    expect(status).toBe(200);
    expect(body).toEqual({ result: 'success', msg: '', events: [], queue_id: queue.queueId });
  });

  test('a second poll finishes the first one, with no events', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user);
    const first = user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: -1 });
    await parked(queue.queueId);
    const second = user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: -1 });
    expect((await first).body).toEqual({ result: 'success', msg: '', events: [], queue_id: queue.queueId });
    await commitEvent(stack, alertWords(['for the second poll']), [user.id]);
    expect((await second).body.events).toEqual([{ id: 0, type: 'alert_words', alert_words: ['for the second poll'] }]);
  });

  test('without queue_id, a non-blocking call registers a queue', async () => {
    const user = await stack.createUser();
    const { body } = await user.client.get('/api/v1/events', { dont_block: true, event_types: ['alert_words'] });
    expect(body).toEqual({ result: 'success', msg: '', events: [], queue_id: expect.any(String) });
    await commitEvent(stack, alertWords(['hello']), [user.id]);
    await sendTransient(stack, directTyping(user, [user]), [user.id]);
    await settleEvents(stack);
    const next = await user.client.get('/api/v1/events', {
      queue_id: body.queue_id,
      last_event_id: -1,
      dont_block: true,
    });
    expect(next.body.events).toEqual([{ id: 0, type: 'alert_words', alert_words: ['hello'] }]);
  });

  test('refuses a call without queue_id that would block, and one without last_event_id', async () => {
    const user = await stack.createUser();
    expectError(await user.client.get('/api/v1/events'), 400, 'BAD_REQUEST', "Missing 'queue_id' argument");
    const queue = await queueFor(user);
    expectError(
      await user.client.get('/api/v1/events', { queue_id: queue.queueId }),
      400,
      'BAD_REQUEST',
      "Missing 'last_event_id' argument",
    );
  });

  test('an unknown queue, or another user’s, is BAD_EVENT_QUEUE_ID', async () => {
    const user = await stack.createUser();
    const other = await stack.createUser();
    const response = await user.client.get('/api/v1/events', { queue_id: 'no-such-queue', last_event_id: -1 });
    expectError(response, 400, 'BAD_EVENT_QUEUE_ID', 'Bad event queue ID: no-such-queue');
    expect(response.body.queue_id).toBe('no-such-queue');
    const othersQueue = await queueFor(other);
    const foreign = await user.client.get('/api/v1/events', {
      queue_id: othersQueue.queueId,
      last_event_id: -1,
      dont_block: true,
    });
    expectError(foreign, 400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${othersQueue.queueId}`);
    expect(foreign.body.queue_id).toBe(othersQueue.queueId);
  });

  test('register parameters sent with a queue_id are not reported as ignored; unknown ones are', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user);
    const { body } = await user.client.get('/api/v1/events', {
      queue_id: queue.queueId,
      last_event_id: -1,
      dont_block: true,
      apply_markdown: true,
      colour: 'red',
    });
    expect(body.ignored_parameters_unsupported).toEqual(['colour']);
  });
});

describe('DELETE /events', () => {
  test('removes the queue; a poll parked on it is answered with no events, the next with BAD_EVENT_QUEUE_ID', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user);
    const polling = user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: -1 });
    await parked(queue.queueId);
    const { status, body } = await user.client.delete('/api/v1/events', { queue_id: queue.queueId });
    expect(status).toBe(200);
    expect(body).toEqual({ result: 'success', msg: '' });
    // As Zulip's Tornado finishes a parked handler when its queue goes (ClientDescriptor.cleanup):
    // the web app deletes its queue as its page unloads, with its poll still parked.
    const answered = await polling;
    expect(answered.status).toBe(200);
    expect(answered.body.events).toEqual([]);
    expectError(
      await user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: -1 }),
      400,
      'BAD_EVENT_QUEUE_ID',
    );
    expectError(
      await user.client.delete('/api/v1/events', { queue_id: queue.queueId }),
      400,
      'BAD_EVENT_QUEUE_ID',
      `Bad event queue ID: ${queue.queueId}`,
    );
    expect(await stack.redis.sismember(`${stack.deps.env.REDIS_PREFIX}events:user:${user.id}`, queue.queueId)).toBe(0);
  });

  test("another user's queue is not theirs to delete", async () => {
    const user = await stack.createUser();
    const other = await stack.createUser();
    const queue = await queueFor(other);
    expectError(
      await user.client.delete('/api/v1/events', { queue_id: queue.queueId }),
      400,
      'BAD_REQUEST',
      'You are not authorized to access this queue',
    );
    expect(await queue.drain()).toEqual([]);
  });

  test('needs queue_id', async () => {
    const user = await stack.createUser();
    expectError(
      await user.client.delete('/api/v1/events'),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'queue_id' argument",
    );
  });
});

describe('bounded queues', () => {
  test('an idle queue expires after its lifespan', async () => {
    const user = await stack.createUser();
    const queue = await queueFor(user, { queue_lifespan_secs: 1 });
    // Never polled: the lifespan plus the park allowance (heartbeat 1500 + jitter 300 + 5000 ms
    // here, the time register itself may take) after register.
    await sleep(1000 + 1500 + 300 + 5000 + 300);
    expectError(
      await user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: -1, dont_block: true }),
      400,
      'BAD_EVENT_QUEUE_ID',
    );
  });

  test('a queue holding more unacknowledged events than the cap is dropped', async () => {
    const user = await stack.createUser();
    const kept = await queueFor(user);
    const overflowing = await queueFor(user);
    let keptReceived = 0;
    for (let i = 0; i <= QUEUE_CAP; i++) {
      await sendTransient(stack, directTyping(user, [user]), [user.id]);
      if (i % 5 === 0) {
        await settleEvents(stack);
        keptReceived += (await kept.drain()).length;
      }
    }
    await settleEvents(stack);
    expectError(
      await user.client.get('/api/v1/events', { queue_id: overflowing.queueId, last_event_id: -1, dont_block: true }),
      400,
      'BAD_EVENT_QUEUE_ID',
    );
    expect(
      await stack.redis.sismember(`${stack.deps.env.REDIS_PREFIX}events:user:${user.id}`, overflowing.queueId),
    ).toBe(0);
    // The queue that kept acknowledging got everything.
    expect(keptReceived).toBe(QUEUE_CAP + 1);
  });
});
