// Personal message flags: by ids (POST /messages/flags), over a narrow
// (POST /messages/flags/narrow) and the mark-as-read shortcuts, with their events.
import { HISTORICAL_FLAGS, MessageFlag } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type ApiResponse, captureEvents, expectError, sendMessage } from '@teamchat/testing';
import { bulkChannelMessages } from './helpers';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let general: { id: number; name: string };

async function flagsOf(userId: number, messageId: number): Promise<number | undefined> {
  return (
    await stack.db.userMessage.findUnique({
      where: { user_profile_id_message_id: { user_profile_id: userId, message_id: messageId } },
    })
  )?.flags;
}

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
});
afterAll(() => stack.close());

describe('POST /messages/flags', () => {
  test('add and remove starred: only changed messages are announced', async () => {
    const first = await sendMessage(alice, { type: 'stream', to: general.id, topic: 't', content: 'one' });
    const second = await sendMessage(alice, { type: 'stream', to: general.id, topic: 't', content: 'two' });
    const events = await captureEvents(stack, async () => {
      const response = await bob.client.post('/api/v1/messages/flags', {
        messages: [first, second],
        op: 'add',
        flag: 'starred',
      });
      expect(response.body).toEqual({
        result: 'success',
        msg: '',
        messages: [first, second],
        ignored_because_not_subscribed_channels: [],
      });
      expect(await flagsOf(bob.id, first)).toBe(MessageFlag.starred);
      expect(await flagsOf(alice.id, first)).toBe(0);

      await bob.client.post('/api/v1/messages/flags', { messages: [first, second], op: 'add', flag: 'starred' });
      await bob.client.post('/api/v1/messages/flags', { messages: [second], op: 'remove', flag: 'starred' });
    });
    expect(events.map((e) => [e.event, e.recipientIds])).toEqual([
      [
        {
          type: 'update_message_flags',
          op: 'add',
          operation: 'add',
          flag: 'starred',
          messages: [first, second],
          all: false,
        },
        [bob.id],
      ],
      [
        { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'starred', messages: [], all: false },
        [bob.id],
      ],
      [
        {
          type: 'update_message_flags',
          op: 'remove',
          operation: 'remove',
          flag: 'starred',
          messages: [second],
          all: false,
        },
        [bob.id],
      ],
    ]);
    expect(await flagsOf(bob.id, second)).toBe(0);
  });

  test("flag and operation errors, in Zulip's order", async () => {
    const post = (params: Record<string, unknown>) => bob.client.post('/api/v1/messages/flags', params as never);
    expectError(await post({ messages: [1], op: 'add', flag: 'bogus' }), 400, 'BAD_REQUEST', "Invalid flag: 'bogus'");
    expectError(
      await post({ messages: [1], op: 'add', flag: 'is_private' }),
      400,
      'BAD_REQUEST',
      "Invalid flag: 'is_private'",
    );
    expectError(
      await post({ messages: [1], op: 'add', flag: 'wildcard_mentioned' }),
      400,
      'BAD_REQUEST',
      "Invalid flag: 'wildcard_mentioned'",
    );
    expectError(
      await post({ messages: [1], op: 'toggle', flag: 'mentioned' }),
      400,
      'BAD_REQUEST',
      "Flag not editable: 'mentioned'",
    );
    expectError(
      await post({ messages: [1], op: 'toggle', flag: 'starred' }),
      400,
      'BAD_REQUEST',
      "Invalid message flag operation: 'toggle'",
    );
    expectError(
      await post({ op: 'add', flag: 'starred' }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'messages' argument",
    );
    expectError(
      await post({ messages: '[1, "x"]', op: 'add', flag: 'starred' }),
      400,
      'BAD_REQUEST',
      'messages[1] is not an integer',
    );
  });

  test('historical rows for readable messages never received; no access, no flag', async () => {
    const history = await sendMessage(alice, { type: 'stream', to: general.id, topic: 'old', content: 'before carol' });
    const secret = await stack.createStream({
      name: 'secret',
      creatorId: alice.id,
      subscribers: [alice.id],
      inviteOnly: true,
    });
    const hidden = await sendMessage(alice, { type: 'stream', to: secret.id, topic: 't', content: 'hidden' });
    const [event] = await captureEvents(stack, async () => {
      expect(
        (await carol.client.post('/api/v1/messages/flags', { messages: [history], op: 'add', flag: 'starred' })).status,
      ).toBe(200);
    });
    expect(await flagsOf(carol.id, history)).toBe(HISTORICAL_FLAGS | MessageFlag.starred);
    expect(event.event.messages).toEqual([history]);

    expectError(
      await carol.client.post('/api/v1/messages/flags', { messages: [hidden], op: 'add', flag: 'starred' }),
      400,
      'BAD_REQUEST',
      'Invalid message(s)',
    );
    expectError(
      await carol.client.post('/api/v1/messages/flags', { messages: [999_999], op: 'add', flag: 'starred' }),
      400,
      'BAD_REQUEST',
      'Invalid message(s)',
    );
    expect(await flagsOf(carol.id, hidden)).toBeUndefined();
    // Marking read needs no row: historical messages already read as read.
    expect(
      (await carol.client.post('/api/v1/messages/flags', { messages: [hidden, 999_999], op: 'add', flag: 'read' }))
        .status,
    ).toBe(200);
    expect(await flagsOf(carol.id, hidden)).toBeUndefined();
  });

  test('marking unread skips channels one is not subscribed to, and details what became unread', async () => {
    const team = await stack.createStream({
      name: 'team',
      creatorId: alice.id,
      subscribers: [alice.id, bob.id, carol.id],
    });
    const inTeam = await sendMessage(alice, {
      type: 'stream',
      to: team.id,
      topic: 'standup',
      content: '@**Bob Dylan** ready?',
    });
    const direct = await sendMessage(alice, { type: 'direct', to: [bob.id, carol.id], content: 'hello both' });
    const left = await stack.createStream({ name: 'left', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const inLeft = await sendMessage(alice, { type: 'stream', to: left.id, topic: 't', content: 'x' });
    await bob.client.post('/api/v1/messages/flags', { messages: [inTeam, direct, inLeft], op: 'add', flag: 'read' });
    await stack.db.subscription.updateMany({
      where: { stream_id: left.id, user_profile_id: bob.id },
      data: { active: false },
    });

    const [event] = await captureEvents(stack, () =>
      bob.client.post('/api/v1/messages/flags', { messages: [inTeam, direct, inLeft], op: 'remove', flag: 'read' }),
    );
    expect((await flagsOf(bob.id, inLeft))! & MessageFlag.read).toBe(MessageFlag.read);
    expect((await flagsOf(bob.id, inTeam))! & MessageFlag.read).toBe(0);
    expect(event.event).toEqual({
      type: 'update_message_flags',
      op: 'remove',
      operation: 'remove',
      flag: 'read',
      messages: [inTeam, direct],
      all: false,
      message_details: {
        [inTeam]: { type: 'stream', stream_id: team.id, topic: 'standup', unmuted_stream_msg: true, mentioned: true },
        [direct]: { type: 'private', user_ids: [alice.id, carol.id].sort((a, b) => a - b) },
      },
    });
  });
});

describe('POST /messages/flags/narrow', () => {
  test('updates the range of the narrow and reports it', async () => {
    const stream = await stack.createStream({ name: 'range', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const ids = await bulkChannelMessages(stack, {
      senderId: alice.id,
      streamId: stream.id,
      count: 6,
      recipientIds: [alice.id, bob.id],
    });
    await stack.db.userMessage.updateMany({
      where: { user_profile_id: bob.id, message_id: ids[1] },
      data: { flags: MessageFlag.read },
    });
    let response!: ApiResponse;
    const [event] = await captureEvents(stack, async () => {
      response = await bob.client.post('/api/v1/messages/flags/narrow', {
        anchor: String(ids[2]),
        num_before: 2,
        num_after: 1,
        narrow: [{ operator: 'channel', operand: stream.id }, ['is', 'unread']],
        op: 'add',
        flag: 'read',
      });
    });
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      processed_count: 3,
      updated_count: 3,
      first_processed_id: ids[0],
      last_processed_id: ids[3],
      found_oldest: true,
      found_newest: false,
      ignored_because_not_subscribed_channels: [],
    });
    expect(event.event.messages).toEqual([ids[0], ids[2], ids[3]]);

    const empty = await bob.client.post('/api/v1/messages/flags/narrow', {
      anchor: 'newest',
      num_before: 10,
      num_after: 0,
      narrow: [
        ['stream', stream.name],
        ['is', 'starred'],
      ],
      op: 'remove',
      flag: 'starred',
    });
    expect(empty.body).toMatchObject({
      processed_count: 0,
      updated_count: 0,
      first_processed_id: null,
      last_processed_id: null,
      found_oldest: true,
      found_newest: true,
    });
    expect(empty.body.ignored_because_not_subscribed_channels).toEqual([]);
  });

  test('clamps the range to 5000 messages, keeping at least 2500 before the anchor', async () => {
    const stream = await stack.createStream({ name: 'huge', creatorId: alice.id, subscribers: [bob.id] });
    const ids = await bulkChannelMessages(stack, {
      senderId: alice.id,
      streamId: stream.id,
      count: 6000,
      recipientIds: [bob.id],
    });
    const narrow = [{ operator: 'channel', operand: stream.id }];
    const before = await bob.client.post('/api/v1/messages/flags/narrow', {
      anchor: 'newest',
      num_before: 6000,
      num_after: 0,
      narrow,
      op: 'add',
      flag: 'starred',
    });
    expect(before.body).toMatchObject({
      processed_count: 5000,
      updated_count: 5000,
      first_processed_id: ids[1000],
      last_processed_id: ids[5999],
      found_oldest: false,
      found_newest: true,
    });
    // Both large: 2500 before, 2500 after (none after "newest").
    const both = await bob.client.post('/api/v1/messages/flags/narrow', {
      anchor: 'newest',
      num_before: 6000,
      num_after: 6000,
      narrow,
      op: 'add',
      flag: 'starred',
    });
    expect(both.body).toMatchObject({
      processed_count: 2500,
      updated_count: 0,
      first_processed_id: ids[3500],
      last_processed_id: ids[5999],
    });

    const middle = await bob.client.post('/api/v1/messages/flags/narrow', {
      anchor: String(ids[3000]),
      num_before: 4000,
      num_after: 4000,
      narrow,
      op: 'add',
      flag: 'read',
    });
    expect(middle.body).toMatchObject({
      processed_count: 5001,
      first_processed_id: ids[500],
      last_processed_id: ids[5500],
      found_oldest: false,
      found_newest: false,
    });
  });

  test("over a public channel's history: historical rows for what the viewer never received", async () => {
    const stream = await stack.createStream({ name: 'archive', creatorId: alice.id, subscribers: [alice.id] });
    const ids = await bulkChannelMessages(stack, {
      senderId: alice.id,
      streamId: stream.id,
      count: 3,
      recipientIds: [alice.id],
    });
    const [event] = await captureEvents(stack, async () => {
      const response = await carol.client.post('/api/v1/messages/flags/narrow', {
        anchor: 'oldest',
        num_before: 0,
        num_after: 10,
        narrow: [{ operator: 'channel', operand: stream.id }],
        op: 'add',
        flag: 'starred',
      });
      expect(response.body).toMatchObject({
        processed_count: 3,
        updated_count: 3,
        first_processed_id: ids[0],
        last_processed_id: ids[2],
        found_oldest: true,
        found_newest: true,
      });
      for (const id of ids) expect(await flagsOf(carol.id, id)).toBe(HISTORICAL_FLAGS | MessageFlag.starred);
    });
    expect(event.event).toEqual({
      type: 'update_message_flags',
      op: 'add',
      operation: 'add',
      flag: 'starred',
      messages: ids,
      all: false,
    });
    // Marking read needs no rows: historical messages read as read already.
    const read = await carol.client.post('/api/v1/messages/flags/narrow', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 10,
      narrow: [['stream', stream.name]],
      op: 'add',
      flag: 'read',
    });
    expect(read.body).toMatchObject({ processed_count: 3, updated_count: 0 });
  });

  test('marking unread reports the channels it skipped', async () => {
    const gone = await stack.createStream({ name: 'gone', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const [message] = await bulkChannelMessages(stack, {
      senderId: alice.id,
      streamId: gone.id,
      count: 1,
      recipientIds: [bob.id],
    });
    await stack.db.userMessage.updateMany({
      where: { user_profile_id: bob.id, message_id: message },
      data: { flags: MessageFlag.read },
    });
    await stack.db.subscription.updateMany({
      where: { stream_id: gone.id, user_profile_id: bob.id },
      data: { active: false },
    });
    const response = await bob.client.post('/api/v1/messages/flags/narrow', {
      anchor: String(message),
      num_before: 0,
      num_after: 0,
      narrow: [],
      op: 'remove',
      flag: 'read',
    });
    expect(response.body).toMatchObject({
      processed_count: 1,
      updated_count: 0,
      ignored_because_not_subscribed_channels: [gone.id],
    });
  });

  test('errors', async () => {
    const post = (params: Record<string, unknown>) => bob.client.post('/api/v1/messages/flags/narrow', params as never);
    const base = { anchor: 'newest', num_before: 1, num_after: 0, narrow: [], op: 'add', flag: 'read' };
    expectError(
      await post({ ...base, anchor: '10', num_after: 5, include_anchor: false }),
      400,
      'BAD_REQUEST',
      'The anchor can only be excluded at an end of the range',
    );
    expectError(await post({ ...base, anchor: 'later' }), 400, 'BAD_REQUEST', 'Invalid anchor');
    expectError(
      await post({ ...base, anchor: undefined }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'anchor' argument",
    );
    expectError(
      await post({ ...base, narrow: undefined }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'narrow' argument",
    );
    expectError(await post({ ...base, num_after: -1 }), 400, 'BAD_REQUEST', 'num_after is too small');
    expectError(await post({ ...base, flag: 'historical' }), 400, 'BAD_REQUEST', "Flag not editable: 'historical'");
    expectError(
      await post({ ...base, narrow: [{ operator: 'is', operand: 'sleepy' }] }),
      400,
      'BAD_NARROW',
      "Invalid narrow operator: unknown 'is' operand sleepy",
    );
  });
});

describe('mark a channel or topic as read', () => {
  test('marks only that channel or topic, with one event', async () => {
    const stream = await stack.createStream({ name: 'reads', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const a = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'one', content: 'x' });
    const b = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'two', content: 'y' });
    const elsewhere = await sendMessage(alice, { type: 'stream', to: general.id, topic: 'one', content: 'z' });
    const captured = await captureEvents(stack, async () => {
      expect(
        (await bob.client.post('/api/v1/mark_topic_as_read', { stream_id: stream.id, topic_name: 'ONE' })).status,
      ).toBe(200);
      expect(await flagsOf(bob.id, a)).toBe(MessageFlag.read);
      expect(await flagsOf(bob.id, b)).toBe(0);
      expect((await bob.client.post('/api/v1/mark_stream_as_read', { stream_id: stream.id })).status).toBe(200);
      expect(await flagsOf(bob.id, b)).toBe(MessageFlag.read);
      expect(await flagsOf(bob.id, elsewhere)).toBe(0);
    });
    expect(captured.map((e) => e.event.messages)).toEqual([[a], [b]]);
    expectError(
      await bob.client.post('/api/v1/mark_topic_as_read', { stream_id: stream.id, topic_name: 'nope' }),
      400,
      'BAD_REQUEST',
      "No such topic 'nope'",
    );
    expectError(
      await bob.client.post('/api/v1/mark_stream_as_read', { stream_id: 99999 }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
  });
});
