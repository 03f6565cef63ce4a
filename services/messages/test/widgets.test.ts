// Widgets (polls, to-do lists) as the web app uses them: a /poll or /todo message gets its
// widget submessage when sent, in the message event and in every fetch; POST /submessage adds
// votes, options and tasks with Zulip's checks, and the `submessage` event reaches everyone who
// has the message.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents, sendMessage } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
});
afterAll(() => stack.close());

const submit = (user: TestUser, messageId: number, content: unknown) =>
  user.client.post('/api/v1/submessage', {
    message_id: messageId,
    msg_type: 'widget',
    content: typeof content === 'string' ? content : JSON.stringify(content),
  } as never);
const fetchOne = async (user: TestUser, id: number) => {
  const response = await user.client.get('/api/v1/messages', { anchor: id, num_before: 0, num_after: 0 });
  expect(response.body.messages).toHaveLength(1);
  return response.body.messages[0];
};

describe('sending a widget', () => {
  test('a poll: its submessage is in the message event, GET /messages and GET /messages/{id}', async () => {
    const stream = await stack.createStream({ name: 'polls', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const queue = await registerEventQueue(bob.client, { event_types: JSON.stringify(['message']) });
    const id = await sendMessage(alice, {
      type: 'stream',
      to: stream.id,
      topic: 'lunch',
      content: '/poll Where to eat?\nPizza\n- Sushi\n\n*  Café Noir',
    });
    const [event] = await queue.next();
    const submessages = event.message.submessages;
    // Zulip's json.dumps: ", " and ": " separators, non-ASCII escaped.
    expect(submessages).toEqual([
      {
        msg_type: 'widget',
        content:
          '{"widget_type": "poll", "extra_data": {"question": "Where to eat?", "options": ["Pizza", "Sushi", "Caf\\u00e9 Noir"]}}',
        message_id: id,
        sender_id: alice.id,
        id: expect.any(Number),
      },
    ]);
    expect(JSON.parse(submessages[0].content)).toEqual({
      widget_type: 'poll',
      extra_data: { question: 'Where to eat?', options: ['Pizza', 'Sushi', 'Café Noir'] },
    });
    expect((await fetchOne(bob, id)).submessages).toEqual(submessages);
    expect((await alice.client.get(`/api/v1/messages/${id}`)).body.message.submessages).toEqual(submessages);
  });

  test('a to-do list in a direct message: title, then tasks with their descriptions', async () => {
    const id = await sendMessage(alice, {
      type: 'direct',
      to: [bob.id],
      content: '/todo Moving day\nBoxes: the big ones first\n* Keys\n- Plants: water: twice',
    });
    const [submessage] = (await fetchOne(bob, id)).submessages;
    expect(JSON.parse(submessage.content)).toEqual({
      widget_type: 'todo',
      extra_data: {
        task_list_title: 'Moving day',
        tasks: [
          { task: 'Boxes', desc: 'the big ones first' },
          { task: 'Keys', desc: '' },
          { task: 'Plants', desc: 'water: twice' },
        ],
      },
    });
    expect(submessage).toMatchObject({ msg_type: 'widget', message_id: id, sender_id: alice.id });
  });

  test('a bare /poll has an empty question; other slash words and edits make no widget', async () => {
    const bare = await sendMessage(alice, { type: 'direct', to: [bob.id], content: '/poll' });
    expect(JSON.parse((await fetchOne(alice, bare)).submessages[0].content)).toEqual({
      widget_type: 'poll',
      extra_data: { question: '', options: [] },
    });
    const polling = await sendMessage(alice, { type: 'direct', to: [bob.id], content: '/polling day' });
    expect((await fetchOne(alice, polling)).submessages).toEqual([]);
    // As in Zulip, only sending makes a widget.
    const edited = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'soon a poll' });
    expect((await alice.client.patch(`/api/v1/messages/${edited}`, { content: '/poll Now?' })).status).toBe(200);
    expect((await fetchOne(alice, edited)).submessages).toEqual([]);
  });

  test("a bot's widget_content: a zform of choices, checked as Zulip checks it", async () => {
    const zform = {
      widget_type: 'zform',
      extra_data: {
        type: 'choices',
        heading: 'Pick a drink',
        choices: [{ type: 'multiple_choice', short_name: 'A', long_name: 'Tea', reply: 'tea please' }],
      },
    };
    const id = await sendMessage(alice, {
      type: 'direct',
      to: [bob.id],
      content: 'Pick a drink',
      widget_content: JSON.stringify(zform),
    });
    const [submessage] = (await fetchOne(bob, id)).submessages;
    expect(JSON.parse(submessage.content)).toEqual(zform);
    expect(submessage).toMatchObject({ msg_type: 'widget', sender_id: alice.id });

    const refused = async (widgetContent: unknown, msg: string) =>
      expectError(
        await alice.client.post('/api/v1/messages', {
          type: 'direct',
          to: [bob.id],
          content: 'no',
          widget_content: typeof widgetContent === 'string' ? widgetContent : JSON.stringify(widgetContent),
        } as never),
        400,
        'BAD_REQUEST',
        msg,
      );
    await refused('{oops', 'Widgets: API programmer sent invalid JSON content');
    await refused([], 'Widgets: widget_content is not a dict');
    await refused({ widget_type: 'zform' }, 'Widgets: extra_data is not in widget_content');
    await refused({ widget_type: 'poll', extra_data: {} }, 'Widgets: unknown widget type: poll');
    await refused({ widget_type: 'zform', extra_data: { type: 'buttons' } }, 'Widgets: unknown zform type: buttons');
    await refused(
      { widget_type: 'zform', extra_data: { type: 'choices', choices: [] } },
      'Widgets: heading key is missing from extra_data',
    );
    await refused(
      {
        widget_type: 'zform',
        extra_data: { type: 'choices', heading: 'H', choices: [{ short_name: 'A', long_name: 'B' }] },
      },
      'Widgets: reply key is missing from extra_data["choices"][0]',
    );
  });

  test("a widget's content cannot be edited; its topic can", async () => {
    const stream = await stack.createStream({ name: 'fixed polls', creatorId: alice.id, subscribers: [alice.id] });
    const id = await sendMessage(alice, {
      type: 'stream',
      to: stream.id,
      topic: 'before',
      content: '/poll Fixed?\nYes',
    });
    expectError(
      await alice.client.patch(`/api/v1/messages/${id}`, { content: '/poll Changed?' }),
      400,
      'BAD_REQUEST',
      'Widgets cannot be edited.',
    );
    expect((await alice.client.patch(`/api/v1/messages/${id}`, { topic: 'after' })).status).toBe(200);
    const message = await fetchOne(alice, id);
    expect([message.subject, message.content]).toEqual(['after', expect.stringContaining('/poll Fixed?')]);
  });
});

describe('POST /submessage', () => {
  test("a second user's vote and new option reach both users' queues, and every fetch, in order", async () => {
    const stream = await stack.createStream({ name: 'voting', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const id = await sendMessage(alice, {
      type: 'stream',
      to: stream.id,
      topic: 'vote',
      content: '/poll Tea?\nYes\nNo',
    });
    const queues = await Promise.all(
      [alice, bob].map((user) => registerEventQueue(user.client, { event_types: JSON.stringify(['submessage']) })),
    );
    const vote = JSON.stringify({ type: 'vote', key: 'canned,0', vote: 1 });
    expect((await submit(bob, id, vote)).body).toEqual({ result: 'success', msg: '' });
    const option = { type: 'new_option', idx: 1, option: 'Only green' };
    expect((await submit(bob, id, option)).status).toBe(200);

    const received = await Promise.all(queues.map((queue) => queue.next(2)));
    for (const events of received) {
      expect(events).toEqual([
        {
          id: expect.any(Number),
          type: 'submessage',
          msg_type: 'widget',
          message_id: id,
          submessage_id: expect.any(Number),
          sender_id: bob.id,
          content: vote,
        },
        expect.objectContaining({ type: 'submessage', sender_id: bob.id, content: JSON.stringify(option) }),
      ]);
    }
    const [voteEvent, optionEvent] = received[0];
    const submessages = (await fetchOne(alice, id)).submessages;
    expect(submessages.map((submessage: { id: number }) => submessage.id)).toEqual([
      expect.any(Number),
      voteEvent.submessage_id,
      optionEvent.submessage_id,
    ]);
    expect(submessages[0].id).toBeLessThan(voteEvent.submessage_id);
    expect(submessages[1]).toEqual({
      msg_type: 'widget',
      content: vote,
      message_id: id,
      sender_id: bob.id,
      id: voteEvent.submessage_id,
    });

    // The poll's author may change its question.
    expect((await submit(alice, id, { type: 'question', question: 'Coffee?' })).status).toBe(200);
  });

  test("a poll's data is checked as Zulip checks it", async () => {
    const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: '/poll Checked?' });
    const invalid = async (content: unknown, msg: string, user = bob) =>
      expectError(await submit(user, id, content), 400, 'BAD_REQUEST', msg);
    await invalid('{not json', 'Invalid json for submessage');
    await invalid([1], 'poll data is not a dict');
    await invalid({ key: 'x' }, 'type key is missing from poll data');
    await invalid({ type: 7 }, 'poll data["type"] is not a string');
    await invalid({ type: 'vote', key: 'canned,0', vote: 2 }, 'Invalid poll data["vote"]');
    await invalid({ type: 'vote', key: 'canned,0' }, 'vote key is missing from poll data');
    await invalid({ type: 'vote', key: 3, vote: 1 }, 'poll data["key"] is not a string');
    await invalid({ type: 'vote', key: 'canned,0', vote: 1, extra: true }, 'Unexpected arguments: extra');
    await invalid({ type: 'new_option', option: 'Maybe', idx: 1001 }, 'poll data["idx"] is too large');
    await invalid({ type: 'new_option', option: 'Maybe', idx: 1.5 }, 'poll data["idx"] is not an integer');
    await invalid({ type: 'question', question: 'Mine now?' }, "You can't edit a question unless you are the author.");
    await invalid({ type: 'close' }, 'Unknown type for poll data: close');
    // Nothing was stored.
    expect((await fetchOne(alice, id)).submessages).toHaveLength(1);
  });

  test("a to-do list's tasks, strikes and title", async () => {
    const stream = await stack.createStream({ name: 'chores', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const id = await sendMessage(alice, {
      type: 'stream',
      to: stream.id,
      topic: 'week',
      content: '/todo Chores\nDishes',
    });
    const queue = await registerEventQueue(alice.client, { event_types: JSON.stringify(['submessage']) });
    const task = { type: 'new_task', key: 1, task: 'Laundry', desc: 'whites', completed: false };
    expect((await submit(bob, id, task)).status).toBe(200);
    expect((await submit(bob, id, { type: 'strike', key: `1,${bob.id}` })).status).toBe(200);
    expect((await submit(alice, id, { type: 'new_task_list_title', title: 'Weekly chores' })).status).toBe(200);
    const events = await queue.next(3);
    expect(events.map((event) => [event.sender_id, JSON.parse(event.content).type])).toEqual([
      [bob.id, 'new_task'],
      [bob.id, 'strike'],
      [alice.id, 'new_task_list_title'],
    ]);

    const invalid = async (content: unknown, msg: string) =>
      expectError(await submit(bob, id, content), 400, 'BAD_REQUEST', msg);
    await invalid(
      { type: 'new_task_list_title', title: 'Mine' },
      "You can't edit the task list title unless you are the author.",
    );
    await invalid({ ...task, key: -1 }, 'todo data["key"] is too small');
    await invalid({ ...task, completed: 'no' }, 'todo data["completed"] is not a boolean');
    await invalid({ type: 'new_task', key: 2, task: 'Mop', desc: '' }, 'completed key is missing from todo data');
    await invalid({ type: 'strike', key: 1 }, 'todo data["key"] is not a string');
    await invalid({ type: 'vote' }, 'Unknown type for todo data: vote');
    expect((await fetchOne(bob, id)).submessages).toHaveLength(4);
  });

  test('no access to the message, no such message, and the first-submessage rule', async () => {
    const secret = await stack.createStream({
      name: 'secret polls',
      creatorId: alice.id,
      inviteOnly: true,
      subscribers: [alice.id, bob.id],
    });
    const id = await sendMessage(alice, { type: 'stream', to: secret.id, topic: 'q', content: '/poll Secret?\nA\nB' });
    const vote = { type: 'vote', key: 'canned,0', vote: 1 };
    expectError(await submit(carol, id, vote), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(await submit(bob, 2_000_000_000, vote), 400, 'BAD_REQUEST', 'Invalid message(s)');

    // On a message without a widget, only its sender may start one.
    const plain = await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'just words' });
    expectError(await submit(bob, plain, vote), 400, 'BAD_REQUEST', 'You cannot attach a submessage to this message.');
    expect(
      (await submit(alice, plain, { widget_type: 'poll', extra_data: { question: 'Late?', options: [] } })).status,
    ).toBe(200);
    expect((await submit(bob, plain, vote)).status).toBe(200);

    // Carol gets no event of a message she does not have.
    const carolQueue = await registerEventQueue(carol.client, { event_types: JSON.stringify(['submessage']) });
    expect((await submit(bob, id, vote)).status).toBe(200);
    await settleEvents(stack);
    expect(await carolQueue.drain()).toEqual([]);
  });

  test('parameters', async () => {
    const id = await sendMessage(alice, { type: 'direct', to: [bob.id], content: '/poll Params?' });
    expectError(
      await bob.client.post('/api/v1/submessage', { message_id: id, content: '{}' } as never),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'msg_type' argument",
    );
    expectError(
      await bob.client.post('/api/v1/submessage', { message_id: 'x', msg_type: 'widget', content: '{}' } as never),
      400,
      'BAD_REQUEST',
    );
  });
});
