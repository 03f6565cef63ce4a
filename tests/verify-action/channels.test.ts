// verify_action for channels and subscriptions: subscribe, unsubscribe, every subscription
// property, peers joining and leaving, channels created, updated (each property) and archived,
// default channels, user_topic, channel folders.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { verifyAction, type Params, type RegisterArguments } from '@teamchat/testing';
import { CAPABILITY_SETS, ok, WITH_SUBSCRIBERS } from './support';

let stack: Stack;
let me: TestUser;
let other: TestUser;
let adminsGroupId: number;
let counter = 0;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels', 'events'] });
  me = await stack.createUser({ fullName: 'Me Myself', role: Role.OWNER });
  other = await stack.createUser({ fullName: 'Other Person' });
  const groups = ok(await me.client.get('/api/v1/user_groups')).user_groups as { id: number; name: string }[];
  adminsGroupId = groups.find((group) => group.name === 'role:administrators')!.id;
});

afterAll(() => stack?.close());

/** A new channel both users are in (a message in it, unread for me unless `read`), and its id. */
async function sharedChannel(read = false): Promise<number> {
  const name = `shared ${++counter}`;
  ok(
    await me.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name }],
      principals: [me.id, other.id],
    }),
  );
  const streamId = ok(await me.client.get('/api/v1/get_stream_id', { stream: name })).stream_id as number;
  const { id } = ok(
    await other.client.post('/api/v1/messages', { type: 'stream', to: streamId, topic: 'talk', content: 'hi' }),
  );
  if (read) ok(await me.client.post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'read' }));
  return streamId;
}

const ALL_SETS: [string, RegisterArguments][] = [...CAPABILITY_SETS, WITH_SUBSCRIBERS];

describe.each(ALL_SETS)('channels and subscriptions, %s', (_name, register) => {
  test('subscribing to a new channel (created by the subscription)', async () => {
    const name = `new ${++counter}`;
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name, description: 'about' }] }).then(ok),
    );
  });

  test("another user creates a channel with announce: the notification bot's announcement", async () => {
    const announcements = await sharedChannel(true);
    ok(
      await me.client.patch('/api/v1/realm', {
        new_stream_announcements_stream_id: JSON.stringify(announcements),
      }),
    );
    const name = `announced ${++counter}`;
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], announce: true }).then(ok),
    );
  });

  test('another user creates a public channel the user is not in', async () => {
    const name = `theirs ${++counter}`;
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }).then(ok),
    );
  });

  // Read first: no event tells a client which messages of a channel it rejoins are unread (Zulip's
  // neither), so a rejoined channel's unread messages come with the next register.
  test('unsubscribing, then subscribing again', async () => {
    const streamId = await sharedChannel(true);
    const name = ok(await me.client.get(`/api/v1/streams/${streamId}`)).stream.name as string;
    await verifyAction(stack, me, register, () =>
      me.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [name] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }).then(ok),
    );
  });

  test('the user subscribed by someone else', async () => {
    const name = `added ${++counter}`;
    ok(await other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }));
    await verifyAction(stack, me, register, () =>
      other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], principals: [me.id] }).then(ok),
    );
  });

  test('a peer joins and leaves a channel the user is in', async () => {
    const name = `peers ${++counter}`;
    ok(await me.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }));
    const stateChange = !!register.include_subscribers;
    await verifyAction(
      stack,
      me,
      register,
      () => other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }).then(ok),
      { stateChange },
    );
    await verifyAction(
      stack,
      me,
      register,
      () => other.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [name] }).then(ok),
      { stateChange },
    );
  });

  test.each([
    ['color', '#123456'],
    ['is_muted', true],
    ['in_home_view', false],
    ['desktop_notifications', true],
    ['audible_notifications', false],
    ['push_notifications', true],
    ['email_notifications', true],
    ['pin_to_top', true],
    ['wildcard_mentions_notify', false],
  ])('subscription property %s', async (property, value) => {
    const streamId = await sharedChannel();
    await verifyAction(stack, me, register, () =>
      me.client
        .post('/api/v1/users/me/subscriptions/properties', {
          subscription_data: [{ stream_id: streamId, property, value }],
        })
        .then(ok),
    );
  });

  test.each<[string, () => Params]>([
    ['new_name', () => ({ new_name: `renamed ${++counter}` })],
    ['description', () => ({ description: 'A **new** description' })],
    ['is_private', () => ({ is_private: true })],
    ['history_public_to_subscribers', () => ({ is_private: true, history_public_to_subscribers: false })],
    ['message_retention_days', () => ({ message_retention_days: 30 })],
    ['topics_policy', () => ({ topics_policy: 'disable_empty_topic' })],
    ['can_send_message_group', () => ({ can_send_message_group: { new: adminsGroupId } })],
    [
      'can_remove_subscribers_group (anonymous)',
      () => ({
        can_remove_subscribers_group: { new: { direct_members: [other.id], direct_subgroups: [adminsGroupId] } },
      }),
    ],
    ['can_administer_channel_group', () => ({ can_administer_channel_group: { new: adminsGroupId } })],
  ])('channel update: %s', async (_property, change) => {
    const streamId = await sharedChannel();
    await verifyAction(stack, me, register, () => me.client.patch(`/api/v1/streams/${streamId}`, change()).then(ok));
  });

  test('a channel the user is not in updated', async () => {
    const name = `not mine ${++counter}`;
    ok(await other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }));
    const streamId = ok(await me.client.get('/api/v1/get_stream_id', { stream: name })).stream_id as number;
    await verifyAction(stack, me, register, () =>
      other.client.patch(`/api/v1/streams/${streamId}`, { description: 'changed' }).then(ok),
    );
  });

  test('a subscribed channel archived', async () => {
    const streamId = await sharedChannel();
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/streams/${streamId}`).then(ok));
  });

  test('a channel the user is not in archived', async () => {
    const name = `to archive ${++counter}`;
    ok(await other.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] }));
    const streamId = ok(await me.client.get('/api/v1/get_stream_id', { stream: name })).stream_id as number;
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/streams/${streamId}`).then(ok));
  });

  test('a default channel added and removed', async () => {
    const streamId = await sharedChannel();
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/default_streams', { stream_id: streamId }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.delete('/api/v1/default_streams', { stream_id: streamId }).then(ok),
    );
  });

  test('a topic muted, followed, then back to the default', async () => {
    const streamId = await sharedChannel();
    for (const visibility_policy of [1, 3, 0]) {
      await verifyAction(stack, me, register, () =>
        me.client.post('/api/v1/user_topics', { stream_id: streamId, topic: 'talk', visibility_policy }).then(ok),
      );
    }
  });

  test('a channel folder created, updated, archived', async () => {
    const createFolder = async () => {
      const { events } = await verifyAction(stack, me, register, () =>
        me.client
          .post('/api/v1/channel_folders/create', { name: `folder ${++counter}`, description: 'stuff' })
          .then(ok),
      );
      return (events.find((event) => event.type === 'channel_folder')!.channel_folder as { id: number }).id;
    };
    const folderId = await createFolder();
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/channel_folders/${folderId}`, { description: 'other stuff' }).then(ok),
    );
    const streamId = await sharedChannel();
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/streams/${streamId}`, { folder_id: folderId }).then(ok),
    );
    // Moved to another folder (a folder with channels cannot be archived).
    const nextFolderId = await createFolder();
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/streams/${streamId}`, { folder_id: nextFolderId }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/channel_folders/${folderId}`, { is_archived: true }).then(ok),
    );
  });
});
