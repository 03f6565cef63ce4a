// The notification bot's messages about moves (Zulip 10.2's maybe_send_resolve_topic_notifications
// and send_message_moved_breadcrumbs): their exact words, channel, topic and sender, who gets
// them unread, and the request parameters that turn them on and off.
import { NOTIFICATION_BOT } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, ofType, sendMessage } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let botId: number;
let channelCounter = 0;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'events'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  botId = (await stack.db.userProfile.findFirstOrThrow({ where: { delivery_email: NOTIFICATION_BOT } })).id;
});
afterAll(() => stack.close());

const edit = (user: TestUser, id: number, params: Record<string, unknown>) =>
  user.client.patch(`/api/v1/messages/${id}`, params as never);

async function channel(prefix: string) {
  return stack.createStream({
    name: `${prefix}-${++channelCounter}`,
    creatorId: alice.id,
    subscribers: [alice.id, bob.id, carol.id],
  });
}

async function topicMessages(streamId: number, topic: string) {
  return stack.db.message.findMany({ where: { stream_id: streamId, topic }, orderBy: { id: 'asc' } });
}

const mention = (user: TestUser) => `@_**${user.profile.full_name}|${user.id}**`;

describe('resolving a topic', () => {
  test('"has marked this topic as resolved", in the resolved topic, unread only for its participants', async () => {
    const stream = await channel('resolve');
    const first = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'bug', content: 'broken' });
    await sendMessage(bob, { type: 'stream', to: stream.id, topic: 'bug', content: 'fixed' });
    const captured = await captureEvents(stack, async () => {
      const response = await edit(carol, first, { topic: '✔ bug', propagate_mode: 'change_all' });
      expect(response.status).toBe(200);
    });
    const messages = await topicMessages(stream.id, '✔ bug');
    const notice = messages[messages.length - 1];
    expect(notice).toMatchObject({
      sender_id: botId,
      stream_id: stream.id,
      topic: '✔ bug',
      content: `${mention(carol)} has marked this topic as resolved.`,
    });
    // Alice and Bob wrote in the topic: unread for them; Carol (who resolved it) has it read.
    const [event] = ofType(captured, 'message');
    expect(event.event).toMatchObject({
      message: { id: notice.id, sender_id: botId, sender_email: NOTIFICATION_BOT, subject: '✔ bug' },
    });
    expect(event.recipients).toEqual(expect.arrayContaining([alice.id, bob.id, { id: carol.id, flags: ['read'] }]));
    // No breadcrumb for resolving, and none in the old topic by default.
    expect(await topicMessages(stream.id, 'bug')).toHaveLength(0);
    expect(messages.filter((message) => message.sender_id === botId)).toHaveLength(1);

    // Read through the API by a participant.
    const fetched = await alice.client.get(`/api/v1/messages/${notice.id}`, {});
    expect(fetched.body.message).toMatchObject({
      sender_id: botId,
      sender_full_name: 'Notification Bot',
      subject: '✔ bug',
      content: expect.stringContaining('has marked this topic as resolved.'),
    });
  });

  test('unresolving soon after deletes the notice; later, "has marked this topic as unresolved"', async () => {
    const stream = await channel('undo');
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'task', content: 'todo' });
    await edit(alice, id, { topic: '✔ task', propagate_mode: 'change_all' });
    const [notice] = (await topicMessages(stream.id, '✔ task')).filter((message) => message.sender_id === botId);
    const captured = await captureEvents(stack, async () => {
      expect((await edit(alice, id, { topic: 'task', propagate_mode: 'change_all' })).status).toBe(200);
    });
    // Within the grace period: the notice is deleted, no unresolved notice is written.
    expect(await stack.db.message.findUnique({ where: { id: notice.id } })).toBeNull();
    expect(ofType(captured, 'delete_message')[0].event).toMatchObject({
      message_ids: [notice.id],
      stream_id: stream.id,
      topic: 'task',
    });
    expect((await topicMessages(stream.id, 'task')).map((message) => message.sender_id)).toEqual([alice.id]);

    // Resolved again, and the notice is older than the grace period: unresolving writes a notice.
    await edit(alice, id, { topic: '✔ task', propagate_mode: 'change_all' });
    const [again] = (await topicMessages(stream.id, '✔ task')).filter((message) => message.sender_id === botId);
    await stack.db.message.update({ where: { id: again.id }, data: { date_sent: new Date(Date.now() - 120_000) } });
    await edit(bob, id, { topic: 'task', propagate_mode: 'change_all' });
    const after = await topicMessages(stream.id, 'task');
    expect(after.map((message) => message.content)).toEqual([
      'todo',
      `${mention(alice)} has marked this topic as resolved.`,
      `${mention(bob)} has marked this topic as unresolved.`,
    ]);
  });
});

describe('moving messages', () => {
  test('a whole topic: "This topic was moved here from" in the new topic, and to the old one when asked', async () => {
    const stream = await channel('move');
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'old', content: 'one' });
    await sendMessage(bob, { type: 'stream', to: stream.id, topic: 'old', content: 'two' });
    const response = await edit(alice, id, {
      topic: 'new',
      propagate_mode: 'change_all',
      send_notification_to_old_thread: true,
    });
    expect(response.status).toBe(200);
    const moved = await topicMessages(stream.id, 'new');
    expect(moved[moved.length - 1]).toMatchObject({
      sender_id: botId,
      content: `This topic was moved here from #**${stream.name}>old** by ${mention(alice)}.`,
    });
    expect(moved[moved.length - 1].rendered_content).toContain('class="stream-topic"');
    const old = await topicMessages(stream.id, 'old');
    expect(old).toHaveLength(1);
    expect(old[0]).toMatchObject({
      sender_id: botId,
      content: `This topic was moved to #**${stream.name}>new** by ${mention(alice)}.`,
    });
  });

  test('one message into a topic that has others: a link to it; the old topic keeps the rest', async () => {
    const stream = await channel('one');
    await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'source', content: 'stays' });
    const id = await sendMessage(bob, { type: 'stream', to: stream.id, topic: 'source', content: 'goes' });
    await sendMessage(carol, { type: 'stream', to: stream.id, topic: 'target', content: 'was here' });
    await edit(bob, id, { topic: 'target', propagate_mode: 'change_one', send_notification_to_old_thread: true });
    const target = await topicMessages(stream.id, 'target');
    const slug = `${stream.id}-${stream.name}`;
    expect(target[target.length - 1]).toMatchObject({
      sender_id: botId,
      content: `[A message](${stack.realm.host.startsWith('http') ? '' : 'http://'}${stack.realm.host}/#narrow/channel/${slug}/topic/target/near/${id}) was moved here from #**${stream.name}>source** by ${mention(bob)}.`,
    });
    const source = await topicMessages(stream.id, 'source');
    expect(source[source.length - 1]).toMatchObject({
      sender_id: botId,
      content: `A message was moved from this topic to #**${stream.name}>target** by ${mention(bob)}.`,
    });
  });

  test('several messages, part of a topic, to another channel: counted in both breadcrumbs', async () => {
    const from = await channel('from');
    const to = await channel('to');
    await sendMessage(alice, { type: 'stream', to: from.id, topic: 'mixed', content: 'stays' });
    const id = await sendMessage(alice, { type: 'stream', to: from.id, topic: 'mixed', content: 'goes 1' });
    await sendMessage(bob, { type: 'stream', to: from.id, topic: 'mixed', content: 'goes 2' });
    await sendMessage(carol, { type: 'stream', to: to.id, topic: 'mixed', content: 'already there' });
    const response = await edit(alice, id, {
      stream_id: to.id,
      propagate_mode: 'change_later',
      send_notification_to_old_thread: true,
    });
    expect(response.status).toBe(200);
    const arrived = await topicMessages(to.id, 'mixed');
    expect(arrived[arrived.length - 1]).toMatchObject({
      sender_id: botId,
      stream_id: to.id,
      content: `2 messages were moved here from #**${from.name}>mixed** by ${mention(alice)}.`,
    });
    const left = await topicMessages(from.id, 'mixed');
    expect(left[left.length - 1]).toMatchObject({
      sender_id: botId,
      stream_id: from.id,
      content: `2 messages were moved from this topic to #**${to.name}>mixed** by ${mention(alice)}.`,
    });
  });

  test('gates: send_notification_to_new_thread=false and the default old-thread false write nothing', async () => {
    const stream = await channel('quiet');
    const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'a', content: 'hello' });
    await edit(alice, id, { topic: 'b', propagate_mode: 'change_all', send_notification_to_new_thread: false });
    expect((await topicMessages(stream.id, 'b')).map((message) => message.sender_id)).toEqual([alice.id]);
    expect(await topicMessages(stream.id, 'a')).toHaveLength(0);
    // A content edit is no move: nothing from the bot.
    await edit(alice, id, { content: 'hello again' });
    expect(await stack.db.message.count({ where: { stream_id: stream.id, sender_id: botId } })).toBe(0);
  });
});
