// GET /messages and GET /messages/{id}: anchors and ranges, every narrow operator, history
// access, and how each reader's preferences shape the message objects.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, sendMessage } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let ids: number[];
let general: { id: number; name: string };
let secret: { id: number; name: string };

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  secret = await stack.createStream({
    name: 'secret',
    creatorId: alice.id,
    subscribers: [alice.id, bob.id],
    inviteOnly: true,
  });
  ids = [
    await sendMessage(alice, { type: 'stream', to: general.id, topic: 'Lunch', content: 'The quick brown foxes jump' }), // 0
    await sendMessage(bob, {
      type: 'stream',
      to: general.id,
      topic: 'lunch',
      content: 'pizza at noon https://example.com',
    }), // 1
    await sendMessage(alice, { type: 'stream', to: general.id, topic: '', content: 'empty topic @**Bob Dylan**' }), // 2
    await sendMessage(alice, { type: 'direct', to: [bob.id], content: 'a direct note' }), // 3
    await sendMessage(bob, { type: 'direct', to: [alice.id, carol.id], content: 'group chat "exact phrase" here' }), // 4
    await sendMessage(alice, { type: 'stream', to: secret.id, topic: '✔ done', content: 'secret stuff' }), // 5
    await sendMessage(alice, { type: 'stream', to: general.id, topic: 'Lunch', content: 'more foxes' }), // 6
  ];
});
afterAll(() => stack.close());

const get = (user: TestUser, params: Record<string, unknown>) => user.client.get('/api/v1/messages', params as never);
const idsOf = (response: { body: { messages: { id: number }[] } }) =>
  response.body.messages.map((message) => message.id);

describe('ranges', () => {
  test('newest, oldest and an id, with found_* and the anchor', async () => {
    const newest = await get(bob, { anchor: 'newest', num_before: 3, num_after: 0 });
    expect(newest.status).toBe(200);
    expect(idsOf(newest)).toEqual(ids.slice(4));
    expect(newest.body).toMatchObject({
      found_anchor: false,
      found_oldest: false,
      found_newest: true,
      history_limited: false,
      anchor: 10_000_000_000_000_000,
    });

    const oldest = await get(bob, { anchor: 'oldest', num_before: 0, num_after: 2 });
    expect(idsOf(oldest)).toEqual(ids.slice(0, 2));
    expect(oldest.body).toMatchObject({ found_anchor: false, found_oldest: true, found_newest: false, anchor: 0 });

    const around = await get(bob, { anchor: String(ids[3]), num_before: 1, num_after: 1 });
    expect(idsOf(around)).toEqual(ids.slice(2, 5));
    expect(around.body).toMatchObject({ found_anchor: true, found_oldest: false, found_newest: false, anchor: ids[3] });

    const everything = await get(bob, { anchor: String(ids[3]), num_before: 100, num_after: 100 });
    expect(idsOf(everything)).toEqual(ids);
    expect(everything.body).toMatchObject({ found_anchor: true, found_oldest: true, found_newest: true });

    const excluded = await get(bob, { anchor: String(ids[3]), num_before: 0, num_after: 2, include_anchor: false });
    expect(idsOf(excluded)).toEqual(ids.slice(4, 6));
    expect(excluded.body.found_anchor).toBe(false);

    const negative = await get(bob, { anchor: '-5', num_after: 1 });
    expect(negative.body.anchor).toBe(0);
    expect(idsOf(negative)).toEqual([ids[0]]);
  });

  test('first_unread: the oldest unread message, or past the newest when all is read', async () => {
    const reader = await stack.createUser();
    const news = await stack.createStream({ name: 'news', creatorId: alice.id, subscribers: [alice.id, reader.id] });
    const first = await sendMessage(alice, { type: 'stream', to: news.id, topic: 'unread', content: 'one' });
    const second = await sendMessage(alice, { type: 'stream', to: news.id, topic: 'unread', content: 'two' });
    const response = await get(reader, { anchor: 'first_unread', num_before: 0, num_after: 5 });
    expect(response.body.anchor).toBe(first);
    expect(idsOf(response)).toEqual([first, second]);
    const legacy = await get(reader, { use_first_unread_anchor: true, num_after: 1 });
    expect(legacy.body.anchor).toBe(first);
    await stack.db.userMessage.updateMany({ where: { user_profile_id: reader.id }, data: { flags: 1 } });
    await stack.fixtureWritten();
    expect((await get(reader, { anchor: 'first_unread', num_before: 1 })).body.anchor).toBe(10_000_000_000_000_000);
  });

  test("parameter errors use Zulip's wording", async () => {
    expectError(await get(bob, { num_before: 1 }), 400, 'BAD_REQUEST', "Missing 'anchor' argument.");
    expectError(await get(bob, { anchor: 'latest' }), 400, 'BAD_REQUEST', 'Invalid anchor');
    expectError(await get(bob, { anchor: 'newest', num_before: -1 }), 400, 'BAD_REQUEST', 'num_before is too small');
    expectError(
      await get(bob, { anchor: 'newest', num_before: 4000, num_after: 1001 }),
      400,
      'BAD_REQUEST',
      'Too many messages requested (maximum 5000).',
    );
    expectError(
      await get(bob, { anchor: '5', num_before: 1, num_after: 1, include_anchor: false }),
      400,
      'BAD_REQUEST',
      'The anchor can only be excluded at an end of the range',
    );
    const combination = await get(bob, { anchor: 'newest', message_ids: [ids[0]] });
    expectError(
      combination,
      400,
      'BAD_REQUEST',
      'Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor',
    );
  });

  test('message_ids: the accessible ones among them', async () => {
    const response = await get(carol, { message_ids: JSON.stringify([ids[0], ids[4], ids[5], 999_999]) });
    expect(response.status).toBe(200);
    // Carol never received ids[0], but the public channel's history is open to her.
    expect(idsOf(response)).toEqual([ids[0], ids[4]]);
    expect(response.body.messages[0].flags).toEqual(['read', 'historical']);
    expect(response.body).toMatchObject({
      found_anchor: false,
      found_oldest: false,
      found_newest: false,
      history_limited: false,
    });
    expect(response.body).not.toHaveProperty('anchor');
  });
});

describe('narrows', () => {
  const narrowed = async (user: TestUser, narrow: unknown) => {
    const response = await get(user, { anchor: 'oldest', num_after: 100, narrow: JSON.stringify(narrow) });
    expect(response.status).toBe(200);
    return idsOf(response);
  };

  test('channel, topic and sender, in both forms and negated', async () => {
    expect(await narrowed(bob, [{ operator: 'channel', operand: 'General' }])).toEqual([
      ids[0],
      ids[1],
      ids[2],
      ids[6],
    ]);
    expect(await narrowed(bob, [{ operator: 'stream', operand: general.id }])).toEqual([
      ids[0],
      ids[1],
      ids[2],
      ids[6],
    ]);
    expect(
      await narrowed(bob, [
        ['stream', 'general'],
        ['topic', 'LUNCH'],
      ]),
    ).toEqual([ids[0], ids[1], ids[6]]);
    expect(
      await narrowed(bob, [
        { operator: 'channel', operand: general.id },
        { operator: 'topic', operand: 'general chat' },
      ]),
    ).toEqual([ids[2]]);
    expect(
      await narrowed(bob, [
        { operator: 'sender', operand: alice.email },
        { operator: 'channel', operand: 'general' },
      ]),
    ).toEqual([ids[0], ids[2], ids[6]]);
    expect(await narrowed(bob, [{ operator: 'sender', operand: bob.id }])).toEqual([ids[1], ids[4]]);
    expect(await narrowed(bob, [{ operator: 'channel', operand: 'general', negated: true }])).toEqual([
      ids[3],
      ids[4],
      ids[5],
    ]);
  });

  test('direct message operators', async () => {
    expect(await narrowed(bob, [{ operator: 'dm', operand: [alice.id] }])).toEqual([ids[3]]);
    expect(await narrowed(bob, [{ operator: 'pm-with', operand: alice.email }])).toEqual([ids[3]]);
    expect(await narrowed(bob, [{ operator: 'dm', operand: `${alice.email},${carol.email}` }])).toEqual([ids[4]]);
    expect(await narrowed(alice, [{ operator: 'dm-including', operand: bob.id }])).toEqual([ids[3], ids[4]]);
    expect(await narrowed(alice, [{ operator: 'group-pm-with', operand: carol.email }])).toEqual([ids[4]]);
    expect(await narrowed(bob, [{ operator: 'is', operand: 'dm' }])).toEqual([ids[3], ids[4]]);
    expect(await narrowed(bob, [['is', 'private']])).toEqual([ids[3], ids[4]]);
  });

  test('is:, has:, id and search', async () => {
    expect(await narrowed(bob, [{ operator: 'is', operand: 'mentioned' }])).toEqual([ids[2]]);
    expect(await narrowed(bob, [{ operator: 'is', operand: 'resolved' }])).toEqual([ids[5]]);
    expect(await narrowed(bob, [{ operator: 'has', operand: 'link' }])).toEqual([ids[1]]);
    expect(await narrowed(bob, [{ operator: 'id', operand: ids[2] }])).toEqual([ids[2]]);
    expect(await narrowed(bob, [{ operator: 'id', operand: String(ids[2]) }])).toEqual([ids[2]]);

    const search = await get(bob, {
      anchor: 'newest',
      num_before: 10,
      narrow: JSON.stringify([{ operator: 'search', operand: 'fox' }]),
    });
    expect(idsOf(search)).toEqual([ids[0], ids[6]]);
    expect(search.body.messages[0]).toMatchObject({
      match_content: '<p>The quick brown <span class="highlight">foxes</span> jump</p>',
      match_subject: 'Lunch',
    });
    expect(await narrowed(bob, [{ operator: 'search', operand: '"exact phrase"' }])).toEqual([ids[4]]);
    expect(await narrowed(bob, [{ operator: 'search', operand: 'lunch' }])).toEqual([ids[0], ids[1], ids[6]]);

    await stack.db.userMessage.updateMany({
      where: { user_profile_id: bob.id, message_id: ids[1] },
      data: { flags: { set: 2 } },
    });
    await stack.fixtureWritten();
    expect(await narrowed(bob, [{ operator: 'is', operand: 'starred' }])).toEqual([ids[1]]);
    expect(
      await narrowed(bob, [
        { operator: 'is', operand: 'starred', negated: true },
        { operator: 'is', operand: 'unread' },
      ]),
    ).not.toContain(ids[1]);
  });

  test("with: the conversation a message is in now, in place of the narrow's own conversation terms", async () => {
    expect(await narrowed(bob, [{ operator: 'with', operand: ids[1] }])).toEqual([ids[0], ids[1], ids[6]]);
    expect(await narrowed(bob, [{ operator: 'with', operand: String(ids[3]) }])).toEqual([ids[3]]);
    expect(await narrowed(alice, [{ operator: 'with', operand: ids[4] }])).toEqual([ids[4]]);
    // Other terms stay; conversation terms give way.
    expect(
      await narrowed(bob, [
        { operator: 'with', operand: ids[1] },
        { operator: 'sender', operand: bob.id },
      ]),
    ).toEqual([ids[1]]);
    expect(
      await narrowed(bob, [
        { operator: 'channel', operand: secret.id },
        { operator: 'topic', operand: 'x' },
        { operator: 'with', operand: ids[3] },
      ]),
    ).toEqual([ids[3]]);

    // A message moved since the link was made: its new topic (without the notification bot's
    // breadcrumb there, which would join the conversation).
    const moves = await stack.createStream({ name: 'moves', creatorId: alice.id, subscribers: [alice.id, bob.id] });
    const moved = await sendMessage(alice, { type: 'stream', to: moves.id, topic: 'before', content: 'moving on' });
    const stayed = await sendMessage(alice, { type: 'stream', to: moves.id, topic: 'before', content: 'staying' });
    const move = { topic: 'after', propagate_mode: 'change_one', send_notification_to_new_thread: false };
    expect((await alice.client.patch(`/api/v1/messages/${moved}`, move)).status).toBe(200);
    expect(
      await narrowed(bob, [
        { operator: 'channel', operand: moves.id },
        { operator: 'topic', operand: 'before' },
        { operator: 'with', operand: moved },
      ]),
    ).toEqual([moved]);
    expect(await narrowed(bob, [{ operator: 'with', operand: stayed }])).toEqual([stayed]);

    // A message Carol may not read: the other terms if they name a conversation, else an error.
    expect(
      await narrowed(carol, [
        { operator: 'channel', operand: general.id },
        { operator: 'topic', operand: 'lunch' },
        { operator: 'with', operand: ids[5] },
      ]),
    ).toEqual([ids[0], ids[1], ids[6]]);
    const bad = (user: TestUser, narrow: unknown) =>
      get(user, { anchor: 'newest', num_before: 1, narrow: JSON.stringify(narrow) });
    expectError(
      await bad(carol, [{ operator: 'with', operand: ids[5] }]),
      400,
      'BAD_NARROW',
      "Invalid narrow operator: Invalid 'with' operator",
    );
    expectError(
      await bad(bob, [{ operator: 'with', operand: 999_999 }]),
      400,
      'BAD_NARROW',
      "Invalid narrow operator: Invalid 'with' operator",
    );
    expectError(
      await bad(bob, [{ operator: 'with', operand: 'abc' }]),
      400,
      'BAD_NARROW',
      "Invalid narrow operator: Invalid 'with' operator",
    );
    expectError(
      await bad(bob, [
        { operator: 'with', operand: ids[1] },
        { operator: 'with', operand: ids[3] },
      ]),
      400,
      'BAD_NARROW',
      "Invalid narrow operator combination: Duplicate 'with' operators.",
    );

    // The flag update over a narrow reads it the same way.
    const marked = await bob.client.post('/api/v1/messages/flags/narrow', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 100,
      narrow: JSON.stringify([{ operator: 'with', operand: stayed }]),
      op: 'add',
      flag: 'starred',
    });
    expect(marked.body).toMatchObject({ processed_count: 1, updated_count: 1 });
    expect((await bob.client.get(`/api/v1/messages/${stayed}`)).body.message.flags).toContain('starred');
  });

  test('in:home and first_unread leave out muted channels and topics', async () => {
    const reader = await stack.createUser();
    const loud = await stack.createStream({ name: 'loud', creatorId: alice.id, subscribers: [alice.id, reader.id] });
    const muted = await stack.createStream({ name: 'muted', creatorId: alice.id, subscribers: [alice.id, reader.id] });
    const inMuted = await sendMessage(alice, { type: 'stream', to: muted.id, topic: 't', content: 'shh' });
    const inMutedTopic = await sendMessage(alice, { type: 'stream', to: loud.id, topic: 'boring', content: 'zzz' });
    const visible = await sendMessage(alice, { type: 'stream', to: loud.id, topic: 'news', content: 'hear this' });
    await stack.db.subscription.updateMany({
      where: { stream_id: muted.id, user_profile_id: reader.id },
      data: { is_muted: true },
    });
    await stack.db.userTopic.create({
      data: { user_profile_id: reader.id, stream_id: loud.id, topic_name: 'Boring', visibility_policy: 1 },
    });
    await stack.fixtureWritten();
    expect(await narrowed(reader, [{ operator: 'in', operand: 'home' }])).toEqual([visible]);
    expect(await narrowed(reader, [{ operator: 'in', operand: 'all' }])).toEqual([inMuted, inMutedTopic, visible]);
    expect((await get(reader, { anchor: 'first_unread', num_after: 0 })).body.anchor).toBe(visible);
    // Within the muted channel itself, channel muting does not apply.
    expect(
      (await get(reader, { anchor: 'first_unread', narrow: JSON.stringify([['channel', 'muted']]) })).body.anchor,
    ).toBe(inMuted);
    expect(await narrowed(reader, [['channel', 'muted']])).toEqual([inMuted]);
  });

  test('history of public channels, never of private ones', async () => {
    // Carol is not subscribed: the public channel's history is still hers to read, with
    // historical flags; the private channel's is not.
    const history = await get(carol, {
      anchor: 'oldest',
      num_after: 10,
      narrow: JSON.stringify([{ operator: 'channel', operand: general.id }]),
    });
    expect(idsOf(history)).toEqual([ids[0], ids[1], ids[2], ids[6]]);
    expect(
      history.body.messages.every((message: { flags: string[] }) => message.flags.join() === 'read,historical'),
    ).toBe(true);
    expect(
      idsOf(
        await get(carol, {
          anchor: 'oldest',
          num_after: 10,
          narrow: JSON.stringify([{ operator: 'channel', operand: secret.id }]),
        }),
      ),
    ).toEqual([]);
    // Without a channel term only received messages count.
    expect(idsOf(await get(carol, { anchor: 'oldest', num_after: 10 }))).toEqual([ids[4]]);
    // A guest gets no history of public channels.
    const guest = await stack.createUser({ role: Role.GUEST });
    expect(
      idsOf(
        await get(guest, {
          anchor: 'oldest',
          num_after: 10,
          narrow: JSON.stringify([{ operator: 'channel', operand: general.id }]),
        }),
      ),
    ).toEqual([]);
  });

  test("bad narrows give Zulip's errors", async () => {
    const bad = (narrow: unknown) =>
      get(bob, {
        anchor: 'newest',
        num_before: 1,
        narrow: typeof narrow === 'string' ? narrow : JSON.stringify(narrow),
      });
    expectError(
      await bad([{ operator: 'bogus', operand: 'x' }]),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: unknown operator bogus',
    );
    expect((await bad([{ operator: 'bogus', operand: 'x' }])).body.desc).toBe('unknown operator bogus');
    expectError(
      await bad([{ operator: 'is', operand: 'happy' }]),
      400,
      'BAD_NARROW',
      "Invalid narrow operator: unknown 'is' operand happy",
    );
    expectError(
      await bad([{ operator: 'has', operand: 'cats' }]),
      400,
      'BAD_NARROW',
      "Invalid narrow operator: unknown 'has' operand cats",
    );
    expectError(
      await bad([{ operator: 'channel', operand: 'nowhere' }]),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: unknown channel nowhere',
    );
    expectError(
      await bad([{ operator: 'sender', operand: 'ghost@example.com' }]),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: unknown user ghost@example.com',
    );
    expectError(
      await bad([{ operator: 'dm', operand: [999_999] }]),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: unknown user in [999999]',
    );
    expectError(
      await bad([{ operator: 'id', operand: 'abc' }]),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: Invalid message ID',
    );
    expectError(
      await bad([
        { operator: 'channel', operand: 'general' },
        { operator: 'is', operand: 'dm' },
      ]),
      400,
      'BAD_NARROW',
      'Invalid narrow operator: No message can be both a channel message and direct message',
    );
    expectError(await bad({ operator: 'channel' }), 400, 'BAD_REQUEST', 'narrow is not a list');
    expectError(await bad([['stream']]), 400, 'BAD_REQUEST', 'Invalid narrow[0]: element is not a string pair');
    expectError(await bad([{ operator: 'topic' }]), 400, 'BAD_REQUEST', 'Invalid narrow[0]: operand is missing');
    expectError(await bad([{ operator: 'topic', operand: 5 }]), 400, 'BAD_REQUEST', 'operand is not a string');
    expectError(await bad([{ operator: 'search', operand: '  ' }]), 400, 'BAD_REQUEST', 'operand cannot be blank');
    expectError(
      await bad([{ operator: 'dm', operand: { a: 1 } }]),
      400,
      'BAD_REQUEST',
      'operand is not a string or an integer list',
    );
    expectError(
      await bad([{ operator: 'topic', operand: 'x', negated: 'yes' }]),
      400,
      'BAD_REQUEST',
      'negated is not a boolean',
    );
    expectError(await bad('not json'), 400, 'BAD_REQUEST', 'narrow is not valid JSON');
  });
});

describe('message objects', () => {
  test('apply_markdown, client_gravatar and allow_empty_topic_name', async () => {
    const html = await get(bob, { anchor: String(ids[2]), num_before: 0, num_after: 0 });
    expect(html.body.messages).toHaveLength(1);
    expect(html.body.messages[0]).toMatchObject({
      content: `<p>empty topic <span class="user-mention" data-user-id="${bob.id}">@Bob Dylan</span></p>`,
      content_type: 'text/html',
      subject: 'general chat',
      avatar_url: null,
      flags: ['mentioned'],
    });
    expect(html.body.messages[0]).not.toHaveProperty('rendered_content');
    expect(html.body.messages[0]).not.toHaveProperty('_external_avatar');

    const raw = await get(bob, {
      anchor: String(ids[2]),
      apply_markdown: false,
      client_gravatar: false,
      allow_empty_topic_name: true,
    });
    expect(raw.body.messages[0]).toMatchObject({
      content: 'empty topic @**Bob Dylan**',
      content_type: 'text/x-markdown',
      subject: '',
      avatar_url: expect.stringMatching(/^https:\/\/secure\.gravatar\.com\/avatar\//),
    });
  });

  test('GET /messages/{id}: raw_content, flags, and no access to what one may not read', async () => {
    const own = await bob.client.get(`/api/v1/messages/${ids[2]}`);
    expect(own.status).toBe(200);
    expect(own.body.raw_content).toBe('empty topic @**Bob Dylan**');
    expect(own.body.message).toMatchObject({
      id: ids[2],
      flags: ['mentioned'],
      subject: 'general chat',
      content_type: 'text/html',
    });
    const markdown = await bob.client.get(`/api/v1/messages/${ids[2]}`, {
      apply_markdown: false,
      allow_empty_topic_name: true,
    });
    expect(markdown.body.message).toMatchObject({ content: 'empty topic @**Bob Dylan**', subject: '' });

    const historical = await carol.client.get(`/api/v1/messages/${ids[0]}`);
    expect(historical.body.message.flags).toEqual(['read', 'historical']);
    expectError(await carol.client.get(`/api/v1/messages/${ids[5]}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(await carol.client.get(`/api/v1/messages/${ids[3]}`), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(await carol.client.get('/api/v1/messages/999999'), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });

  test('POST /messages/render previews without sending', async () => {
    const before = await stack.db.message.count();
    const response = await alice.client.post('/api/v1/messages/render', { content: '**hi** @**Bob Dylan**' });
    expect(response.body.rendered).toBe(
      `<p><strong>hi</strong> <span class="user-mention" data-user-id="${bob.id}">@Bob Dylan</span></p>`,
    );
    expect(await stack.db.message.count()).toBe(before);
  });
});
