// captureEvents (@teamchat/testing) sees every event committed while its function ran, however
// long that took: past the outbox's hold (a published row is deleted after it) and past the
// event tier's intake trims (which drop whole stream nodes every consumer group has read).
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, ofType, settleEvents, sleep } from '@teamchat/testing';
import { alertWords, commitEvent, sendTransient } from './support/producers';

const TRIM_INTERVAL_MS = 200;
/** More entries than one stream node holds (stream-node-max-entries, 100): the first one's node can be trimmed. */
const FILLER_ENTRIES = 250;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events'], env: { EVENTS_TRIM_INTERVAL_MS: String(TRIM_INTERVAL_MS) } });
});
afterAll(() => stack.close());

test('an event committed long before the capture ends is captured, its row deleted and its node trimmable', async () => {
  const user = await stack.createUser();
  const captured = await captureEvents(stack, async () => {
    await commitEvent(stack, alertWords(['first']), [user.id]);
    for (let i = 0; i < FILLER_ENTRIES; i++) await sendTransient(stack, alertWords(['filler']), [user.id]);
    await settleEvents(stack);
    // Past the outbox hold (the first row is gone) and several trims of what the event tier read.
    await sleep(stack.deps.env.EVENT_OUTBOX_HOLD_MS + 10 * TRIM_INTERVAL_MS);
    await commitEvent(stack, alertWords(['second']), [user.id]);
  });
  expect(ofType(captured, 'alert_words').map(({ event }) => event.alert_words)).toEqual([['first'], ['second']]);
});
