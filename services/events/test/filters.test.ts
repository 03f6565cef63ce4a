// What each queue receives, and in which form: event_types, narrows, client capabilities,
// and the message finalisation (apply_markdown, client_gravatar, empty topics).
import type { ZulipEvent } from '@teamchat/bus';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, settleEvents } from '@teamchat/testing';
import {
  alertWords,
  commitEvent,
  directMessageEvent,
  directTyping,
  sendTransient,
  streamMessageEvent,
  streamTyping,
} from './support/producers';

let stack: Stack;
let sender: TestUser;
let user: TestUser;
const denmark = { id: 11, name: 'Denmark' };
const sweden = { id: 12, name: 'Sweden' };

beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  sender = await stack.createUser({ fullName: 'Sender' });
  user = await stack.createUser({ fullName: 'Receiver' });
});
afterAll(() => stack.close());

/** Registers queues, runs `produce`, and returns what each queue holds once the fan-out is done. */
async function received(queueParams: Record<string, unknown>[], produce: () => Promise<void>, owner: TestUser = user) {
  const queues = await Promise.all(
    queueParams.map((params) => registerEventQueue(owner.client, { fetch_event_types: [], ...params })),
  );
  await produce();
  await settleEvents(stack);
  return Promise.all(queues.map((queue) => queue.drain()));
}

test('event_types limits the queue to those types', async () => {
  const [all, onlyTyping] = await received([{}, { event_types: ['typing'] }], async () => {
    await commitEvent(stack, alertWords(['x']), [user.id]);
    await sendTransient(stack, directTyping(sender, [user, sender]), [user.id, sender.id]);
  });
  expect(all.map((event) => event.type)).toEqual(['alert_words', 'typing']);
  expect(onlyTyping.map((event) => event.type)).toEqual(['typing']);
});

test('muted_topics is left out for clients that also asked for user_topic', async () => {
  const mutedTopics = { type: 'muted_topics', muted_topics: [['Denmark', 'boats', 1700000000]] } satisfies ZulipEvent;
  const [legacy, modern] = await received(
    [{ event_types: ['muted_topics'] }, { event_types: ['muted_topics', 'user_topic'] }],
    () => commitEvent(stack, mutedTopics, [user.id]),
  );
  expect(legacy).toEqual([{ id: 0, ...mutedTopics }]);
  expect(modern).toEqual([]);
});

describe('message events', () => {
  test('apply_markdown picks the HTML or the Markdown; internal fields never leave', async () => {
    const event = streamMessageEvent(sender, denmark);
    const [html, markdown] = await received([{ apply_markdown: true }, { apply_markdown: false }], () =>
      commitEvent(stack, event, [{ id: user.id, flags: ['mentioned'] }]),
    );
    const {
      rendered_content: rendered,
      _external_avatar: _external,
      ...plain
    } = event.message as Record<string, unknown>;
    expect(html).toEqual([
      {
        id: 0,
        type: 'message',
        flags: ['mentioned'],
        message: { ...plain, content: rendered, content_type: 'text/html', avatar_url: null },
      },
    ]);
    expect(markdown).toEqual([
      {
        id: 0,
        type: 'message',
        flags: ['mentioned'],
        message: { ...plain, content: 'hello **world**', content_type: 'text/x-markdown', avatar_url: null },
      },
    ]);
  });

  test('client_gravatar: external avatars are left to the client, unless it says it cannot', async () => {
    const external = streamMessageEvent(sender, denmark, { externalAvatar: true });
    const uploaded = streamMessageEvent(sender, denmark, { externalAvatar: false });
    const [gravatar, noGravatar] = await received(
      [{ event_types: ['message'] }, { event_types: ['message'], client_gravatar: false }],
      async () => {
        await commitEvent(stack, external, [user.id]);
        await commitEvent(stack, uploaded, [user.id]);
      },
    );
    const url = (external.message as { avatar_url: string }).avatar_url;
    expect(gravatar.map((event) => event.message.avatar_url)).toEqual([null, url]);
    expect(noGravatar.map((event) => event.message.avatar_url)).toEqual([url, url]);
    expect(gravatar.map((event) => event.flags)).toEqual([[], []]);
  });

  test('an empty topic is shown as realm_empty_topic_display_name unless the client handles it', async () => {
    const event = streamMessageEvent(sender, denmark, { topic: '' });
    const [legacy, modern] = await received(
      [{ event_types: ['message'] }, { event_types: ['message'], client_capabilities: { empty_topic_name: true } }],
      () => commitEvent(stack, event, [user.id]),
    );
    expect(legacy[0].message.subject).toBe('general chat');
    expect(modern[0].message.subject).toBe('');
  });

  test.each([
    ['a channel, legacy form', [['channel', 'denmark']], ['Denmark', 'Denmark/boats']],
    ['a channel by id', [{ operator: 'channel', operand: denmark.id }], ['Denmark', 'Denmark/boats']],
    ['stream (the old name)', [['stream', 'Sweden']], ['Sweden']],
    ['a topic', [['topic', 'boats']], ['Denmark/boats']],
    ['a negated channel', [{ operator: 'channel', operand: 'Denmark', negated: true }], ['Sweden', 'direct']],
    ['direct messages', [['is', 'dm']], ['direct']],
    ['mentions', [['is', 'mentioned']], ['Sweden']],
    ['a sender by email', () => [['sender', sender.email]], ['Denmark', 'Denmark/boats', 'Sweden', 'direct']],
    ['another sender by id', () => [{ operator: 'sender', operand: user.id }], []],
  ])('a narrow to %s gets only its messages', async (_name, narrowSpec, expected) => {
    const narrow = typeof narrowSpec === 'function' ? narrowSpec() : narrowSpec;
    const [events] = await received([{ event_types: ['message'], narrow }], async () => {
      await commitEvent(stack, streamMessageEvent(sender, denmark), [user.id]);
      await commitEvent(stack, streamMessageEvent(sender, denmark, { topic: 'boats' }), [user.id]);
      await commitEvent(stack, streamMessageEvent(sender, sweden), [{ id: user.id, flags: ['mentioned'] }]);
      await commitEvent(stack, directMessageEvent(sender, [user, sender]), [user.id]);
    });
    const describe = (event: Record<string, any>) =>
      event.message.type === 'private'
        ? 'direct'
        : event.message.subject === 'boats'
          ? `${event.message.display_recipient}/boats`
          : event.message.display_recipient;
    expect(events.map(describe)).toEqual(expected);
  });

  test('all_public_streams queues also get public-channel messages their user was not sent', async () => {
    const bot = await stack.createUser({ email: 'watcher-bot@example.com', botType: 1, botOwnerId: user.id });
    const open = await stack.createStream({ name: 'open', subscribers: [sender.id] });
    const secret = await stack.createStream({ name: 'secret', inviteOnly: true, subscribers: [sender.id] });
    const [watching, ordinary] = await received(
      [{ event_types: ['message'], all_public_streams: true }, { event_types: ['message'] }],
      async () => {
        await commitEvent(stack, streamMessageEvent(sender, open, { content: 'public' }), [sender.id]);
        await commitEvent(stack, streamMessageEvent(sender, secret, { content: 'private' }), [sender.id]);
      },
      bot,
    );
    expect(watching.map((event) => [event.message.content, event.flags])).toEqual([['public', []]]);
    expect(ordinary).toEqual([]);
  });
});

describe('capabilities', () => {
  test('channel typing only reaches clients with stream_typing_notifications; its empty topic is renamed', async () => {
    const [without, withCapability, withBoth] = await received(
      [
        { event_types: ['typing'] },
        { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true } },
        { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true, empty_topic_name: true } },
      ],
      async () => {
        await sendTransient(stack, streamTyping(sender, denmark.id, ''), [user.id]);
        await sendTransient(stack, directTyping(sender, [user, sender]), [user.id]);
      },
    );
    expect(without.map((event) => event.message_type)).toEqual(['direct']);
    expect(withCapability.map((event) => [event.message_type, event.topic])).toEqual([
      ['stream', 'general chat'],
      ['direct', undefined],
    ]);
    expect(withBoth[0].topic).toBe('');
  });

  test('legacy settings events only reach clients without user_settings_object', async () => {
    const legacy = {
      type: 'update_display_settings',
      user: user.email,
      setting_name: 'web_font_size_px',
      setting: 16,
    } satisfies ZulipEvent;
    const modern = {
      type: 'user_settings',
      op: 'update',
      property: 'web_font_size_px',
      value: 16,
    } satisfies ZulipEvent;
    const [old, current] = await received([{}, { client_capabilities: { user_settings_object: true } }], async () => {
      await commitEvent(stack, legacy, [user.id]);
      await commitEvent(stack, modern, [user.id]);
    });
    expect(old.map((event) => event.type)).toEqual(['update_display_settings', 'user_settings']);
    expect(current.map((event) => event.type)).toEqual(['user_settings']);
  });

  test('bulk deletions are split for clients without bulk_message_deletion', async () => {
    const deletion = {
      type: 'delete_message',
      message_type: 'stream',
      stream_id: denmark.id,
      topic: 'boats',
      message_ids: [41, 42],
    } satisfies ZulipEvent;
    const [bulk, single] = await received([{ client_capabilities: { bulk_message_deletion: true } }, {}], () =>
      commitEvent(stack, deletion, [user.id]),
    );
    expect(bulk).toEqual([{ id: 0, ...deletion }]);
    const { message_ids: _ids, ...rest } = deletion;
    expect(single).toEqual([
      { id: 0, ...rest, message_id: 41 },
      { id: 1, ...rest, message_id: 42 },
    ]);
  });
});
