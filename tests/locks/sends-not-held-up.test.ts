// The locks that serialise changes inside a transaction must not hold up messages. Every message
// row references its realm and its channel, and every delivery row its user, so each insert
// checks those rows FOR KEY SHARE. A lock taken FOR UPDATE blocked that check: an administrator's
// change (lockRealm: linkifiers, roles, deactivation, invitations...) held up every send of the
// organisation until it committed, a channel's update (lockStream) every send to the channel,
// and a change to a user's own lists (lockUser) every delivery to that user. The changes here
// pause inside their transaction (a trigger of this test's own database) while a message is sent:
// the send must be answered while the change is still paused.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { waitFor } from '@teamchat/testing';

const PAUSE_SECONDS = 3;

let stack: Stack;
let admin: TestUser;
let member: TestUser;
let channel: { id: number; name: string };
beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels'] });
  admin = await stack.createUser({ email: 'lock-admin@example.com', role: Role.ADMINISTRATOR });
  member = await stack.createUser({ email: 'lock-member@example.com' });
  channel = await stack.createStream({ name: 'lock test', subscribers: [admin.id, member.id] });
  // The channel's first message sets its first_message_id (an update of the channel's row): sent
  // before the pauses, so the sends below only insert.
  expect((await send()).status).toBe(200);
  await stack.db.$executeRawUnsafe(`
    CREATE FUNCTION test_pause() RETURNS TRIGGER LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_sleep(${PAUSE_SECONDS});
      RETURN NEW;
    END $$`);
  for (const [table, operation] of [
    ['linkifier', 'INSERT'],
    ['alert_word', 'INSERT'],
    ['stream', 'UPDATE'],
  ])
    await stack.db.$executeRawUnsafe(
      `CREATE TRIGGER ${table}_test_pause BEFORE ${operation} ON ${table} FOR EACH ROW EXECUTE FUNCTION test_pause()`,
    );
});
afterAll(() => stack.close());

/** The send under test: its status is part of the outcome judged, so not sendMessage (which throws on a refusal). */
function send() {
  return member.client.post('/api/v1/messages', {
    type: 'stream',
    to: channel.name,
    topic: 'locks',
    content: 'not held up',
  });
}

/** How many transactions of this test's database sit in the trigger's pause. */
async function pausedChanges(): Promise<number> {
  const [row] = await stack.db.$queryRaw<{ paused: number }[]>`
    SELECT count(*)::int AS paused FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event = 'PgSleep'`;
  return row.paused;
}

/**
 * Starts `change`; once it is paused inside its transaction, sends a message. Answers the send's
 * status and whether the change was still paused when the send was answered (a send that waited
 * for the change's locks is answered only after the change committed).
 */
async function sendDuring(change: () => Promise<{ status: number }>) {
  const changing = change();
  await waitFor(async () => (await pausedChanges()) > 0, {
    what: 'the change to reach its pause',
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  const sent = await send();
  const changeStillPaused = (await pausedChanges()) > 0;
  return { send: sent.status, changeStillPaused, change: (await changing).status };
}

test('a send in the organisation is not held up by an administrator changing it (lockRealm)', async () => {
  const outcome = await sendDuring(() =>
    admin.client.post('/api/v1/realm/filters', { pattern: '#(?P<id>[0-9]+)', url_template: 'https://x.test/{id}' }),
  );
  expect(outcome).toEqual({ send: 200, changeStillPaused: true, change: 200 });
});

test('a send to a channel is not held up by an update of the channel (lockStream)', async () => {
  const outcome = await sendDuring(() =>
    admin.client.patch(`/api/v1/streams/${channel.id}`, { description: 'Where locks are tested' }),
  );
  expect(outcome).toEqual({ send: 200, changeStillPaused: true, change: 200 });
});

test("a delivery to a user is not held up by a change to that user's own lists (lockUser)", async () => {
  const outcome = await sendDuring(() =>
    admin.client.post('/api/v1/users/me/alert_words', { alert_words: ['deploy'] }),
  );
  expect(outcome).toEqual({ send: 200, changeStillPaused: true, change: 200 });
});
