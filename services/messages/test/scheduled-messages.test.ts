// Scheduled messages: create, list, edit, delete with Zulip's validation and errors, the
// scheduled_messages events and register section, and delivery at the time by the worker
// (a BullMQ delayed job; a poll of the table for lost jobs), exactly once.
import { setTimeout as sleep } from 'node:timers/promises';
import { NOTIFICATION_BOT } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import {
  captureEvents,
  expectError,
  ofType,
  registerEventQueue,
  settleEvents,
  waitFor,
  type Params,
} from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let general: { id: number };
let secret: { id: number };

beforeAll(async () => {
  stack = await startStack({
    services: ['messages', 'events', 'worker'],
    // The poll of due rows every half second (the lost-job test waits on it).
    env: { SCHEDULED_MESSAGES_POLL_MS: '500' },
  });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  secret = await stack.createStream({ name: 'secret', creatorId: bob.id, subscribers: [bob.id], inviteOnly: true });
});
afterAll(() => stack.close());

const now = () => Math.floor(Date.now() / 1000);
const inAnHour = () => now() + 3600;

const schedule = (user: TestUser, params: Params) =>
  user.client.post('/api/v1/scheduled_messages', {
    type: 'stream',
    to: String(general.id),
    topic: 'plans',
    content: 'later',
    scheduled_delivery_timestamp: inAnHour(),
    ...params,
  });

describe('scheduling', () => {
  test('create a channel and a direct message, list them soonest first, and the add events', async () => {
    const at = inAnHour();
    let channelId = 0;
    const captured = await captureEvents(stack, async () => {
      const channel = await schedule(alice, { content: '**bold** plan', scheduled_delivery_timestamp: at + 60 });
      expect(channel.status).toBe(200);
      channelId = channel.body.scheduled_message_id;
    });
    const direct = await schedule(alice, {
      type: 'direct',
      to: JSON.stringify([carol.id, bob.id, alice.id]),
      content: 'hi both',
      scheduled_delivery_timestamp: at,
    });
    expect(direct.status).toBe(200);
    const directId = direct.body.scheduled_message_id;

    const [added] = ofType(captured, 'scheduled_messages', 'add');
    expect(added.recipientIds).toEqual([alice.id]);
    expect(added.event.scheduled_messages).toEqual([
      {
        scheduled_message_id: channelId,
        type: 'stream',
        to: general.id,
        topic: 'plans',
        content: '**bold** plan',
        rendered_content: '<p><strong>bold</strong> plan</p>',
        scheduled_delivery_timestamp: at + 60,
        failed: false,
      },
    ]);

    const listed = await alice.client.get('/api/v1/scheduled_messages');
    expect(listed.status).toBe(200);
    expect(listed.body.scheduled_messages.map((m: any) => m.scheduled_message_id)).toEqual([directId, channelId]);
    expect(listed.body.scheduled_messages[0]).toEqual({
      scheduled_message_id: directId,
      type: 'private',
      to: [bob.id, carol.id].sort((a, b) => a - b),
      content: 'hi both',
      rendered_content: '<p>hi both</p>',
      scheduled_delivery_timestamp: at,
      failed: false,
    });
    // Only one's own.
    expect((await bob.client.get('/api/v1/scheduled_messages')).body.scheduled_messages).toEqual([]);

    // Register's section holds the same list.
    const queue = await registerEventQueue(alice.client, { fetch_event_types: JSON.stringify(['scheduled_messages']) });
    expect(queue.registration.scheduled_messages).toEqual(listed.body.scheduled_messages);

    // A direct message to oneself lists oneself.
    const self = await schedule(alice, { type: 'private', to: JSON.stringify([alice.id]) });
    const own = await alice.client.get('/api/v1/scheduled_messages');
    expect(
      own.body.scheduled_messages.find((m: any) => m.scheduled_message_id === self.body.scheduled_message_id).to,
    ).toEqual([alice.id]);
    for (const id of [channelId, directId, self.body.scheduled_message_id]) {
      expect((await alice.client.delete(`/api/v1/scheduled_messages/${id}`)).status).toBe(200);
    }
  });

  test("Zulip's validation errors", async () => {
    expectError(
      await schedule(alice, { scheduled_delivery_timestamp: now() - 10 }),
      400,
      'BAD_REQUEST',
      'Scheduled delivery time must be in the future.',
    );
    expectError(await schedule(alice, { to: 'general' }), 400, 'BAD_REQUEST', 'Invalid data type for channel ID');
    expectError(await schedule(alice, { to: '[1]' }), 400, 'BAD_REQUEST', 'Invalid data type for channel ID');
    expectError(
      await schedule(alice, { type: 'direct', to: '5' }),
      400,
      'BAD_REQUEST',
      'Invalid data type for recipients',
    );
    expectError(
      await schedule(alice, { type: 'direct', to: '["a@b.c"]' }),
      400,
      'BAD_REQUEST',
      'Recipient list may only contain user IDs',
    );
    expectError(
      await schedule(alice, { type: 'direct', to: '[999999]' }),
      400,
      'BAD_REQUEST',
      'Invalid user ID 999999',
    );
    expectError(await schedule(alice, { topic: undefined }), 400, 'BAD_REQUEST', 'Missing topic');
    expectError(await schedule(alice, { content: '  ' }), 400, 'BAD_REQUEST', 'Message must not be empty');
    expectError(
      await schedule(alice, { to: '999999' }),
      400,
      'STREAM_DOES_NOT_EXIST',
      "Channel with ID '999999' does not exist",
    );
    // A private channel one is not subscribed to.
    expectError(
      await schedule(alice, { to: String(secret.id) }),
      400,
      'BAD_REQUEST',
      "Not authorized to send to channel 'secret'",
    );
    expectError(await schedule(alice, { type: 'bogus' }), 400, 'BAD_REQUEST', 'Invalid type');
    expectError(await schedule(alice, { scheduled_delivery_timestamp: 'soon' }), 400, 'BAD_REQUEST');
    expect((await alice.client.get('/api/v1/scheduled_messages')).body.scheduled_messages).toEqual([]);
  });

  test('edit: content, topic, recipients and time, with the update event; errors', async () => {
    const id = (await schedule(alice, {})).body.scheduled_message_id;
    const at = inAnHour() + 600;
    const captured = await captureEvents(stack, async () => {
      const edited = await alice.client.patch(`/api/v1/scheduled_messages/${id}`, {
        content: 'new *text*',
        topic: 'moved',
        scheduled_delivery_timestamp: at,
      });
      expect(edited.status).toBe(200);
    });
    const [update] = ofType(captured, 'scheduled_messages', 'update');
    expect(update.recipientIds).toEqual([alice.id]);
    expect(update.event.scheduled_message).toEqual({
      scheduled_message_id: id,
      type: 'stream',
      to: general.id,
      topic: 'moved',
      content: 'new *text*',
      rendered_content: '<p>new <em>text</em></p>',
      scheduled_delivery_timestamp: at,
      failed: false,
    });
    // To a direct message.
    expect(
      (await alice.client.patch(`/api/v1/scheduled_messages/${id}`, { type: 'direct', to: JSON.stringify([bob.id]) }))
        .status,
    ).toBe(200);
    const [listed] = (await alice.client.get('/api/v1/scheduled_messages')).body.scheduled_messages;
    expect(listed).toMatchObject({ type: 'private', to: [bob.id], content: 'new *text*' });
    expect(listed.topic).toBeUndefined();

    const patch = (params: Params, user = alice, target = id) =>
      user.client.patch(`/api/v1/scheduled_messages/${target}`, params);
    expectError(await patch({}), 400, 'BAD_REQUEST', 'Nothing to change');
    expectError(
      await patch({ type: 'stream' }),
      400,
      'BAD_REQUEST',
      'Recipient required when updating type of scheduled message.',
    );
    expectError(
      await patch({ type: 'stream', to: String(general.id) }),
      400,
      'BAD_REQUEST',
      'Topic required when updating scheduled message type to stream.',
    );
    expectError(
      await patch({ scheduled_delivery_timestamp: now() - 5 }),
      400,
      'BAD_REQUEST',
      'Scheduled delivery time must be in the future.',
    );
    expectError(await patch({ content: 'x' }, bob), 404, 'BAD_REQUEST', 'Scheduled message does not exist');
    expectError(await patch({ content: 'x' }, alice, 999999), 404, 'BAD_REQUEST', 'Scheduled message does not exist');

    // Delete: the remove event; then it is gone.
    const removed = await captureEvents(stack, async () => {
      expectError(
        await bob.client.delete(`/api/v1/scheduled_messages/${id}`),
        404,
        'BAD_REQUEST',
        'Scheduled message does not exist',
      );
      expect((await alice.client.delete(`/api/v1/scheduled_messages/${id}`)).status).toBe(200);
    });
    expect(ofType(removed, 'scheduled_messages', 'remove').map((e) => e.event)).toEqual([
      { type: 'scheduled_messages', op: 'remove', scheduled_message_id: id },
    ]);
    expectError(await alice.client.delete(`/api/v1/scheduled_messages/${id}`), 404, 'BAD_REQUEST');
    expect(await stack.db.scheduledMessage.count({ where: { id } })).toBe(0);
  });
});

describe('delivery', () => {
  test('a scheduled message arrives at its time, exactly once, and leaves the list', async () => {
    const bobQueue = await registerEventQueue(bob.client, {
      event_types: JSON.stringify(['message']),
      apply_markdown: true,
    });
    const aliceQueue = await registerEventQueue(alice.client, { event_types: JSON.stringify(['scheduled_messages']) });
    const at = now() + 3;
    const created = await schedule(alice, { content: 'on time', topic: 'timed', scheduled_delivery_timestamp: at });
    const id = created.body.scheduled_message_id;
    const [added] = await aliceQueue.next();
    expect(added).toMatchObject({ op: 'add' });

    const [event] = await bobQueue.next(1, 20_000);
    // Not before its time (second precision).
    expect(Date.now()).toBeGreaterThanOrEqual(at * 1000);
    expect(event.message).toMatchObject({ sender_id: alice.id, subject: 'timed', content: '<p>on time</p>' });
    const [removed] = await aliceQueue.next(1, 20_000);
    expect(removed).toMatchObject({ type: 'scheduled_messages', op: 'remove', scheduled_message_id: id });

    const row = await stack.db.scheduledMessage.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ delivered: true, failed: false, delivered_message_id: event.message.id });
    expect(await stack.db.message.count({ where: { content: 'on time' } })).toBe(1);
    // Later polls and the job's repeats find it delivered: still one message.
    await sleep(1500);
    await settleEvents(stack);
    expect(await bobQueue.drain()).toEqual([]);
    expect(await stack.db.message.count({ where: { content: 'on time' } })).toBe(1);
    expect((await alice.client.get('/api/v1/scheduled_messages')).body.scheduled_messages).toEqual([]);
    // A delivered message can no longer be edited.
    expectError(
      await alice.client.patch(`/api/v1/scheduled_messages/${id}`, { content: 'too late' }),
      400,
      'BAD_REQUEST',
      'Scheduled message was already sent',
    );
  });

  test('a PATCH of the time re-schedules: the old job sends nothing', async () => {
    const first = now() + 4;
    const id = (await schedule(alice, { content: 'moved later', scheduled_delivery_timestamp: first })).body
      .scheduled_message_id;
    const later = first + 4;
    expect(
      (await alice.client.patch(`/api/v1/scheduled_messages/${id}`, { scheduled_delivery_timestamp: later })).status,
    ).toBe(200);
    // Past the first time (and a poll of due rows): nothing sent.
    await sleep(Math.max(0, first * 1000 + 1500 - Date.now()));
    expect(await stack.db.message.count({ where: { content: 'moved later' } })).toBe(0);
    const row = await waitFor(() => stack.db.scheduledMessage.findFirst({ where: { id, delivered: true } }));
    expect(Date.now()).toBeGreaterThanOrEqual(later * 1000);
    expect(await stack.db.message.count({ where: { content: 'moved later' } })).toBe(1);
    expect(row.delivered_message_id).not.toBeNull();
  });

  test('a job for a message not yet due (a stale time) does nothing', async () => {
    const id = (await schedule(alice, { content: 'not yet' })).body.scheduled_message_id;
    const jobs = stack.deps.jobs.queue('scheduled-message');
    const job = await jobs.add(
      'scheduled-message',
      { realmId: stack.realm.id, scheduledMessageId: id, senderId: alice.id },
      { jobId: `stale-${id}` },
    );
    // Read once completed: a job read before it finished keeps a null returnvalue.
    const done = await waitFor(async () =>
      (await jobs.getJobState(job.id!)) === 'completed' ? jobs.getJob(job.id!) : undefined,
    );
    expect(done.returnvalue).toEqual({ outcome: 'skipped' });
    expect(await stack.db.scheduledMessage.findUniqueOrThrow({ where: { id } })).toMatchObject({
      delivered: false,
      failed: false,
    });
    expect(await stack.db.message.count({ where: { content: 'not yet' } })).toBe(0);
    await alice.client.delete(`/api/v1/scheduled_messages/${id}`);
  });

  test('a due message whose job was lost is delivered by the poll of the table', async () => {
    // Straight in the table, as if Redis had lost its delayed job.
    const row = await stack.db.scheduledMessage.create({
      data: {
        realm_id: stack.realm.id,
        sender_id: alice.id,
        type: 'stream',
        stream_id: general.id,
        topic: 'lost',
        content: 'lost job',
        rendered_content: '<p>lost job</p>',
        scheduled_timestamp: new Date(Date.now() - 1000),
      },
    });
    const delivered = await waitFor(() =>
      stack.db.scheduledMessage.findFirst({ where: { id: row.id, delivered: true } }),
    );
    const message = await stack.db.message.findUniqueOrThrow({ where: { id: delivered.delivered_message_id! } });
    expect(message).toMatchObject({ content: 'lost job', topic: 'lost', sender_id: alice.id });
  });

  test('a message that can no longer be sent fails with Zulip’s error and an update event', async () => {
    const archived = await stack.createStream({ name: 'closing', creatorId: alice.id, subscribers: [alice.id] });
    const queue = await registerEventQueue(alice.client, { event_types: JSON.stringify(['scheduled_messages']) });
    const id = (
      await schedule(alice, {
        to: String(archived.id),
        content: 'into the void',
        scheduled_delivery_timestamp: now() + 4,
      })
    ).body.scheduled_message_id;
    await queue.next();
    await stack.db.stream.update({ where: { id: archived.id }, data: { is_archived: true } });
    const [update] = await queue.next(1, 20_000);
    expect(update).toMatchObject({
      type: 'scheduled_messages',
      op: 'update',
      scheduled_message: { scheduled_message_id: id, failed: true },
    });
    const row = await stack.db.scheduledMessage.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({
      failed: true,
      delivered: false,
      failure_message: "Not authorized to send to channel 'closing'",
    });
    expect(await stack.db.message.count({ where: { content: 'into the void' } })).toBe(0);
    // The notification bot tells the sender in a direct message, in Zulip 10.2's words.
    const bot = await stack.db.userProfile.findFirstOrThrow({ where: { delivery_email: NOTIFICATION_BOT } });
    const notice = await stack.db.message.findFirstOrThrow({
      where: { sender_id: bot.id, realm_id: stack.realm.id },
      orderBy: { id: 'desc' },
    });
    const at = row.scheduled_timestamp.toISOString();
    expect(notice).toMatchObject({
      stream_id: null,
      dm_key: [alice.id, bot.id].sort((a, b) => a - b).join(','),
      content:
        `The message you scheduled for <time:${at.slice(0, 10)} ${at.slice(11, 19)}+00:00>  was not sent because of the following error:\n\n` +
        "> Not authorized to send to channel 'closing'\n\n[View scheduled messages](#scheduled)",
    });
    const fetched = (await alice.client.get(`/api/v1/messages/${notice.id}`, {})).body.message;
    expect(fetched).toMatchObject({
      sender_email: NOTIFICATION_BOT,
      sender_full_name: 'Notification Bot',
      type: 'private',
    });
    expect(fetched.content).toContain('<time datetime=');
    // Failed ones stay listed, and editing needs a new time.
    const listed = (await alice.client.get('/api/v1/scheduled_messages')).body.scheduled_messages;
    expect(listed.find((m: any) => m.scheduled_message_id === id)).toMatchObject({ failed: true });
    expectError(
      await alice.client.patch(`/api/v1/scheduled_messages/${id}`, { content: 'again' }),
      400,
      'BAD_REQUEST',
      'Scheduled delivery time must be in the future.',
    );
    await alice.client.delete(`/api/v1/scheduled_messages/${id}`);
  });
});
