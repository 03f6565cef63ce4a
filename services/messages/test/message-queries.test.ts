// Read receipts (GET /messages/{id}/read_receipts) and GET /messages/matches_narrow.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, sendMessage } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
let erin: TestUser;
let frank: TestUser;
let grace: TestUser;
let general: { id: number };
let secret: { id: number };

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  dave = await stack.createUser({ fullName: 'Dave Brubeck' });
  erin = await stack.createUser({ fullName: 'Erin Moran' });
  frank = await stack.createUser({ fullName: 'Frank Zappa' });
  grace = await stack.createUser({ fullName: 'Grace Jones' });
  const everyone = [alice, bob, carol, dave, erin, frank, grace].map((user) => user.id);
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: everyone });
  secret = await stack.createStream({ name: 'secret', creatorId: bob.id, subscribers: [bob.id], inviteOnly: true });
});
afterAll(() => stack.close());

function send(user: TestUser, to: { id: number }, topic: string, content: string): Promise<number> {
  return sendMessage(user, { type: 'stream', to: to.id, topic, content });
}

const markRead = (user: TestUser, id: number) =>
  user.client.post('/api/v1/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' });

async function setReadReceipts(enabled: boolean): Promise<void> {
  const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
  await stack.db.realm.update({
    where: { id: realm.id },
    data: { settings: { ...(realm.settings as object), realm_enable_read_receipts: enabled } },
  });
  await stack.fixtureWritten();
}

describe('read receipts', () => {
  test('who read a message, as Zulip filters it', async () => {
    const id = await send(alice, general, 'receipts', 'did you read this?');
    for (const user of [alice, bob, carol, dave, erin, frank]) expect((await markRead(user, id)).status).toBe(200);
    // carol does not send read receipts; dave muted alice; alice muted erin; frank is deactivated;
    // grace has not read it.
    await stack.db.userProfile.update({ where: { id: carol.id }, data: { settings: { send_read_receipts: false } } });
    await stack.db.mutedUser.create({ data: { user_profile_id: dave.id, muted_user_id: alice.id } });
    await stack.db.mutedUser.create({ data: { user_profile_id: alice.id, muted_user_id: erin.id } });
    await setReadReceipts(true);

    const forAlice = await alice.client.get(`/api/v1/messages/${id}/read_receipts`);
    expect(forAlice.status).toBe(200);
    // Never the sender, nor users muting or muted by the viewer, nor those who opted out.
    expect(forAlice.body.user_ids).toEqual([bob.id, frank.id].sort((a, b) => a - b));
    // Bob is muted by no one: dave and erin count for him, and he counts himself.
    const forBob = await bob.client.get(`/api/v1/messages/${id}/read_receipts`);
    expect(forBob.body.user_ids).toEqual([bob.id, dave.id, erin.id, frank.id].sort((a, b) => a - b));

    await stack.db.userProfile.update({ where: { id: frank.id }, data: { is_active: false } });
    const afterDeactivation = await bob.client.get(`/api/v1/messages/${id}/read_receipts`);
    expect(afterDeactivation.body.user_ids).toEqual([bob.id, dave.id, erin.id].sort((a, b) => a - b));
    await stack.db.userProfile.update({ where: { id: frank.id }, data: { is_active: true } });

    // Marked unread again: no longer read.
    await bob.client.post('/api/v1/messages/flags', { messages: JSON.stringify([id]), op: 'remove', flag: 'read' });
    expect((await alice.client.get(`/api/v1/messages/${id}/read_receipts`)).body.user_ids).toEqual([frank.id]);
  });

  test('access as for fetching the message, and the organisation setting', async () => {
    const hidden = await send(bob, secret, 'hidden', 'only bob');
    await setReadReceipts(true);
    expectError(
      await alice.client.get(`/api/v1/messages/${hidden}/read_receipts`),
      400,
      'BAD_REQUEST',
      'Invalid message(s)',
    );
    expectError(
      await alice.client.get('/api/v1/messages/999999/read_receipts'),
      400,
      'BAD_REQUEST',
      'Invalid message(s)',
    );
    expect((await bob.client.get(`/api/v1/messages/${hidden}/read_receipts`)).body.user_ids).toEqual([]);

    await setReadReceipts(false);
    expectError(
      await bob.client.get(`/api/v1/messages/${hidden}/read_receipts`),
      400,
      'BAD_REQUEST',
      'Read receipts are disabled in this organization.',
    );
    // Access comes first.
    expectError(
      await alice.client.get(`/api/v1/messages/${hidden}/read_receipts`),
      400,
      'BAD_REQUEST',
      'Invalid message(s)',
    );
  });
});

describe('matches_narrow', () => {
  const matches = (user: TestUser, ids: number[], narrow: unknown) =>
    user.client.get('/api/v1/messages/matches_narrow', {
      msg_ids: JSON.stringify(ids),
      narrow: JSON.stringify(narrow),
    });

  test('which messages match a narrow, with search highlights', async () => {
    const apple = await send(alice, general, 'apples', 'I like a **banana** too');
    const pear = await send(alice, general, 'pears & more', 'no fruit here');
    const hidden = await send(bob, secret, 'apples', 'secret banana');

    const byTopic = await matches(alice, [apple, pear, hidden, 999999], [{ operator: 'topic', operand: 'apples' }]);
    expect(byTopic.status).toBe(200);
    expect(byTopic.body.messages).toEqual({
      [apple]: { match_content: '<p>I like a <strong>banana</strong> too</p>', match_subject: 'apples' },
    });

    const all = await matches(alice, [apple, pear], []);
    expect(all.body.messages).toEqual({
      [apple]: { match_content: '<p>I like a <strong>banana</strong> too</p>', match_subject: 'apples' },
      [pear]: { match_content: '<p>no fruit here</p>', match_subject: 'pears &amp; more' },
    });

    const searched = await matches(alice, [apple, pear], [{ operator: 'search', operand: 'banana' }]);
    expect(searched.body.messages).toEqual({
      [apple]: {
        match_content: '<p>I like a <strong><span class="highlight">banana</span></strong> too</p>',
        match_subject: 'apples',
      },
    });
    // Only messages the viewer received.
    expect((await matches(bob, [hidden], [{ operator: 'search', operand: 'banana' }])).body.messages).toMatchObject({
      [hidden]: { match_subject: 'apples' },
    });
    expect((await matches(alice, [hidden], [])).body.messages).toEqual({});
  });

  test('errors', async () => {
    expectError(
      await alice.client.get('/api/v1/messages/matches_narrow', { narrow: '[]' }),
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await alice.client.get('/api/v1/messages/matches_narrow', { msg_ids: '[1]' }),
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await matches(alice, [1], [{ operator: 'stream', operand: 'nowhere' }]), 400, 'BAD_NARROW');
    expectError(
      await alice.client.get('/api/v1/messages/matches_narrow', { msg_ids: 'x', narrow: '[]' }),
      400,
      'BAD_REQUEST',
    );
  });
});
