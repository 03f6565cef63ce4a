// verify_action for messages: sent (channel, direct, group direct), edited (content, topic,
// moved to another channel), deleted; flags (read, unread, starred, mark all as read). Register's
// state plus the events each sends must be a fresh register's state, for every capability set.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { until, verifyAction } from '@teamchat/testing';
import { CAPABILITY_SETS, ok } from './support';

let stack: Stack;
let me: TestUser;
let other: TestUser;
let third: TestUser;
let generalId: number;
let elsewhereId: number;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels', 'events', 'worker'] });
  me = await stack.createUser({ fullName: 'Me Myself', role: Role.OWNER });
  other = await stack.createUser({ fullName: 'Other Person' });
  third = await stack.createUser({ fullName: 'Third Person' });
  ok(
    await me.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }, { name: 'elsewhere' }],
      principals: [me.id, other.id, third.id],
    }),
  );
  generalId = ok(await me.client.get('/api/v1/get_stream_id', { stream: 'general' })).stream_id;
  elsewhereId = ok(await me.client.get('/api/v1/get_stream_id', { stream: 'elsewhere' })).stream_id;
});

afterAll(() => stack?.close());

const sendToChannel = (from: TestUser, topic: string, content = 'hello') =>
  from.client.post('/api/v1/messages', { type: 'stream', to: generalId, topic, content }).then(ok);

describe.each(CAPABILITY_SETS)('messages, %s', (_name, register) => {
  test('a channel message from someone else (unread, first in its channel)', async () => {
    const { events } = await verifyAction(stack, me, register, () => sendToChannel(other, 'news'));
    // The message (the first in its channel also comes with the channel's first_message_id).
    expect(events.map((event) => event.type)).toContain('message');
  });

  test('a channel message mentioning the user', async () => {
    await verifyAction(stack, me, register, () => sendToChannel(other, 'news', 'hi @**Me Myself**'));
  });

  test('a wildcard mention', async () => {
    await verifyAction(stack, me, register, () => sendToChannel(other, 'news', 'hi @**all**'));
  });

  test('a channel message the user sends (read)', async () => {
    await verifyAction(stack, me, register, () => sendToChannel(me, 'mine'));
  });

  test('a direct message received and sent', async () => {
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/messages', { type: 'private', to: [me.id], content: 'just us' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/messages', { type: 'private', to: [other.id], content: 'back' }).then(ok),
    );
  });

  test('a direct message to oneself', async () => {
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/messages', { type: 'private', to: [me.id], content: 'note' }).then(ok),
    );
  });

  test('a group direct message', async () => {
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/messages', { type: 'private', to: [me.id, third.id], content: 'three' }).then(ok),
    );
  });

  test("a message's content edited", async () => {
    const { id } = await sendToChannel(other, 'edits');
    await verifyAction(
      stack,
      me,
      register,
      () => other.client.patch(`/api/v1/messages/${id}`, { content: 'edited' }).then(ok),
      { stateChange: false },
    );
  });

  test("an unread message's topic changed (the whole topic)", async () => {
    const { id } = await sendToChannel(other, 'old topic');
    await sendToChannel(other, 'old topic', 'second');
    await verifyAction(stack, me, register, () =>
      other.client
        .patch(`/api/v1/messages/${id}`, {
          topic: 'new topic',
          propagate_mode: 'change_all',
          send_notification_to_old_thread: false,
          send_notification_to_new_thread: false,
        })
        .then(ok),
    );
  });

  test("a topic moved with the notification bot's breadcrumbs in both topics", async () => {
    const { id } = await sendToChannel(other, 'crumbs');
    await verifyAction(stack, me, register, () =>
      other.client
        .patch(`/api/v1/messages/${id}`, {
          topic: 'crumbs moved',
          propagate_mode: 'change_all',
          send_notification_to_old_thread: true,
          send_notification_to_new_thread: true,
        })
        .then(ok),
    );
  });

  test("a topic resolved by someone else (the notification bot's notice), then unresolved at once (the notice deleted)", async () => {
    const { id } = await sendToChannel(me, 'to resolve');
    await verifyAction(stack, me, register, () =>
      other.client.patch(`/api/v1/messages/${id}`, { topic: '✔ to resolve', propagate_mode: 'change_all' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      other.client.patch(`/api/v1/messages/${id}`, { topic: 'to resolve', propagate_mode: 'change_all' }).then(ok),
    );
  });

  test('unread messages moved to another channel', async () => {
    const { id } = await sendToChannel(other, 'moving');
    await verifyAction(stack, me, register, () =>
      me.client
        .patch(`/api/v1/messages/${id}`, {
          stream_id: elsewhereId,
          propagate_mode: 'change_all',
          send_notification_to_old_thread: false,
          send_notification_to_new_thread: false,
        })
        .then(ok),
    );
  });

  test('an unread channel message deleted', async () => {
    const { id } = await sendToChannel(other, 'doomed');
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/messages/${id}`).then(ok));
  });

  test('the newest direct message deleted', async () => {
    const { id } = await other.client
      .post('/api/v1/messages', { type: 'private', to: [me.id], content: 'oops' })
      .then(ok);
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/messages/${id}`).then(ok));
  });

  test('messages marked read, then unread', async () => {
    const { id: first } = await sendToChannel(other, 'flags', 'hi @**Me Myself**');
    const { id: second } = await other.client
      .post('/api/v1/messages', { type: 'private', to: [me.id, third.id], content: 'group' })
      .then(ok);
    const messages = [first, second];
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/messages/flags', { messages, op: 'add', flag: 'read' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/messages/flags', { messages, op: 'remove', flag: 'read' }).then(ok),
    );
  });

  test('a message starred and unstarred', async () => {
    const { id } = await sendToChannel(other, 'stars');
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'starred' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/messages/flags', { messages: [id], op: 'remove', flag: 'starred' }).then(ok),
    );
  });

  test('a message collapsed (a flag register does not show)', async () => {
    const { id } = await sendToChannel(other, 'collapse');
    await verifyAction(
      stack,
      me,
      register,
      () => me.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'collapsed' }).then(ok),
      { stateChange: false },
    );
  });

  test('a channel, a topic, then everything marked as read', async () => {
    const { id: first } = await sendToChannel(other, 'bulk', 'hi @**Me Myself**');
    await sendToChannel(other, 'bulk other');
    await other.client.post('/api/v1/messages', { type: 'private', to: [me.id], content: 'bulk dm' }).then(ok);
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/mark_topic_as_read', { stream_id: generalId, topic_name: 'bulk' }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/mark_stream_as_read', { stream_id: generalId }).then(ok),
    );
    await verifyAction(stack, me, register, async () => {
      // Done in the background when large: wait until nothing is left unread.
      const { complete } = ok(await me.client.post('/api/v1/mark_all_as_read'));
      const unreadLeft = async () =>
        (
          ok(
            await me.client.get('/api/v1/messages', {
              anchor: 'newest',
              num_before: 1,
              num_after: 0,
              narrow: [{ operator: 'is', operand: 'unread' }],
            }),
          ).messages as unknown[]
        ).length;
      expect(complete || (await until(async () => (await unreadLeft()) === 0, 15_000))).toBe(true);
    });
    expect(first).toBeGreaterThan(0);
  });

  test('a topic marked read by narrow', async () => {
    await sendToChannel(other, 'narrowed');
    await sendToChannel(other, 'narrowed', 'again');
    await verifyAction(stack, me, register, () =>
      me.client
        .post('/api/v1/messages/flags/narrow', {
          anchor: 'oldest',
          num_before: 0,
          num_after: 1000,
          narrow: [
            { operator: 'channel', operand: generalId },
            { operator: 'topic', operand: 'narrowed' },
          ],
          op: 'add',
          flag: 'read',
        })
        .then(ok),
    );
  });
});
