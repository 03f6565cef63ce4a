// Permission matrix: sending (can_send_message_group, guests and private channels), reading
// single messages, and personal flags on messages one may or may not read.

import { Role, systemGroupId, type SystemGroupName } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { sendMessage } from '@teamchat/testing';
import { createCast, everyone, matrix, only, refused, type Cast } from './matrix';

let stack: Stack;
let cast: Cast;
const theCast = () => cast;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const INVALID_MESSAGES = refused('Invalid message(s)');
const CANNOT_POST = refused('You do not have permission to post in this channel.');
const notAuthorized = (name: string) => refused(`Not authorized to send to channel '${name}'`);

let counter = 0;
const uniqueName = (prefix: string) => `${prefix}-${++counter}`;

async function channel(options: { private?: boolean; subscribers?: TestUser[]; sendGroup?: SystemGroupName } = {}) {
  const name = uniqueName(options.private ? 'secret' : 'open');
  const stream = await stack.createStream({
    name,
    creatorId: cast.owner.id,
    inviteOnly: options.private ?? false,
    subscribers: (options.subscribers ?? [cast.owner]).map((user) => user.id),
  });
  if (options.sendGroup) {
    await stack.db.groupSetting.update({
      where: {
        owner_kind_owner_id_name: { owner_kind: 'stream', owner_id: stream.id, name: 'can_send_message_group' },
      },
      data: { group_id: await systemGroupId(stack.db, stack.realm.id, options.sendGroup) },
    });
  }
  return stream;
}

const sendParams = (actor: TestUser, streamId: number) =>
  ({ type: 'stream', to: streamId, topic: 'matrix', content: `from ${actor.id}` }) as const;
/** The act the matrix judges: its answer, allowed or refused. */
const send = (actor: TestUser, streamId: number) => actor.client.post('/api/v1/messages', sendParams(actor, streamId));
const everybody = () => Object.values(cast);

/** A message for the actions below to act on (a refused send throws). */
const sendAs = (sender: TestUser, streamId: number) => sendMessage(sender, sendParams(sender, streamId));

describe('POST /messages to a channel', () => {
  // can_send_message_group defaults to role:everyone; guests need a subscription (or web-public).
  matrix('public channel, only the owner subscribed', theCast, {
    setup: () => channel(),
    act: (actor, stream) => send(actor, stream.id),
    verify: async (stream, allowed, actor) =>
      expect(await stack.db.message.count({ where: { stream_id: stream.id, sender_id: actor.id } })).toBe(
        allowed ? 1 : 0,
      ),
    expect: everyone({ guest: refused(/^Not authorized to send to channel 'open-\d+'$/) }),
  });

  matrix('public channel everyone is subscribed to', theCast, {
    setup: () => channel({ subscribers: everybody() }),
    act: (actor, stream) => send(actor, stream.id),
    expect: everyone(),
  });

  // Private channels: subscribers only (a bot also where its owner is subscribed).
  matrix('private channel only the owner is subscribed to', theCast, {
    setup: () => channel({ private: true }),
    act: (actor, stream) => send(actor, stream.id),
    verify: async (stream, allowed, actor) =>
      expect(await stack.db.message.count({ where: { stream_id: stream.id, sender_id: actor.id } })).toBe(
        allowed ? 1 : 0,
      ),
    expect: only(['owner'], refused(/^Not authorized to send to channel 'secret-\d+'$/)),
  });

  matrix('private channel the member is subscribed to (the bot posts where its owner may)', theCast, {
    setup: () => channel({ private: true, subscribers: [cast.owner, cast.member] }),
    act: (actor, stream) => send(actor, stream.id),
    expect: only(['owner', 'member', 'bot'], refused(/^Not authorized to send to channel 'secret-\d+'$/)),
  });

  matrix('can_send_message_group = role:moderators, everyone subscribed', theCast, {
    setup: () => channel({ subscribers: everybody(), sendGroup: 'role:moderators' }),
    act: (actor, stream) => send(actor, stream.id),
    verify: async (stream, allowed, actor) =>
      expect(await stack.db.message.count({ where: { stream_id: stream.id, sender_id: actor.id } })).toBe(
        allowed ? 1 : 0,
      ),
    expect: only(['owner', 'administrator', 'moderator'], CANNOT_POST),
  });

  matrix('can_send_message_group = role:administrators, everyone subscribed', theCast, {
    setup: () => channel({ subscribers: everybody(), sendGroup: 'role:administrators' }),
    act: (actor, stream) => send(actor, stream.id),
    expect: only(['owner', 'administrator'], CANNOT_POST),
  });

  matrix('can_send_message_group = role:members, everyone subscribed', theCast, {
    setup: () => channel({ subscribers: everybody(), sendGroup: 'role:members' }),
    act: (actor, stream) => send(actor, stream.id),
    expect: everyone({ guest: CANNOT_POST }),
  });

  matrix('an archived channel', theCast, {
    setup: async () => {
      const stream = await channel({ subscribers: everybody() });
      await stack.db.stream.update({ where: { id: stream.id }, data: { is_archived: true } });
      return stream;
    },
    act: (actor, stream) => send(actor, stream.id),
    expect: only([], refused(/^Not authorized to send to channel 'open-\d+'$/)),
  });

  test('the refusal names the channel only to whoever asked by its id (as Zulip does)', async () => {
    const stream = await channel({ private: true });
    const response = await send(cast.member, stream.id);
    expect(response.body).toEqual({ result: 'error', msg: notAuthorized(stream.name).msg, code: 'BAD_REQUEST' });
  });
});

describe('GET /messages/{message_id}', () => {
  matrix('a message of a public channel', theCast, {
    setup: async () => sendAs(cast.owner, (await channel()).id),
    act: (actor, id) => actor.client.get(`/api/v1/messages/${id}`),
    expect: everyone({ guest: INVALID_MESSAGES }),
  });
  matrix('a message of a private channel only the owner is subscribed to', theCast, {
    setup: async () => sendAs(cast.owner, (await channel({ private: true })).id),
    act: (actor, id) => actor.client.get(`/api/v1/messages/${id}`),
    expect: only(['owner'], INVALID_MESSAGES),
  });
  matrix('a direct message between the owner and the member', theCast, {
    setup: async () => {
      const response = await cast.owner.client.post('/api/v1/messages', {
        type: 'direct',
        to: [cast.member.id],
        content: 'psst',
      });
      return response.body.id as number;
    },
    act: (actor, id) => actor.client.get(`/api/v1/messages/${id}`),
    expect: only(['owner', 'member'], INVALID_MESSAGES),
  });
  matrix('a message id that does not exist', theCast, {
    setup: async () => 2_000_000_000,
    act: (actor, id) => actor.client.get(`/api/v1/messages/${id}`),
    expect: only([], INVALID_MESSAGES),
  });
});

describe('POST /messages/flags on messages one may or may not read', () => {
  const flagRow = (actor: TestUser, id: number) =>
    stack.db.userMessage.findFirst({ where: { user_profile_id: actor.id, message_id: id } });
  const STARRED = 2;

  for (const [flag, op] of [
    ['starred', 'add'],
    ['starred', 'remove'],
    ['read', 'add'],
    ['read', 'remove'],
  ] as const) {
    // As in Zulip's do_update_message_flags, a message one never received counts as having the
    // historical flags (read): a change that would leave it so ("add read", "remove starred")
    // is a no-op success with no access check, and marking unread skips channels one is not
    // subscribed to. Either way nothing is written, and the answer is the same for a message one
    // cannot read as for one that does not exist. Only real changes ("add starred") check access.
    const noOp = !(flag === 'starred' && op === 'add');
    matrix(`${op} "${flag}" on a message of a public channel only the owner is subscribed to`, theCast, {
      setup: async () => sendAs(cast.owner, (await channel()).id),
      act: (actor, id) => actor.client.post('/api/v1/messages/flags', { messages: [id], op, flag }),
      verify: async (id, allowed, actor) => {
        if (!allowed) expect(await flagRow(actor, id)).toBeNull();
      },
      // Non-guests can read a public channel's history; a guest outside it cannot.
      expect: noOp ? everyone() : everyone({ guest: INVALID_MESSAGES }),
    });

    matrix(`${op} "${flag}" on a message of a private channel only the owner is subscribed to`, theCast, {
      setup: async () => sendAs(cast.owner, (await channel({ private: true })).id),
      act: (actor, id) => actor.client.post('/api/v1/messages/flags', { messages: [id], op, flag }),
      verify: async (id, allowed, actor) => {
        if (!allowed) expect(await flagRow(actor, id)).toBeNull();
      },
      expect: noOp ? everyone() : only(['owner'], INVALID_MESSAGES),
    });

    matrix(`${op} "${flag}" on a message id that does not exist`, theCast, {
      setup: async () => 2_000_000_000,
      act: (actor, id) => actor.client.post('/api/v1/messages/flags', { messages: [id], op, flag }),
      // Marking unread does check a message it cannot skip as a channel message.
      expect: noOp && !(flag === 'read' && op === 'remove') ? everyone() : only([], INVALID_MESSAGES),
    });
  }

  test('a refused flag change on a mix of messages changes none of them', async () => {
    const open = await channel({ subscribers: everybody() });
    const secret = await channel({ private: true });
    const readable = await sendAs(cast.owner, open.id);
    const hidden = await sendAs(cast.owner, secret.id);
    const response = await cast.member.client.post('/api/v1/messages/flags', {
      messages: [readable, hidden],
      op: 'add',
      flag: 'starred',
    });
    expect(response.body).toEqual({ result: 'error', msg: 'Invalid message(s)', code: 'BAD_REQUEST' });
    expect(((await flagRow(cast.member, readable))!.flags & STARRED) === 0).toBe(true);
    expect(await flagRow(cast.member, hidden)).toBeNull();
  });

  test('a guest role is refused like anyone else for a channel it cannot read', async () => {
    const guest = await stack.createUser({ email: 'late-guest@example.com', fullName: 'Late guest', role: Role.GUEST });
    const id = await sendAs(cast.owner, (await channel()).id);
    const response = await guest.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
    expect(response.body).toEqual({ result: 'error', msg: 'Invalid message(s)', code: 'BAD_REQUEST' });
  });
});
