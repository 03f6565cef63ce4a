// POST /messages: addressing, permissions, topic rules, rendering, user_message rows and flags,
// and the exact events (read from the event outbox the action committed).
import { MessageFlag, Role, systemGroupId, VisibilityPolicy } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import {
  type ApiResponse,
  captureEvents,
  expectError,
  ofType,
  type Params,
  sendMessage,
  until,
} from '@teamchat/testing';
import { bulkUsers, userMessageFlags } from './helpers';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let admin: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  admin = await stack.createUser({ fullName: 'Ada Admin', role: Role.ADMINISTRATOR });
});
afterAll(() => stack.close());

let streamCounter = 0;
async function channel(options: { subscribers?: number[]; inviteOnly?: boolean } = {}) {
  return stack.createStream({
    name: `channel ${++streamCounter}`,
    creatorId: alice.id,
    subscribers: options.subscribers ?? [alice.id, bob.id],
    inviteOnly: options.inviteOnly,
  });
}

async function setRealmGroupSetting(name: string, group: Parameters<typeof systemGroupId>[2]) {
  const groupId = await systemGroupId(stack.db, stack.realm.id, group);
  await stack.db.groupSetting.update({
    where: { owner_kind_owner_id_name: { owner_kind: 'realm', owner_id: stack.realm.id, name } },
    data: { group_id: groupId },
  });
}

describe('channel messages', () => {
  test('stores the message, one user_message per active subscriber, and sends the message and first_message_id events', async () => {
    const dave = await stack.createUser({ fullName: 'Dave Gone' });
    const stream = await channel({ subscribers: [alice.id, bob.id, dave.id] });
    await stack.db.userProfile.update({ where: { id: dave.id }, data: { is_active: false } });
    let response!: ApiResponse;
    const events = await captureEvents(stack, async () => {
      response = await alice.client.post('/api/v1/messages', {
        type: 'stream',
        to: stream.id,
        topic: 'greetings',
        content: 'Hello @**Bob Dylan**!',
      });
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ result: 'success', msg: '', id: expect.any(Number) });
    const id = response.body.id;

    const message = await stack.db.message.findUniqueOrThrow({ where: { id } });
    expect(message).toMatchObject({
      realm_id: stack.realm.id,
      sender_id: alice.id,
      stream_id: stream.id,
      topic: 'greetings',
      dm_key: null,
      content: 'Hello @**Bob Dylan**!',
      rendered_content: `<p>Hello <span class="user-mention" data-user-id="${bob.id}">@Bob Dylan</span>!</p>`,
      sending_client: 'Unspecified',
      has_link: false,
      has_attachment: false,
    });
    // API clients do not mark their own messages read (Zulip's read_by_sender heuristic).
    expect(await userMessageFlags(stack, id)).toEqual(
      new Map([
        [alice.id, 0],
        [bob.id, MessageFlag.mentioned],
      ]),
    );
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } })).first_message_id).toBe(id);

    expect(events.map((e) => e.event.type)).toEqual(['message', 'stream']);
    const [messageEvent, streamEvent] = events;
    // A recipient without flags is its id alone; the event tier gives its copy `flags: []`.
    expect(messageEvent.recipients).toEqual([alice.id, { id: bob.id, flags: ['mentioned'] }]);
    expect(messageEvent.event).toEqual({
      type: 'message',
      message: {
        id,
        sender_id: alice.id,
        sender_email: alice.email,
        sender_full_name: 'Alice Liddell',
        sender_realm_str: stack.realm.string_id,
        avatar_url: expect.stringMatching(/^https:\/\/secure\.gravatar\.com\/avatar\//),
        _external_avatar: true,
        client: 'Unspecified',
        content: 'Hello @**Bob Dylan**!',
        rendered_content: message.rendered_content,
        is_me_message: false,
        recipient_id: stream.id,
        type: 'stream',
        display_recipient: stream.name,
        stream_id: stream.id,
        subject: 'greetings',
        topic_links: [],
        timestamp: Math.floor(message.date_sent.getTime() / 1000),
        reactions: [],
        submessages: [],
      },
    });
    expect(streamEvent.event).toEqual({
      type: 'stream',
      op: 'update',
      property: 'first_message_id',
      value: id,
      stream_id: stream.id,
      name: stream.name,
    });
    // A public channel's metadata reaches every active non-guest.
    const activeUsers = await stack.db.userProfile.findMany({
      where: { realm_id: stack.realm.id, is_active: true, role: { not: Role.GUEST } },
      select: { id: true },
    });
    expect(streamEvent.recipientIds).toEqual(activeUsers.map((user) => user.id).sort((a, b) => a - b));

    // The channel's second message changes nothing about the channel.
    const second = await captureEvents(stack, () =>
      alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 'greetings', content: 'again' }),
    );
    expect(second.map((e) => e.event.type)).toEqual(['message']);
  });

  test('the channel may be named, plainly or JSON-encoded, and the topic given as subject', async () => {
    const stream = await channel();
    for (const to of [
      stream.name,
      JSON.stringify(stream.name),
      JSON.stringify([stream.id]),
      stream.name.toUpperCase(),
    ]) {
      const response = await alice.client.post('/api/v1/messages', {
        type: 'channel',
        to,
        subject: 'legacy',
        content: 'hi',
      });
      expect(response.status).toBe(200);
      expect(await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } })).toMatchObject({
        stream_id: stream.id,
        topic: 'legacy',
      });
    }
  });

  test('queue_id and local_id travel beside the event for local echo, never inside it', async () => {
    const stream = await channel();
    const captured = await captureEvents(stack, async () => {
      const response = await alice.client.post('/api/v1/messages', {
        type: 'stream',
        to: stream.id,
        topic: 't',
        content: 'echo',
        queue_id: 'q-123',
        local_id: '100.01',
      });
      expect(response.body).not.toHaveProperty('ignored_parameters_unsupported');
    });
    const [event] = ofType(captured, 'message');
    expect(event.echo).toEqual({ queueId: 'q-123', localId: '100.01' });
    expect(Object.keys(event.event).filter((key) => key.startsWith('_'))).toEqual([]);
  });

  test('read_by_sender, explicit or from a Zulip app', async () => {
    const stream = await channel();
    const explicit = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 't',
      content: 'a',
      read_by_sender: true,
    });
    expect((await userMessageFlags(stack, explicit.body.id)).get(alice.id)).toBe(MessageFlag.read);
    const mobile = await alice.client.post(
      '/api/v1/messages',
      { type: 'stream', to: stream.id, topic: 't', content: 'b' },
      { headers: { 'user-agent': 'ZulipMobile/27.0 (Android 14)' } },
    );
    expect((await userMessageFlags(stack, mobile.body.id)).get(alice.id)).toBe(MessageFlag.read);
    expect(await stack.db.message.findUniqueOrThrow({ where: { id: mobile.body.id } })).toMatchObject({
      sending_client: 'ZulipMobile',
    });
    const api = await alice.client.post(
      '/api/v1/messages',
      { type: 'stream', to: stream.id, topic: 't', content: 'c', read_by_sender: false },
      { headers: { 'user-agent': 'ZulipMobile/27.0' } },
    );
    expect((await userMessageFlags(stack, api.body.id)).get(alice.id)).toBe(0);
  });

  test('topic rules: the empty topic, stripping, truncation and unprintable characters', async () => {
    const stream = await channel();
    const topicOf = async (topic: string) => {
      const response = await alice.client.post('/api/v1/messages', {
        type: 'stream',
        to: stream.id,
        topic,
        content: 'x',
      });
      expect(response.status).toBe(200);
      return (await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } })).topic;
    };
    expect(await topicOf('(no topic)')).toBe('');
    expect(await topicOf('general chat')).toBe('');
    expect(await topicOf('')).toBe('');
    expect(await topicOf('  padded  ')).toBe('padded');
    expect(await topicOf('x'.repeat(70))).toBe(`${'x'.repeat(57)}...`);
    expect(await topicOf('é'.repeat(60))).toBe('é'.repeat(60));
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 'ab\u0007c', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid character in topic, at position 3!',
    );
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: '\uFFFFx', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid character in topic, at position 1!',
    );
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: 'gen\u0007eral', topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid character in channel name, at position 4.',
    );
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, content: 'x' }),
      400,
      'BAD_REQUEST',
      'Missing topic',
    );
  });

  test("topics_policy: the channel's, or the organization's when it inherits", async () => {
    const stream = await channel();
    const send = (topic: string) =>
      alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic, content: 'x' });
    await stack.db.stream.update({ where: { id: stream.id }, data: { topics_policy: 'disable_empty_topic' } });
    expectError(
      await send(''),
      400,
      'BAD_REQUEST',
      'Sending messages to the general chat topic is not allowed in this channel.',
    );
    expectError(
      await send('(no topic)'),
      400,
      'BAD_REQUEST',
      'Sending messages to the general chat topic is not allowed in this channel.',
    );
    expect((await send('named')).status).toBe(200);

    await stack.db.stream.update({ where: { id: stream.id }, data: { topics_policy: 'empty_topic_only' } });
    expectError(await send('named'), 400, 'BAD_REQUEST', 'Only the general chat topic is allowed in this channel.');
    expect((await send('')).status).toBe(200);

    await stack.db.stream.update({ where: { id: stream.id }, data: { topics_policy: 'inherit' } });
    await stack.db.realm.update({ where: { id: stack.realm.id }, data: { topics_policy: 'disable_empty_topic' } });
    try {
      expectError(
        await send(''),
        400,
        'BAD_REQUEST',
        'Sending messages to the general chat topic is not allowed in this channel.',
      );
    } finally {
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { topics_policy: 'allow_empty_topic' } });
    }
    expect((await send('')).status).toBe(200);
  });

  test("content: Zulip's normalisation and errors", async () => {
    const stream = await channel();
    const send = (content: string) =>
      alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content });
    const trimmed = await send('\n\nbody  \n ');
    expect((await stack.db.message.findUniqueOrThrow({ where: { id: trimmed.body.id } })).content).toBe('body');
    const long = await send('y'.repeat(10_050));
    const stored = (await stack.db.message.findUniqueOrThrow({ where: { id: long.body.id } })).content;
    expect(stored).toHaveLength(10_000);
    expect(stored.endsWith('\n[message truncated]')).toBe(true);
    expectError(await send('   \n '), 400, 'BAD_REQUEST', 'Message must not be empty');
    expectError(await send('a\u0000b'), 400, 'BAD_REQUEST', 'Message must not contain null bytes');
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't' }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'content' argument",
    );
  });

  test('addressing errors', async () => {
    const stream = await channel();
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Missing channel',
    );
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'broadcast', to: stream.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid type',
    );
    expectError(
      await alice.client.post('/api/v1/messages', {
        type: 'stream',
        to: JSON.stringify([stream.id, stream.id]),
        topic: 't',
        content: 'x',
      }),
      400,
      'BAD_REQUEST',
      'Expected exactly one channel',
    );
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: '{"a":1}', topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid data type for channel',
    );
    const missingId = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: 99999,
      topic: 't',
      content: 'x',
    });
    expectError(missingId, 400, 'STREAM_DOES_NOT_EXIST', "Channel with ID '99999' does not exist");
    expect(missingId.body.stream_id).toBe(99999);
    const missingName = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: 'no <such> channel',
      topic: 't',
      content: 'x',
    });
    expectError(missingName, 400, 'STREAM_DOES_NOT_EXIST', "Channel 'no &lt;such&gt; channel' does not exist");
    expect(missingName.body.stream).toBe('no &lt;such&gt; channel');
  });
});

describe('who may post to a channel', () => {
  test('private channels take messages from subscribers only', async () => {
    const secret = await channel({ inviteOnly: true, subscribers: [alice.id] });
    expectError(
      await bob.client.post('/api/v1/messages', { type: 'stream', to: secret.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      `Not authorized to send to channel '${secret.name}'`,
    );
    // Even an administrator, who may see the channel exists.
    expectError(
      await admin.client.post('/api/v1/messages', { type: 'stream', to: secret.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      `Not authorized to send to channel '${secret.name}'`,
    );
    expect(
      (await alice.client.post('/api/v1/messages', { type: 'stream', to: secret.id, topic: 't', content: 'x' })).status,
    ).toBe(200);
    expect(await stack.db.message.count({ where: { stream_id: secret.id } })).toBe(1);
  });

  test('archived channels refuse new messages', async () => {
    const stream = await channel();
    await stack.db.stream.update({ where: { id: stream.id }, data: { is_archived: true } });
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      `Not authorized to send to channel '${stream.name}'`,
    );
  });

  test('can_send_message_group decides, and a bot may post where its owner may', async () => {
    const stream = await channel({ subscribers: [alice.id, bob.id, admin.id] });
    const admins = await systemGroupId(stack.db, stack.realm.id, 'role:administrators');
    await stack.db.groupSetting.update({
      where: {
        owner_kind_owner_id_name: { owner_kind: 'stream', owner_id: stream.id, name: 'can_send_message_group' },
      },
      data: { group_id: admins },
    });
    expectError(
      await bob.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      'You do not have permission to post in this channel.',
    );
    expect(
      (await admin.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'x' })).status,
    ).toBe(200);
    const adminsBot = await stack.createUser({
      fullName: 'Admin Bot',
      email: 'admin-bot@example.com',
      botType: 1,
      botOwnerId: admin.id,
    });
    expect(
      (await adminsBot.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'x' }))
        .status,
    ).toBe(200);
    const bobsBot = await stack.createUser({
      fullName: 'Bob Bot',
      email: 'bob-bot@example.com',
      botType: 1,
      botOwnerId: bob.id,
    });
    expectError(
      await bobsBot.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      'You do not have permission to post in this channel.',
    );
  });

  test('guests post only where they are subscribed', async () => {
    const guest = await stack.createUser({ role: Role.GUEST });
    const open = await channel();
    expectError(
      await guest.client.post('/api/v1/messages', { type: 'stream', to: open.id, topic: 't', content: 'x' }),
      400,
      'BAD_REQUEST',
      `Not authorized to send to channel '${open.name}'`,
    );
    await stack.subscribe(open.id, [guest.id]);
    expect(
      (await guest.client.post('/api/v1/messages', { type: 'stream', to: open.id, topic: 't', content: 'x' })).status,
    ).toBe(200);
  });
});

describe('mentions', () => {
  test('wildcards: flags for everyone, and the size limit without can_mention_many_users_group', async () => {
    const small = await channel({ subscribers: [alice.id, bob.id, carol.id] });
    let response!: ApiResponse;
    const captured = await captureEvents(stack, async () => {
      response = await alice.client.post('/api/v1/messages', {
        type: 'stream',
        to: small.id,
        topic: 't',
        content: 'ping @**all**',
      });
      expect(response.status).toBe(200);
    });
    const flags = await userMessageFlags(stack, response.body.id);
    for (const user of [alice, bob, carol]) expect(flags.get(user.id)).toBe(MessageFlag.stream_wildcard_mentioned);
    const [event] = ofType(captured, 'message');
    expect(event.recipients).toContainEqual({ id: bob.id, flags: ['stream_wildcard_mentioned', 'wildcard_mentioned'] });

    const crowd = await bulkUsers(stack, 14, 'wildcard');
    const big = await channel({ subscribers: [alice.id, bob.id, admin.id, ...crowd] });
    expectError(
      await alice.client.post('/api/v1/messages', {
        type: 'stream',
        to: big.id,
        topic: 't',
        content: '@**everyone** hi',
      }),
      400,
      'STREAM_WILDCARD_MENTION_NOT_ALLOWED',
      'You do not have permission to use channel wildcard mentions in this channel.',
    );
    // In code, it is no mention at all.
    expect(
      (
        await alice.client.post('/api/v1/messages', {
          type: 'stream',
          to: big.id,
          topic: 't',
          content: '`@**everyone**` hi',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await admin.client.post('/api/v1/messages', {
          type: 'stream',
          to: big.id,
          topic: 't',
          content: '@**channel** hi',
        })
      ).status,
    ).toBe(200);
  });

  test('topic wildcard: participants of the topic get topic_wildcard_mentioned', async () => {
    const stream = await channel({ subscribers: [alice.id, bob.id, carol.id] });
    await bob.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 'plans', content: 'first' });
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 'Plans',
      content: '@**topic** update',
    });
    const flags = await userMessageFlags(stack, response.body.id);
    expect(flags.get(bob.id)).toBe(MessageFlag.topic_wildcard_mentioned);
    expect(flags.get(alice.id)).toBe(MessageFlag.topic_wildcard_mentioned);
    expect(flags.get(carol.id)).toBe(0);
  });

  test('user groups: members are mentioned; can_mention_group is enforced; silent mentions flag nobody', async () => {
    const stream = await channel({ subscribers: [alice.id, bob.id, carol.id, admin.id] });
    const group = await stack.db.userGroup.create({ data: { realm_id: stack.realm.id, name: 'support', named: true } });
    await stack.db.userGroupMembership.createMany({ data: [{ user_group_id: group.id, user_profile_id: carol.id }] });
    const everyone = await systemGroupId(stack.db, stack.realm.id, 'role:everyone');
    await stack.db.groupSetting.create({
      data: {
        realm_id: stack.realm.id,
        owner_kind: 'user_group',
        owner_id: group.id,
        name: 'can_mention_group',
        group_id: everyone,
      },
    });

    const mentioned = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 't',
      content: 'hey @*support*',
    });
    expect((await stack.db.message.findUniqueOrThrow({ where: { id: mentioned.body.id } })).rendered_content).toBe(
      `<p>hey <span class="user-group-mention" data-user-group-id="${group.id}">@support</span></p>`,
    );
    const flags = await userMessageFlags(stack, mentioned.body.id);
    expect(flags.get(carol.id)).toBe(MessageFlag.mentioned);
    expect(flags.get(bob.id)).toBe(0);

    const admins = await systemGroupId(stack.db, stack.realm.id, 'role:administrators');
    await stack.db.groupSetting.update({
      where: { owner_kind_owner_id_name: { owner_kind: 'user_group', owner_id: group.id, name: 'can_mention_group' } },
      data: { group_id: admins },
    });
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 't', content: '@*support*' }),
      400,
      'BAD_REQUEST',
      "You are not allowed to mention user group 'support'.",
    );
    expect(
      (
        await admin.client.post('/api/v1/messages', {
          type: 'stream',
          to: stream.id,
          topic: 't',
          content: '@*support*',
        })
      ).status,
    ).toBe(200);
    const silent = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 't',
      content: '@_*support* and @_**Bob Dylan**',
    });
    expect(silent.status).toBe(200);
    expect([...(await userMessageFlags(stack, silent.body.id)).values()].every((bits) => bits === 0)).toBe(true);
  });

  test('@**Name|id** needs the exact name; unknown names stay text', async () => {
    const stream = await channel();
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 't',
      content: `@**Bob Dylan|${bob.id}** @**bob dylan|${bob.id}** @**Nobody Here**`,
    });
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } });
    expect(message.rendered_content).toBe(
      `<p><span class="user-mention" data-user-id="${bob.id}">@Bob Dylan</span> @<strong>bob dylan|${bob.id}</strong> @<strong>Nobody Here</strong></p>`,
    );
  });
});

describe('rendering', () => {
  test('channel and topic links, linkifiers, links, code blocks', async () => {
    const stream = await channel();
    await stack.db.linkifier.create({
      data: {
        realm_id: stack.realm.id,
        pattern: '#(?P<id>[0-9]+)',
        url_template: 'https://github.com/zulip/zulip/issues/{id}',
      },
    });
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 'fix #42',
      content: `See #**${stream.name}** and #**${stream.name}>fix #42**, bug #42, https://example.com.\n\n\`\`\`python\nprint("<hi>")\n\`\`\``,
    });
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } });
    const slug = stream.name.replace(/ /g, '-');
    expect(message.rendered_content).toBe(
      `<p>See <a class="stream" data-stream-id="${stream.id}" href="/#narrow/channel/${stream.id}-${slug}">#${stream.name}</a>` +
        ` and <a class="stream-topic" data-stream-id="${stream.id}" href="/#narrow/channel/${stream.id}-${slug}/topic/fix.20.2342">#${stream.name} &gt; fix #42</a>,` +
        ` bug <a href="https://github.com/zulip/zulip/issues/42">#42</a>,` +
        ` <a href="https://example.com">https://example.com</a>.</p>\n` +
        '<div class="codehilite" data-code-language="Python"><pre><span></span><code><span class="nb">print</span>' +
        '<span class="p">(</span><span class="s2">"&lt;hi&gt;"</span><span class="p">)</span>\n</code></pre></div>',
    );
    expect(message.has_link).toBe(true);
    const fetched = await bob.client.get(`/api/v1/messages/${message.id}`);
    expect(fetched.body.message.topic_links).toEqual([
      { text: '#42', url: 'https://github.com/zulip/zulip/issues/42' },
    ]);
    await stack.db.linkifier.deleteMany({ where: { realm_id: stack.realm.id } });
  });

  // Zulip's realm default_code_block_language: the language of a fence that names none.
  test("a fence without a language takes the organization's default_code_block_language", async () => {
    const stream = await channel();
    const send = async (content: string) => {
      const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'code', content });
      return (await stack.db.message.findUniqueOrThrow({ where: { id } })).rendered_content;
    };
    const plain = '<div class="codehilite"><pre><span></span><code>x = 1\n</code></pre></div>';
    expect(await send('```\nx = 1\n```')).toBe(plain);
    const { settings } = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
    await stack.db.realm.update({
      where: { id: stack.realm.id },
      data: { settings: { ...(settings as object), realm_default_code_block_language: 'py' } },
    });
    try {
      expect(await send('```\nx = 1\n```')).toBe(
        '<div class="codehilite" data-code-language="Python"><pre><span></span><code><span class="n">x</span> ' +
          '<span class="o">=</span> <span class="mi">1</span>\n</code></pre></div>',
      );
      // A fence naming its language keeps it.
      expect(await send('```text\nx = 1\n```')).toBe(
        plain.replace('"codehilite"', '"codehilite" data-code-language="Text only"'),
      );
    } finally {
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { settings: settings ?? {} } });
    }
  });

  // Emoticons become emoji only for a sender who turned translate_emoticons on.
  test("emoji by name and emoticons per the sender's translate_emoticons", async () => {
    const stream = await channel();
    const send = async (content: string) => {
      const id = await sendMessage(alice, { type: 'stream', to: stream.id, topic: 'emoji', content });
      return (await stack.db.message.findUniqueOrThrow({ where: { id } })).rendered_content;
    };
    const smile = '<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span>';
    expect(await send(':smile: :)')).toBe(`<p>${smile} :)</p>`);
    const { settings } = await stack.db.userProfile.findUniqueOrThrow({ where: { id: alice.id } });
    await stack.db.userProfile.update({
      where: { id: alice.id },
      data: { settings: { ...(settings as object), translate_emoticons: true } },
    });
    try {
      expect(await send(':smile: :)')).toBe(`<p>${smile} ${smile}</p>`);
    } finally {
      await stack.db.userProfile.update({ where: { id: alice.id }, data: { settings: settings ?? {} } });
    }
  });

  // Math renders with KaTeX as in Zulip; a URL inside it is no link (Zulip's
  // test_finds_only_links), and TeX KaTeX refuses shows as written.
  test('math: $$…$$ and ```math through KaTeX, no link inside, errors as tex-error', async () => {
    const stream = await channel();
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 'math',
      content: '$$https://example.org$$ and $$\\error$$\n\n```math\na^2\n```',
    });
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } });
    const [inline, display] = message.rendered_content!.split('\n');
    expect(inline).toMatch(
      /^<p><span class="katex"><span class="katex-mathml"><math xmlns="http:\/\/www.w3.org\/1998\/Math\/MathML"><semantics>.*<annotation encoding="application\/x-tex">https:\/\/example.org<\/annotation>.*<\/span> and <span class="tex-error">\$\$\\error\$\$<\/span><\/p>$/,
    );
    expect(inline).not.toContain('<a ');
    expect(display).toMatch(
      /^<p><span class="katex-display"><span class="katex">.*<annotation encoding="application\/x-tex">a\^2<\/annotation>.*<\/p>$/,
    );
    expect(message.has_link).toBe(false);
  });

  // A linkifier URL with an unsafe scheme renders as text, whether the scheme comes from
  // the message ({+url}) or from a template stored before templates were checked.
  test('linkifier links with unsafe schemes stay text in messages and are left out of topic links', async () => {
    const stream = await channel();
    await stack.db.linkifier.createMany({
      data: [
        { realm_id: stack.realm.id, pattern: '!(?P<url>\\S+)', url_template: '{+url}', order: 0 },
        { realm_id: stack.realm.id, pattern: 'XSS-(?P<id>[0-9]+)', url_template: 'javascript:alert({id})', order: 1 },
      ],
    });
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: '!javascript:alert(1) XSS-7 !https://ok.example/t',
      content: '!javascript:alert(document.cookie) XSS-12 [x](javascript:alert(2)) !https://ok.example/a',
    });
    expect(response.status).toBe(200);
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } });
    const ok = 'https://ok.example/a';
    // The linkifier's match, as in Zulip (a bare link needs whitespace or ' " ( , : < before it).
    const okLink = `<a href="${ok}">!${ok}</a>`;
    const asText = '!javascript:alert(document.cookie) XSS-12 [x](javascript:alert(2))';
    expect(message.rendered_content).toBe(`<p>${asText} ${okLink}</p>`);
    const fetched = await bob.client.get(`/api/v1/messages/${message.id}`);
    expect(fetched.body.message.topic_links).toEqual([{ text: '!https://ok.example/t', url: 'https://ok.example/t' }]);
    await stack.db.linkifier.deleteMany({ where: { realm_id: stack.realm.id } });
  });

  // Linkifiers run on re2 (linear time). Under JavaScript's backtracking engine each
  // extra "a" doubled the time of these near-matches; see packages/domain/test for longer ones.
  test('a nested-quantifier linkifier renders near-matches as text and real matches as links', async () => {
    const stream = await channel();
    const nested = { realm_id: stack.realm.id, pattern: '(?P<id>(a+)+)', url_template: 'https://example.com/{id}' };
    await stack.db.linkifier.create({ data: nested });
    const nearMatch = `${'a'.repeat(24)}b`;
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: `${nearMatch} aa`,
      content: `${Array(5).fill(nearMatch).join(' ')} aaa`,
    });
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } });
    const url = 'https://example.com/aaa';
    const aaaLink = `<a href="${url}">aaa</a>`;
    expect(message.rendered_content).toBe(`<p>${Array(5).fill(nearMatch).join(' ')} ${aaaLink}</p>`);
    const fetched = await bob.client.get(`/api/v1/messages/${message.id}`);
    expect(fetched.body.message.topic_links).toEqual([{ text: 'aa', url: 'https://example.com/aa' }]);
    await stack.db.linkifier.deleteMany({ where: { realm_id: stack.realm.id } });
  });

  test('uploads linked by the sender are claimed (has_attachment)', async () => {
    const stream = await channel();
    const pathId = `${stack.realm.id}/abc123/notes.png`;
    const attachment = await stack.db.attachment.create({
      data: { realm_id: stack.realm.id, owner_id: alice.id, path_id: pathId, file_name: 'notes.png', size: 10n },
    });
    const response = await alice.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 't',
      content: `[notes.png](/user_uploads/${pathId})`,
    });
    expect(await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } })).toMatchObject({
      has_attachment: true,
      has_image: true,
      has_link: true,
    });
    expect(await stack.db.attachmentMessage.findMany({ where: { message_id: response.body.id } })).toEqual([
      { attachment_id: attachment.id, message_id: response.body.id },
    ]);
    // Someone else's unshared upload is not claimed.
    const foreign = await bob.client.post('/api/v1/messages', {
      type: 'stream',
      to: stream.id,
      topic: 't',
      content: `/user_uploads/${stack.realm.id}/zzz999/other.txt`,
    });
    expect((await stack.db.message.findUniqueOrThrow({ where: { id: foreign.body.id } })).has_attachment).toBe(false);
  });
});

describe('direct messages', () => {
  test('1:1 by user ids: both get rows with is_private, and the event', async () => {
    let response!: ApiResponse;
    const [event] = await captureEvents(stack, async () => {
      response = await alice.client.post('/api/v1/messages', {
        type: 'direct',
        to: JSON.stringify([bob.id]),
        content: 'psst',
      });
      expect(response.status).toBe(200);
    });
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: response.body.id } });
    expect(message).toMatchObject({
      stream_id: null,
      topic: '',
      dm_key: [alice.id, bob.id].sort((a, b) => a - b).join(','),
    });
    expect(await userMessageFlags(stack, message.id)).toEqual(
      new Map([
        [alice.id, MessageFlag.is_private],
        [bob.id, MessageFlag.is_private],
      ]),
    );
    // Neither copy has flags (is_private is not one clients see): the ids alone.
    expect(event.recipients).toBeUndefined();
    expect(event.recipientIds).toEqual([alice.id, bob.id].sort((a, b) => a - b));
    expect(event.event.message).toMatchObject({
      type: 'private',
      subject: '',
      display_recipient: [alice, bob]
        .map((user) => ({ id: user.id, email: user.email, full_name: user.profile.full_name, is_mirror_dummy: false }))
        .sort((a, b) => a.email.localeCompare(b.email)),
    });
    expect(event.event.message).not.toHaveProperty('stream_id');
  });

  test('group conversations by emails, and messages to oneself', async () => {
    const group = await alice.client.post('/api/v1/messages', {
      type: 'private',
      to: `${bob.email}, ${carol.email}`,
      content: 'all three',
    });
    expect(group.status).toBe(200);
    const keyed = await stack.db.message.findUniqueOrThrow({ where: { id: group.body.id } });
    expect(keyed.dm_key).toBe([alice.id, bob.id, carol.id].sort((a, b) => a - b).join(','));
    expect([...(await userMessageFlags(stack, keyed.id)).keys()].sort((a, b) => a - b)).toEqual(
      [alice.id, bob.id, carol.id].sort((a, b) => a - b),
    );
    const json = await alice.client.post('/api/v1/messages', {
      type: 'private',
      to: JSON.stringify([carol.email, bob.email]),
      content: 'same',
    });
    expect((await stack.db.message.findUniqueOrThrow({ where: { id: json.body.id } })).dm_key).toBe(keyed.dm_key);

    const self = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: [alice.id],
      content: 'note to self',
    });
    expect((await stack.db.message.findUniqueOrThrow({ where: { id: self.body.id } })).dm_key).toBe(String(alice.id));
    expect(await userMessageFlags(stack, self.body.id)).toEqual(new Map([[alice.id, MessageFlag.is_private]]));
  });

  test('recipient errors', async () => {
    const send = (to: unknown) =>
      alice.client.post('/api/v1/messages', { type: 'direct', to: to as string, content: 'x' });
    expectError(
      await alice.client.post('/api/v1/messages', { type: 'direct', content: 'x' }),
      400,
      'BAD_REQUEST',
      'Message must have recipients',
    );
    expectError(await send('[]'), 400, 'BAD_REQUEST', 'Message must have recipients');
    expectError(await send([999_999]), 400, 'BAD_REQUEST', 'Invalid user ID 999999');
    expectError(await send('nobody@nowhere.test'), 400, 'BAD_REQUEST', "Invalid email 'nobody@nowhere.test'");
    expectError(
      await send(JSON.stringify([bob.id, carol.email])),
      400,
      'BAD_REQUEST',
      'Recipient lists may contain emails or user IDs, but not both.',
    );
    expectError(await send('{"x": 1}'), 400, 'BAD_REQUEST', 'Invalid data type for recipients');
    const gone = await stack.createUser({ email: 'gone@example.com' });
    await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
    expectError(await send([gone.id]), 400, 'BAD_REQUEST', "'gone@example.com' is no longer using Zulip.");
  });

  test('guests who may not see everyone can only message users they can see', async () => {
    const guest = await stack.createUser({ role: Role.GUEST, fullName: 'Guest Star' });
    await setRealmGroupSetting('can_access_all_users_group', 'role:members');
    try {
      expectError(
        await guest.client.post('/api/v1/messages', { type: 'direct', to: [carol.id], content: 'x' }),
        400,
        'BAD_REQUEST',
        'You do not have permission to access some of the recipients.',
      );
      const shared = await channel({ subscribers: [guest.id, carol.id] });
      expect(shared.id).toBeGreaterThan(0);
      expect(
        (await guest.client.post('/api/v1/messages', { type: 'direct', to: [carol.id], content: 'we share a channel' }))
          .status,
      ).toBe(200);
    } finally {
      await setRealmGroupSetting('can_access_all_users_group', 'role:everyone');
    }
  });

  test('direct_message_permission_group and direct_message_initiator_group', async () => {
    const bot = await stack.createUser({
      fullName: 'Helper Bot',
      email: 'helper-bot@example.com',
      botType: 1,
      botOwnerId: alice.id,
    });
    await setRealmGroupSetting('direct_message_permission_group', 'role:nobody');
    try {
      expectError(
        await alice.client.post('/api/v1/messages', { type: 'direct', to: [bob.id], content: 'x' }),
        400,
        'BAD_REQUEST',
        'Direct messages are disabled in this organization.',
      );
      // Bots, and oneself, are always reachable.
      expect((await alice.client.post('/api/v1/messages', { type: 'direct', to: [bot.id], content: 'x' })).status).toBe(
        200,
      );
      expect(
        (await alice.client.post('/api/v1/messages', { type: 'direct', to: [alice.id], content: 'x' })).status,
      ).toBe(200);
      await setRealmGroupSetting('direct_message_permission_group', 'role:administrators');
      expectError(
        await alice.client.post('/api/v1/messages', { type: 'direct', to: [bob.id], content: 'x' }),
        400,
        'BAD_REQUEST',
        'This conversation does not include any users who can authorize it.',
      );
      expect(
        (await alice.client.post('/api/v1/messages', { type: 'direct', to: [admin.id], content: 'x' })).status,
      ).toBe(200);
    } finally {
      await setRealmGroupSetting('direct_message_permission_group', 'role:everyone');
    }
    await setRealmGroupSetting('direct_message_initiator_group', 'role:administrators');
    try {
      const newcomer = await stack.createUser();
      expectError(
        await newcomer.client.post('/api/v1/messages', { type: 'direct', to: [carol.id], content: 'x' }),
        400,
        'BAD_REQUEST',
        'You do not have permission to initiate direct message conversations.',
      );
      expect(
        (await admin.client.post('/api/v1/messages', { type: 'direct', to: [newcomer.id], content: 'hello' })).status,
      ).toBe(200);
      // Replying to an existing conversation is always possible.
      expect(
        (await newcomer.client.post('/api/v1/messages', { type: 'direct', to: [admin.id], content: 'hi back' })).status,
      ).toBe(200);
    } finally {
      await setRealmGroupSetting('direct_message_initiator_group', 'role:everyone');
    }
  });
});

test("a recipient's alert words flag the message for them, on sending and on editing", async () => {
  const stream = await stack.createStream({
    name: 'alerts',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id, carol.id],
  });
  expect(
    (await bob.client.post('/api/v1/users/me/alert_words', { alert_words: JSON.stringify(['Deploy', 'on fire']) }))
      .status,
  ).toBe(200);
  const flagsFor = async (user: TestUser, id: number) =>
    (await user.client.get(`/api/v1/messages/${id}`)).body.message.flags as string[];
  const send = (content: string) => sendMessage(alice, { type: 'stream', to: stream.id, topic: 'ops', content });

  const whole = await send('The deploy is done, and the server is ON FIRE!');
  expect(await flagsFor(bob, whole)).toContain('has_alert_word');
  expect(await flagsFor(carol, whole)).not.toContain('has_alert_word');
  // Only whole words, and never inside code.
  expect(await flagsFor(bob, await send('redeploying now'))).not.toContain('has_alert_word');
  expect(await flagsFor(bob, await send('run `deploy` then\n```\ndeploy\n```'))).not.toContain('has_alert_word');

  const edited = await send('nothing yet');
  expect(await flagsFor(bob, edited)).not.toContain('has_alert_word');
  expect((await alice.client.patch(`/api/v1/messages/${edited}`, { content: 'time to deploy' })).status).toBe(200);
  expect(await flagsFor(bob, edited)).toContain('has_alert_word');
  expect((await alice.client.patch(`/api/v1/messages/${edited}`, { content: 'never mind' })).status).toBe(200);
  expect(await flagsFor(bob, edited)).not.toContain('has_alert_word');
  // The narrow is:alerted finds it.
  const alertedNarrow = await bob.client.get('/api/v1/messages', {
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: JSON.stringify([{ operator: 'is', operand: 'alerted' }]),
  });
  expect(alertedNarrow.body.messages.map((m: { id: number }) => m.id)).toContain(whole);
});

describe('the notification job (no worker runs here: its jobs stay queued)', () => {
  const jobOf = (messageId: number) =>
    stack.deps.jobs.queue('message-notifications').getJob(`message-notifications-${messageId}`);
  /** Whether each send queued a job: enqueued in send order after the answer, so the last one's job is waited for. */
  async function queuedFor(messageIds: number[], lastQueued: boolean): Promise<boolean[]> {
    if (lastQueued) expect(await until(async () => (await jobOf(messageIds.at(-1)!)) !== undefined, 10_000)).toBe(true);
    return Promise.all(messageIds.map(async (id) => (await jobOf(id)) !== undefined));
  }
  const post = (from: TestUser, params: Params) =>
    from.client.post('/api/v1/messages', params).then((response) => response.body.id as number);

  test('is queued only when someone could be notified (mentioned, channel notifications on, following the topic, a direct message)', async () => {
    const stream = await channel({ subscribers: [alice.id, bob.id, carol.id] });
    const toChannel = (topic: string, content: string) =>
      post(alice, { type: 'stream', to: stream.id, topic, content });
    const nobody = await toChannel('plain', 'nobody is notified of this');
    const mention = await toChannel('plain', '@**Bob Dylan** look');
    const direct = await post(alice, { type: 'direct', to: JSON.stringify([carol.id]), content: 'hi' });
    expect(await queuedFor([nobody, mention, direct], true)).toEqual([false, true, true]);

    await stack.db.userTopic.create({
      data: {
        user_profile_id: bob.id,
        stream_id: stream.id,
        topic_name: 'Followed',
        visibility_policy: VisibilityPolicy.FOLLOWED,
      },
    });
    const followed = await toChannel('FOLLOWED', 'bob follows this topic');
    const elsewhere = await toChannel('plain', 'not in the followed topic');
    await stack.db.subscription.updateMany({
      where: { stream_id: stream.id, user_profile_id: carol.id },
      data: { email_notifications: true },
    });
    const subscription = await toChannel('plain', "carol's subscription emails her");
    expect(await queuedFor([followed, elsewhere, subscription], true)).toEqual([true, false, true]);

    await stack.db.subscription.updateMany({
      where: { stream_id: stream.id, user_profile_id: carol.id },
      data: { email_notifications: null },
    });
    expect((await carol.client.patch('/api/v1/settings', { enable_stream_push_notifications: true })).status).toBe(200);
    const byDefault = await toChannel('plain', "carol's own default pushes");
    expect(await queuedFor([byDefault], true)).toEqual([true]);
    expect((await carol.client.patch('/api/v1/settings', { enable_stream_push_notifications: false })).status).toBe(
      200,
    );

    // Already read: the sender's own copy, and a recipient who muted the sender.
    await stack.db.mutedUser.create({ data: { user_profile_id: bob.id, muted_user_id: alice.id } });
    const muted = await post(alice, { type: 'direct', to: JSON.stringify([bob.id]), content: 'bob muted me' });
    const toSelf = await post(alice, { type: 'direct', to: JSON.stringify([alice.id]), content: 'a note' });
    const last = await toChannel('plain', '@**Carol King** closes the run');
    expect(await queuedFor([muted, toSelf, last], true)).toEqual([false, false, true]);
  });
});
