// A channel message reaches the subscribers who are active when it is sent. The send reads them
// from subscription alone: its is_user_active column is kept by database triggers (migration
// 20261128100000), whichever service deactivates the user, and whichever writes the subscription.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { sendMessage, sleep } from '@teamchat/testing';

let stack: Stack;
let admin: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'users'] });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
});
afterAll(() => stack.close());

/** Sends to `channel` and answers who received the message (their user_message rows). */
async function send(sender: TestUser, channel: string, content: string): Promise<number[]> {
  const messageId = await sendMessage(sender, { type: 'stream', to: channel, topic: 'roll call', content });
  const rows = await stack.db.userMessage.findMany({
    where: { message_id: messageId },
    orderBy: { user_profile_id: 'asc' },
  });
  return rows.map((row) => row.user_profile_id);
}

/** Ids in the order `send` reads them: users created at once get their ids in either order. */
const ascending = (...ids: number[]) => ids.sort((a, b) => a - b);

const activeColumn = async (userId: number) =>
  (await stack.db.subscription.findMany({ where: { user_profile_id: userId }, select: { is_user_active: true } })).map(
    (row) => row.is_user_active,
  );

test('a user deactivated through the users service gets no copy of a channel message; reactivated, they do again', async () => {
  const [alice, bob] = await Promise.all([stack.createUser(), stack.createUser()]);
  await stack.createStream({ name: 'roll call', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  await stack.createStream({ name: 'second', subscribers: [bob.id] });
  expect(await send(alice, 'roll call', 'everyone here')).toEqual(ascending(alice.id, bob.id));

  expect((await admin.client.delete(`/api/v1/users/${bob.id}`)).body).toEqual({ result: 'success', msg: '' });
  expect(await activeColumn(bob.id)).toEqual([false, false]);
  expect(await send(alice, 'roll call', 'bob is gone')).toEqual([alice.id]);

  expect((await admin.client.post(`/api/v1/users/${bob.id}/reactivate`)).body).toEqual({ result: 'success', msg: '' });
  expect(await activeColumn(bob.id)).toEqual([true, true]);
  expect(await send(alice, 'roll call', 'bob is back')).toEqual(ascending(alice.id, bob.id));
});

test('a subscription written for a deactivated user, or with the column set by hand, takes the user’s state', async () => {
  const [alice, carol] = await Promise.all([stack.createUser(), stack.createUser()]);
  const stream = await stack.createStream({ name: 'late joiners', creatorId: alice.id, subscribers: [alice.id] });
  await stack.db.userProfile.update({ where: { id: carol.id }, data: { is_active: false } });
  await stack.subscribe(stream.id, [carol.id]);
  expect(await activeColumn(carol.id)).toEqual([false]);
  await stack.db.subscription.updateMany({ where: { user_profile_id: carol.id }, data: { is_user_active: true } });
  expect(await activeColumn(carol.id)).toEqual([false]);
  expect(await send(alice, 'late joiners', 'carol stays out')).toEqual([alice.id]);
});

// Two transactions in flight at once: `first` is held open by hand while `second` runs, which
// must wait for it. Neither order may leave a subscription that says active for a deactivated user.
async function secondWaitsForFirst(first: (tx: Stack['db']) => Promise<unknown>, second: () => Promise<unknown>) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let firstDone!: () => void;
  const firstDid = new Promise<void>((resolve) => (firstDone = resolve));
  const held = stack.db.$transaction(
    async (tx) => {
      await first(tx as Stack['db']);
      firstDone();
      await released;
    },
    { timeout: 20_000 },
  );
  await firstDid;
  let secondFinished = false;
  const secondRun = second().then(() => (secondFinished = true));
  await sleep(500);
  expect(secondFinished).toBe(false);
  release();
  await Promise.all([held, secondRun]);
}

test('a deactivation in flight while a subscription is written: the subscription waits for it and says inactive', async () => {
  const [alice, dave] = await Promise.all([stack.createUser(), stack.createUser()]);
  const stream = await stack.createStream({ name: 'racing in', creatorId: alice.id, subscribers: [alice.id] });
  await secondWaitsForFirst(
    (tx) => tx.userProfile.update({ where: { id: dave.id }, data: { is_active: false } }),
    () => stack.subscribe(stream.id, [dave.id]),
  );
  expect(await activeColumn(dave.id)).toEqual([false]);
  expect(await send(alice, 'racing in', 'dave never arrived')).toEqual([alice.id]);
});

test('a subscription in flight while the user is deactivated: the deactivation waits for it and marks it inactive', async () => {
  const [alice, erin] = await Promise.all([stack.createUser(), stack.createUser()]);
  const stream = await stack.createStream({ name: 'racing out', creatorId: alice.id, subscribers: [alice.id] });
  await secondWaitsForFirst(
    (tx) => tx.subscription.create({ data: { user_profile_id: erin.id, stream_id: stream.id } }),
    () => stack.db.userProfile.update({ where: { id: erin.id }, data: { is_active: false } }),
  );
  expect(await activeColumn(erin.id)).toEqual([false]);
  expect(await send(alice, 'racing out', 'erin left')).toEqual([alice.id]);
});
