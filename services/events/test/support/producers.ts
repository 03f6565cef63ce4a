// Producing events the way services do, for tests that run before the producing services
// exist: committed events through the outbox (EventBus.sendEventOnCommit inside transaction()),
// transient ones (typing) straight to the intake.
import type { Recipient, ZulipEvent, ZulipEventOf } from '@teamchat/bus';
import { transaction } from '@teamchat/db';
import type { Stack, TestUser } from '@teamchat/stack';

export async function commitEvent(stack: Stack, event: ZulipEvent, users: Recipient[]): Promise<void> {
  await transaction(stack.db, (tx) => stack.deps.bus.sendEventOnCommit(tx, stack.realm.id, event, users));
}

export async function sendTransient(stack: Stack, event: ZulipEvent, users: Recipient[]): Promise<void> {
  await stack.deps.bus.sendTransientEvent(stack.realm.id, event, users);
}

/**
 * The n-th event of a stream that alternates how events travel: alert words `word` to `users`,
 * through the outbox for even n, transient (straight to the intake) for odd n.
 */
export async function sendAlternating(stack: Stack, n: number, word: string, users: number[]): Promise<void> {
  if (n % 2 === 0) await commitEvent(stack, alertWords([word]), users);
  else await sendTransient(stack, alertWords([word]), users);
}

export function alertWords(words: string[]): ZulipEvent {
  return { type: 'alert_words', alert_words: words };
}

export function directTyping(sender: TestUser, recipients: TestUser[], op: 'start' | 'stop' = 'start'): ZulipEvent {
  return {
    type: 'typing',
    op,
    message_type: 'direct',
    sender: { user_id: sender.id, email: sender.email },
    recipients: recipients.map((user) => ({ user_id: user.id, email: user.email })),
  };
}

export function streamTyping(
  sender: TestUser,
  streamId: number,
  topic: string,
  op: 'start' | 'stop' = 'start',
): ZulipEvent {
  return {
    type: 'typing',
    op,
    message_type: 'stream',
    sender: { user_id: sender.id, email: sender.email },
    stream_id: streamId,
    topic,
  };
}

let nextMessageId = 1000;

/** A message event as the messages service sends it: raw and rendered content, internal fields. */
export function streamMessageEvent(
  sender: TestUser,
  stream: { id: number; name: string },
  options: { topic?: string; content?: string; rendered?: string; externalAvatar?: boolean } = {},
): ZulipEventOf<'message'> {
  return {
    type: 'message',
    message: {
      id: nextMessageId++,
      sender_id: sender.id,
      sender_email: sender.email,
      sender_full_name: sender.profile.full_name,
      sender_realm_str: sender.realm.string_id,
      content: options.content ?? 'hello **world**',
      rendered_content: options.rendered ?? '<p>hello <strong>world</strong></p>',
      recipient_id: 7,
      timestamp: Math.floor(Date.now() / 1000),
      client: 'test suite',
      subject: options.topic ?? 'greetings',
      topic_links: [],
      is_me_message: false,
      reactions: [],
      submessages: [],
      display_recipient: stream.name,
      type: 'stream',
      stream_id: stream.id,
      avatar_url: 'https://secure.gravatar.com/avatar/0123456789abcdef0123456789abcdef?d=identicon&version=1',
      _external_avatar: options.externalAvatar ?? true,
    },
    flags: [],
  };
}

export function directMessageEvent(sender: TestUser, recipients: TestUser[]): ZulipEvent {
  return {
    type: 'message',
    message: {
      id: nextMessageId++,
      sender_id: sender.id,
      sender_email: sender.email,
      sender_full_name: sender.profile.full_name,
      sender_realm_str: sender.realm.string_id,
      content: 'psst',
      rendered_content: '<p>psst</p>',
      recipient_id: 9,
      timestamp: Math.floor(Date.now() / 1000),
      client: 'test suite',
      subject: '',
      topic_links: [],
      is_me_message: false,
      reactions: [],
      submessages: [],
      display_recipient: recipients.map((user) => ({
        id: user.id,
        email: user.email,
        full_name: user.profile.full_name,
        is_mirror_dummy: false,
      })),
      type: 'private',
      avatar_url: 'https://secure.gravatar.com/avatar/0123456789abcdef0123456789abcdef?d=identicon&version=1',
      _external_avatar: true,
    },
    flags: [],
  };
}
