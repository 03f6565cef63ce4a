// Who hears about a channel, whichever service sends the event (docs/adr/0005): the same change
// through the channels, messages, users and worker services reaches the same users, and those are the
// users Zulip's rules name (zerver/lib/streams.py bulk_can_access_stream_metadata_user_ids,
// zerver/actions/streams.py create_stream_if_needed and send_peer_subscriber_events,
// zerver/actions/message_delete.py do_delete_messages):
//
//   unsubscribed audience (stream create): web-public: every active user, guests included;
//     public: every active non-guest; private: administrators and the non-guest members of
//     can_add_subscribers_group, can_administer_channel_group and can_subscribe_group.
//   metadata audience (stream update and delete, subscription peer_add / peer_remove): the
//     unsubscribed audience plus the active subscribers (guests included); peer events leave
//     out the users who joined or left.
//   subscription add / remove / update: the user whose subscription it is.
//   an action on messages (delete_message, and the first_message_id update a deletion causes;
//     Zulip's event_recipient_ids_for_action_on_messages): the active subscribers, plus, with
//     history public to subscribers, the non-guests with a row of the messages, plus the
//     deleting user.
//
// The expected sets are written out here from those rules, not computed by the code under test.

import { Role } from '@teamchat/domain';
import { signInternalToken } from '@teamchat/core';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, type CapturedEvent, captureEvents, expectError, ofType } from '@teamchat/testing';

let stack: Stack;
let owner: TestUser;
let admin: TestUser;
let moderator: TestUser;
/** Creates nothing, subscribed to every channel: sends the first message. */
let member: TestUser;
/** In the named group holding the private channel's can_subscribe_group. */
let groupie: TestUser;
/** A member subscribed to nothing. */
let outsider: TestUser;
/** Subscribed, then added and removed by the channels service. */
let mover: TestUser;
/** Subscribed, then deactivated and reactivated by the users service. */
let leaver: TestUser;
let subscribedGuest: TestUser;
let unsubscribedGuest: TestUser;
let deactivated: TestUser;
let groupId: number;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'messages', 'worker', 'events'] });
  owner = await stack.createUser({ role: Role.OWNER });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
  moderator = await stack.createUser({ role: Role.MODERATOR });
  member = await stack.createUser({ role: Role.MEMBER });
  groupie = await stack.createUser({ role: Role.MEMBER });
  outsider = await stack.createUser({ role: Role.MEMBER });
  mover = await stack.createUser({ role: Role.MEMBER });
  leaver = await stack.createUser({ role: Role.MEMBER });
  subscribedGuest = await stack.createUser({ role: Role.GUEST });
  unsubscribedGuest = await stack.createUser({ role: Role.GUEST });
  deactivated = await stack.createUser({ role: Role.MEMBER });
  // Web-public channels need spectator access.
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
  const group = await owner.client.post('/api/v1/user_groups/create', {
    name: 'joiners',
    description: '',
    members: [groupie.id],
  });
  expect(group.status).toBe(200);
  groupId = group.body.group_id;
  // A deactivated user hears about nothing.
  await ok(owner.client.delete(`/api/v1/users/${deactivated.id}`));
});
afterAll(() => stack?.close());

type Kind = 'public' | 'web-public' | 'private';

const activeUsers = () => [
  owner,
  admin,
  moderator,
  member,
  groupie,
  outsider,
  mover,
  leaver,
  subscribedGuest,
  unsubscribedGuest,
];
const nonGuests = () => activeUsers().filter((user) => user !== subscribedGuest && user !== unsubscribedGuest);

function unsubscribedAudience(kind: Kind): number[] {
  if (kind === 'web-public') return ids(activeUsers());
  if (kind === 'public') return ids(nonGuests());
  return ids([owner, admin, groupie]);
}

function metadataAudience(kind: Kind, subscribers: TestUser[]): number[] {
  return sorted([...new Set([...unsubscribedAudience(kind), ...ids(subscribers)])]);
}

const sorted = (list: number[]) => [...list].sort((a, b) => a - b);
const ids = (users: TestUser[]) => sorted(users.map((user) => user.id));
const without = (list: number[], user: TestUser) => list.filter((id) => id !== user.id);

/** The one captured event of `type`/`op` (and `property`). */
function oneEvent(captured: CapturedEvent[], type: string, op: string | undefined, property?: string): CapturedEvent {
  const events = ofType(captured, type, op).filter((e) => property === undefined || e.event.property === property);
  expect(events).toHaveLength(1);
  return events[0];
}

async function ok(response: Promise<{ status: number; body: any }>): Promise<any> {
  const answer = await response;
  if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

describe.each<Kind>(['public', 'web-public', 'private'])('a %s channel', (kind) => {
  const name = `audience ${kind}`;
  let streamId: number;
  const subscribers = () => [owner, member, leaver, subscribedGuest];

  test('stream create (channels): the unsubscribed audience', async () => {
    const captured = await captureEvents(stack, () =>
      ok(
        owner.client.post('/api/v1/users/me/subscriptions', {
          subscriptions: [{ name }],
          principals: ids(subscribers()),
          invite_only: kind === 'private',
          is_web_public: kind === 'web-public',
          ...(kind === 'private' ? { can_subscribe_group: groupId } : {}),
        }),
      ),
    );
    streamId = (await stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name } })).id;
    const [create] = ofType(captured, 'stream', 'create');
    expect(create.event.streams[0].stream_id).toBe(streamId);
    expect(create.recipientIds).toEqual(unsubscribedAudience(kind));
  });

  test('stream update: channels (description) and messages (first_message_id) reach the metadata audience', async () => {
    const expected = metadataAudience(kind, subscribers());

    const update = await captureEvents(stack, () =>
      ok(owner.client.patch(`/api/v1/streams/${streamId}`, { description: 'Who hears this?' })),
    );
    const fromChannels = oneEvent(update, 'stream', 'update', 'description');

    const message = await captureEvents(stack, () =>
      ok(member.client.post('/api/v1/messages', { type: 'stream', to: streamId, topic: 'first', content: 'first!' })),
    );
    const fromMessages = oneEvent(message, 'stream', 'update', 'first_message_id');

    expect(fromChannels.recipientIds).toEqual(expected);
    expect(fromMessages.recipientIds).toEqual(expected);
  });

  test('peer_add / peer_remove: channels (subscribing others) and users (deactivation) reach the same audience', async () => {
    // Channels: the mover joins and leaves.
    let captured = await captureEvents(stack, () =>
      ok(owner.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], principals: [mover.id] })),
    );
    const channelsAdd = oneEvent(captured, 'subscription', 'peer_add');
    expect(channelsAdd.event).toMatchObject({ stream_ids: [streamId], user_ids: [mover.id] });
    captured = await captureEvents(stack, () =>
      ok(owner.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [name], principals: [mover.id] })),
    );
    const channelsRemove = oneEvent(captured, 'subscription', 'peer_remove');

    // Users: the leaver is deactivated and comes back.
    captured = await captureEvents(stack, () => ok(admin.client.delete(`/api/v1/users/${leaver.id}`)));
    const usersRemove = captured.find((e) => e.event.op === 'peer_remove' && e.event.stream_ids.includes(streamId));
    captured = await captureEvents(stack, () => ok(admin.client.post(`/api/v1/users/${leaver.id}/reactivate`)));
    const usersAdd = captured.find((e) => e.event.op === 'peer_add' && e.event.stream_ids.includes(streamId));

    const audience = metadataAudience(kind, subscribers());
    expect(channelsAdd.recipientIds).toEqual(without(audience, mover));
    expect(channelsRemove.recipientIds).toEqual(without(audience, mover));
    expect(usersRemove?.recipientIds).toEqual(without(audience, leaver));
    expect(usersAdd?.recipientIds).toEqual(without(audience, leaver));
  });

  test('subscription add / remove / update: to the user whose subscription it is, guests too', async () => {
    const add = await captureEvents(stack, () =>
      ok(
        owner.client.post('/api/v1/users/me/subscriptions', {
          subscriptions: [{ name }],
          principals: [mover.id, unsubscribedGuest.id],
        }),
      ),
    );
    expect(
      ofType(add, 'subscription', 'add')
        .map((e) => e.recipientIds)
        .sort((a, b) => a[0] - b[0]),
    ).toEqual([[mover.id], [unsubscribedGuest.id]]);

    const update = await captureEvents(stack, () =>
      ok(
        unsubscribedGuest.client.post('/api/v1/users/me/subscriptions/properties', {
          subscription_data: [{ stream_id: streamId, property: 'pin_to_top', value: true }],
        }),
      ),
    );
    expect(oneEvent(update, 'subscription', 'update').recipientIds).toEqual([unsubscribedGuest.id]);

    // Both have rows of these messages once they leave: the deletion test below tells them apart.
    for (const topic of ['one', 'two']) {
      await ok(member.client.post('/api/v1/messages', { type: 'stream', to: streamId, topic, content: topic }));
    }

    const remove = await captureEvents(stack, () =>
      ok(
        owner.client.delete('/api/v1/users/me/subscriptions', {
          subscriptions: [name],
          principals: [mover.id, unsubscribedGuest.id],
        }),
      ),
    );
    expect(
      ofType(remove, 'subscription', 'remove')
        .map((e) => e.recipientIds)
        .sort((a, b) => a[0] - b[0]),
    ).toEqual([[mover.id], [unsubscribedGuest.id]]);
  });

  test('delete_message and first_message_id: messages (one message) and the worker (a topic) reach the same audience', async () => {
    const deleteTopic = (topic: string) =>
      ok(owner.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: topic }));
    const messageIn = async (topic: string) =>
      (await stack.db.message.findFirstOrThrow({ where: { stream_id: streamId, topic } })).id;

    // Worker: the channel's first message (sent before the mover and the guest ever joined).
    const first = await captureEvents(stack, async () => expect((await deleteTopic('first')).complete).toBe(true));
    expect(oneEvent(first, 'delete_message', undefined).recipientIds).toEqual(ids(subscribers()));
    expect(oneEvent(first, 'stream', 'update', 'first_message_id').recipientIds).toEqual(ids(subscribers()));

    // Messages of which the unsubscribed mover and guest kept rows: with history public to
    // subscribers, the non-guest with a row hears too; with protected history only subscribers.
    const expected = ids(kind === 'private' ? subscribers() : [...subscribers(), mover]);
    const one = await messageIn('one');
    const fromMessages = await captureEvents(stack, () => ok(owner.client.delete(`/api/v1/messages/${one}`)));
    const fromWorker = await captureEvents(stack, async () => expect((await deleteTopic('two')).complete).toBe(true));
    for (const captured of [fromMessages, fromWorker]) {
      const deletion = oneEvent(captured, 'delete_message', undefined);
      expect(deletion.recipientIds).toEqual(expected);
      expect(oneEvent(captured, 'stream', 'update', 'first_message_id').recipientIds).toEqual(expected);
    }
  });

  test('stream delete (channels, archiving): the metadata audience', async () => {
    const captured = await captureEvents(stack, () => ok(owner.client.delete(`/api/v1/streams/${streamId}`)));
    const deletion = oneEvent(captured, 'stream', 'delete');
    expect(deletion.recipientIds).toEqual(metadataAudience(kind, subscribers()));
  });
});

// loadActor, the one acting-user read every service makes: an account deactivated after the
// gateway let its request through is refused with Zulip's error by each service.
test.each([
  ['channels', 'GET', '/api/v1/streams'],
  ['messages', 'POST', '/api/v1/messages/render'],
  ['users', 'GET', '/api/v1/users'],
  ['events', 'POST', '/api/v1/register'],
] as const)('the %s service refuses a deactivated account', async (service, method, path) => {
  const user = {
    userId: deactivated.id,
    realmId: stack.realm.id,
    role: Role.MEMBER,
    email: deactivated.email,
    isBot: false,
  };
  const token = signInternalToken(stack.deps.env.INTERNAL_JWT_SECRET, { user, realmId: stack.realm.id, method, path });
  const client = new ApiClient(stack.serviceUrls[service]!);
  const headers = { headers: { 'x-teamchat-internal-token': token } };
  const response =
    method === 'GET' ? await client.get(path, {}, headers) : await client.post(path, { content: 'hi' }, headers);
  expectError(response, 401, 'USER_DEACTIVATED', 'Account is deactivated');
});
