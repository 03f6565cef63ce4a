// The locks that serialise an organisation's administrative changes (lockRealm: linkifiers,
// roles, deactivation, invitations...) and a user's own lists (lockUser: alert words, mutes)
// must not hold up messages. Every message row references its realm, and every delivery row its
// user, so each insert checks those rows (FOR KEY SHARE): a lock taken FOR UPDATE made each send
// of the organisation, or each delivery to that user, wait until the change committed. The
// changes here pause inside their transaction (a trigger of this test's own database) while a
// message is sent: the send must be answered while the change is still paused.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';

let stack: Stack;
let admin: TestUser;
let member: TestUser;
let channelName: string;
beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  admin = await stack.createUser({ email: 'lock-admin@example.com', role: Role.ADMINISTRATOR });
  member = await stack.createUser({ email: 'lock-member@example.com' });
  const channel = await stack.createStream({ name: 'lock test', subscribers: [admin.id, member.id] });
  channelName = channel.name;
  await stack.db.$executeRawUnsafe(`
    CREATE FUNCTION test_pause() RETURNS TRIGGER LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_sleep(3);
      RETURN NEW;
    END $$`);
  for (const table of ['linkifier', 'alert_word'])
    await stack.db.$executeRawUnsafe(
      `CREATE TRIGGER ${table}_test_pause BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION test_pause()`,
    );
});
afterAll(() => stack.close());

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
  const deadline = Date.now() + 10_000;
  while ((await pausedChanges()) === 0) {
    if (Date.now() > deadline) throw new Error('the change never reached its pause');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const sent = await member.client.post('/api/v1/messages', {
    type: 'stream',
    to: channelName,
    topic: 'locks',
    content: 'not held up',
  });
  const changeStillPaused = (await pausedChanges()) > 0;
  return { send: sent.status, changeStillPaused, change: (await changing).status };
}

test('a send in the organisation is not held up by an administrator changing it (lockRealm)', async () => {
  const outcome = await sendDuring(() =>
    admin.client.post('/api/v1/realm/filters', { pattern: '#(?P<id>[0-9]+)', url_template: 'https://x.test/{id}' }),
  );
  expect(outcome).toEqual({ send: 200, changeStillPaused: true, change: 200 });
});

test("a delivery to a user is not held up by a change to that user's own lists (lockUser)", async () => {
  const outcome = await sendDuring(() =>
    admin.client.post('/api/v1/users/me/alert_words', { alert_words: ['deploy'] }),
  );
  expect(outcome).toEqual({ send: 200, changeStillPaused: true, change: 200 });
});
