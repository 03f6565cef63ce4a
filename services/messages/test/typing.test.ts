// Typing notifications: transient events (read from the realm's intake stream), with Zulip's
// recipients and errors; no state is stored.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';
import { bulkUsers, intakeMark, intakeSince, recipientIds, sorted } from './helpers';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
});
afterAll(() => stack.close());

const typing = (user: TestUser, params: Record<string, unknown>) => user.client.post('/api/v1/typing', params as never);

describe('POST /typing', () => {
  test('direct: every participant, the sender included, gets the event', async () => {
    const mark = await intakeMark(stack);
    const response = await typing(alice, { op: 'start', to: JSON.stringify([bob.id, carol.id]) });
    expect(response.body).toEqual({ result: 'success', msg: '' });
    await typing(alice, { type: 'direct', op: 'stop', to: [bob.id] });
    const [start, stop] = await intakeSince(stack, mark, 'typing');
    expect(start.event).toEqual({
      type: 'typing',
      message_type: 'direct',
      op: 'start',
      sender: { user_id: alice.id, email: alice.email },
      recipients: [bob, carol, alice].map((user) => ({ user_id: user.id, email: user.email })),
    });
    expect(recipientIds(start)).toEqual(sorted([alice.id, bob.id, carol.id]));
    expect(stop.event).toMatchObject({
      op: 'stop',
      recipients: [
        { user_id: bob.id, email: bob.email },
        { user_id: alice.id, email: alice.email },
      ],
    });
    expect(recipientIds(stop)).toEqual(sorted([alice.id, bob.id]));
  });

  test('direct: users who opted out of receiving, or are deactivated, get nothing', async () => {
    const quiet = await stack.createUser({ fullName: 'Quiet One' });
    await stack.db.userProfile.update({
      where: { id: quiet.id },
      data: { settings: { receives_typing_notifications: false } },
    });
    const gone = await stack.createUser({ fullName: 'Gone Away' });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    const mark = await intakeMark(stack);
    await typing(alice, { op: 'start', to: [quiet.id, gone.id, bob.id] });
    const [event] = await intakeSince(stack, mark, 'typing');
    expect(event.event.recipients).toHaveLength(4);
    expect(recipientIds(event)).toEqual(sorted([alice.id, bob.id]));
  });

  test('channel: subscribers of the channel, with the topic; none above 100 subscribers', async () => {
    const stream = await stack.createStream({
      name: 'typing here',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id],
    });
    const mark = await intakeMark(stack);
    expect(
      (await typing(bob, { type: 'channel', op: 'start', stream_id: stream.id, topic: 'general chat' })).status,
    ).toBe(200);
    expect((await typing(bob, { type: 'stream', op: 'stop', stream_id: stream.id, topic: 'plans' })).status).toBe(200);
    const [start, stop] = await intakeSince(stack, mark, 'typing');
    expect(start.event).toEqual({
      type: 'typing',
      message_type: 'stream',
      op: 'start',
      sender: { user_id: bob.id, email: bob.email },
      stream_id: stream.id,
      topic: '',
    });
    expect(recipientIds(start)).toEqual(sorted([alice.id, bob.id]));
    expect(stop.event).toMatchObject({ op: 'stop', topic: 'plans' });

    const crowd = await bulkUsers(stack, 100, 'typist');
    const big = await stack.createStream({ name: 'crowded', creatorId: alice.id, subscribers: [alice.id, ...crowd] });
    const bigMark = await intakeMark(stack);
    expect((await typing(alice, { type: 'stream', op: 'start', stream_id: big.id, topic: 't' })).status).toBe(200);
    expect(await intakeSince(stack, bigMark, 'typing')).toEqual([]);
  });

  test("errors, with Zulip's wording", async () => {
    const stream = await stack.createStream({ name: 'typing errors', creatorId: alice.id, subscribers: [alice.id] });
    const secret = await stack.createStream({
      name: 'typing secret',
      creatorId: alice.id,
      subscribers: [alice.id],
      inviteOnly: true,
    });
    expectError(
      await typing(alice, { type: 'stream', op: 'start', topic: 't' }),
      400,
      'BAD_REQUEST',
      "Missing 'stream_id' argument",
    );
    expectError(
      await typing(alice, { type: 'channel', op: 'start', stream_id: stream.id }),
      400,
      'BAD_REQUEST',
      'Missing topic',
    );
    expectError(await typing(alice, { op: 'start' }), 400, 'BAD_REQUEST', "Missing 'to' argument");
    expectError(await typing(alice, { op: 'start', to: [] }), 400, 'BAD_REQUEST', "Empty 'to' list");
    expectError(
      await typing(alice, { op: 'start', to: [bob.id, 999_999] }),
      400,
      'BAD_REQUEST',
      'Invalid user ID 999999',
    );
    expectError(await typing(alice, { op: 'begin', to: [bob.id] }), 400, 'BAD_REQUEST', 'Invalid op');
    expectError(
      await typing(alice, { type: 'private', op: 'start', to: [bob.id] }),
      400,
      'BAD_REQUEST',
      'Invalid type',
    );
    expectError(await typing(alice, { to: [bob.id] }), 400, 'REQUEST_VARIABLE_MISSING', "Missing 'op' argument");
    expectError(await typing(alice, { op: 'start', to: 'bob' }), 400, 'BAD_REQUEST', 'to is not valid JSON');
    expectError(
      await typing(bob, { type: 'stream', op: 'start', stream_id: secret.id, topic: 't' }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    expectError(
      await typing(alice, { type: 'stream', op: 'start', stream_id: 99_999, topic: 't' }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    const guest = await stack.createUser({ role: Role.GUEST });
    expectError(
      await typing(guest, { type: 'stream', op: 'start', stream_id: stream.id, topic: 't' }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );

    await stack.db.userProfile.update({
      where: { id: carol.id },
      data: { settings: { send_stream_typing_notifications: false, send_private_typing_notifications: false } },
    });
    expectError(
      await typing(carol, { op: 'start', to: [bob.id] }),
      400,
      'BAD_REQUEST',
      'User has disabled typing notifications for direct messages',
    );
    expectError(
      await typing(carol, { type: 'stream', op: 'start', stream_id: stream.id, topic: 't' }),
      400,
      'BAD_REQUEST',
      'User has disabled typing notifications for channel messages',
    );
  });
});

describe('POST /messages/{message_id}/typing', () => {
  test('typing_edit_message to the channel or the conversation', async () => {
    const stream = await stack.createStream({ name: 'edits', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const inChannel = (
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 'draft', content: 'x' })
    ).body.id;
    const direct = (await alice.client.post('/api/v1/messages', { type: 'direct', to: [bob.id], content: 'y' })).body
      .id;
    const mark = await intakeMark(stack);
    expect((await alice.client.post(`/api/v1/messages/${inChannel}/typing`, { op: 'start' })).body).toEqual({
      result: 'success',
      msg: '',
    });
    expect((await alice.client.post(`/api/v1/messages/${direct}/typing`, { op: 'stop' })).status).toBe(200);
    const [channelEvent, directEvent] = await intakeSince(stack, mark, 'typing_edit_message');
    expect(channelEvent.event).toEqual({
      type: 'typing_edit_message',
      op: 'start',
      sender_id: alice.id,
      message_id: inChannel,
      recipient: { type: 'channel', channel_id: stream.id, topic: 'draft' },
    });
    expect(recipientIds(channelEvent)).toEqual(sorted([alice.id, bob.id]));
    expect(directEvent.event).toEqual({
      type: 'typing_edit_message',
      op: 'stop',
      sender_id: alice.id,
      message_id: direct,
      recipient: { type: 'direct', user_ids: sorted([alice.id, bob.id]) },
    });
    expect(recipientIds(directEvent)).toEqual(sorted([alice.id, bob.id]));

    expectError(
      await bob.client.post(`/api/v1/messages/${inChannel}/typing`, { op: 'start' }),
      400,
      'BAD_REQUEST',
      "You don't have permission to edit this message",
    );
    expectError(
      await carol.client.post(`/api/v1/messages/${direct}/typing`, { op: 'start' }),
      400,
      'BAD_REQUEST',
      'Invalid message(s)',
    );
    expectError(
      await alice.client.post(`/api/v1/messages/${inChannel}/typing`, { op: 'go' }),
      400,
      'BAD_REQUEST',
      'Invalid op',
    );
    await stack.db.message.update({ where: { id: inChannel }, data: { date_sent: new Date(Date.now() - 3600_000) } });
    expectError(
      await alice.client.post(`/api/v1/messages/${inChannel}/typing`, { op: 'start' }),
      400,
      'BAD_REQUEST',
      'The time limit for editing this message has passed',
    );
  });
});
