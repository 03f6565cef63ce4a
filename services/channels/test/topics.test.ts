// Topics of a channel, per-topic visibility, and deleting a topic through the worker's job.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType, type Params } from '@teamchat/testing';
import { Role } from '@teamchat/domain';
import type { RunningService } from '@teamchat/runtime';
import { insertMessages, sorted, uniqueName } from './helpers';

let stack: Stack;
let owner: TestUser;
let admin: TestUser;
let moderator: TestUser;
let member: TestUser;
let guest: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'worker'] });
  owner = await stack.createUser({ role: Role.OWNER });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
  moderator = await stack.createUser({ role: Role.MODERATOR });
  member = await stack.createUser({ role: Role.MEMBER });
  guest = await stack.createUser({ role: Role.GUEST });
});
afterAll(async () => stack?.close());

async function channel(params: Params = {}, by: TestUser = owner): Promise<{ id: number; name: string }> {
  const name = uniqueName('topics');
  const res = await by.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], ...params });
  expect(res.status).toBe(200);
  return { id: (await stack.db.stream.findFirstOrThrow({ where: { name } })).id, name };
}

const topicsOf = (user: TestUser, streamId: number, params: Params = {}) =>
  user.client.get(`/api/v1/users/me/${streamId}/topics`, params);

describe('GET /users/me/{stream_id}/topics', () => {
  test('newest first, one entry per topic whatever its case, named as its newest message', async () => {
    const { id } = await channel({ principals: [owner.id, member.id] });
    const a = await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: 'release',
      count: 2,
      recipients: [owner.id, member.id],
    });
    const b = await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: '',
      count: 1,
      recipients: [owner.id, member.id],
    });
    const c = await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: 'Release',
      count: 1,
      recipients: [owner.id, member.id],
    });
    const res = await topicsOf(member, id);
    expect(res.body.topics).toEqual([
      { name: 'Release', max_id: c[0] },
      { name: 'general chat', max_id: b[0] },
    ]);
    expect(a.length).toBe(2);
    expect((await topicsOf(member, id, { allow_empty_topic_name: true })).body.topics[1]).toEqual({
      name: '',
      max_id: b[0],
    });
    // Public history: a non-subscriber sees them all.
    expect((await topicsOf(admin, id)).body.topics).toHaveLength(2);
    expectError(await topicsOf(guest, id), 400, 'BAD_REQUEST', 'Invalid channel ID');
    expectError(await topicsOf(member, 999999), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('protected history: only topics of messages one received', async () => {
    const { id } = await channel({ invite_only: true });
    await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: 'before',
      count: 1,
      recipients: [owner.id],
    });
    await owner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: (await stack.db.stream.findUniqueOrThrow({ where: { id } })).name }],
      principals: [member.id],
    });
    const after = await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: 'after',
      count: 1,
      recipients: [owner.id, member.id],
    });
    expect((await topicsOf(member, id)).body.topics).toEqual([{ name: 'after', max_id: after[0] }]);
    expect((await topicsOf(owner, id)).body.topics.map((t: { name: string }) => t.name)).toEqual(['after', 'before']);
    // Administrators not subscribed cannot read a private channel's topics.
    expectError(await topicsOf(admin, id), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });
});

describe('POST /user_topics', () => {
  test('each policy, events, no event without change, topics without messages', async () => {
    const { id, name } = await channel();
    const set = (topic: string, policy: number, user = member) =>
      user.client.post('/api/v1/user_topics', { stream_id: id, topic, visibility_policy: policy });
    const events = await captureEvents(stack, async () => {
      expect((await set('Quiet', 1)).status).toBe(200);
    });
    expect(events.map((e) => e.event.type)).toEqual(['muted_topics', 'user_topic']);
    expect(events[0].event.muted_topics).toEqual([[name, 'Quiet', expect.any(Number)]]);
    expect(events[1]).toMatchObject({
      recipientIds: [member.id],
      event: { stream_id: id, topic_name: 'Quiet', visibility_policy: 1, last_updated: expect.any(Number) },
    });
    // The same topic in another case is the same row.
    for (const policy of [2, 3]) {
      await set('quiet', policy);
      expect(await stack.db.userTopic.findMany({ where: { user_profile_id: member.id, stream_id: id } })).toEqual([
        expect.objectContaining({ topic_name: 'Quiet', visibility_policy: policy }),
      ]);
    }
    expect(await captureEvents(stack, () => set('QUIET', 3))).toEqual([]);
    await set('Quiet', 0);
    expect(await stack.db.userTopic.count({ where: { user_profile_id: member.id, stream_id: id } })).toBe(0);
    expect(await captureEvents(stack, () => set('Quiet', 0))).toEqual([]);
    // "(no topic)" is the empty topic.
    await set('(no topic)', 1);
    expect(
      await stack.db.userTopic.findFirstOrThrow({ where: { user_profile_id: member.id, stream_id: id } }),
    ).toMatchObject({ topic_name: '', visibility_policy: 1 });

    expectError(await set('t'.repeat(61), 1), 400, 'BAD_REQUEST', 'topic is too long (limit: 60 characters)');
    expectError(await set('x', 4), 400, 'BAD_REQUEST', 'Invalid visibility_policy');
    expectError(
      await member.client.post('/api/v1/user_topics', { stream_id: 999999, topic: 'x', visibility_policy: 1 }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    expectError(
      await member.client.post('/api/v1/user_topics', { stream_id: id, visibility_policy: 1 }),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'topic' argument",
    );
    expectError(await set('x', 1, guest), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('removing a policy needs only the channel to exist', async () => {
    const { id, name } = await channel({ invite_only: true, principals: [owner.id, member.id] });
    await member.client.post('/api/v1/user_topics', { stream_id: id, topic: 'old', visibility_policy: 1 });
    await owner.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [name], principals: [member.id] });
    expectError(
      await member.client.post('/api/v1/user_topics', { stream_id: id, topic: 'old', visibility_policy: 3 }),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    expect(
      (await member.client.post('/api/v1/user_topics', { stream_id: id, topic: 'old', visibility_policy: 0 })).status,
    ).toBe(200);
    expect(await stack.db.userTopic.count({ where: { user_profile_id: member.id, stream_id: id } })).toBe(0);
  });
});

describe('PATCH /users/me/subscriptions/muted_topics (before user_topics)', () => {
  test('mutes and unmutes by channel id or name', async () => {
    const { id, name } = await channel();
    const mute = (params: Params) => member.client.patch('/api/v1/users/me/subscriptions/muted_topics', params);
    expect((await mute({ stream_id: id, topic: 'legacy', op: 'add' })).status).toBe(200);
    expect(
      await stack.db.userTopic.findFirstOrThrow({ where: { user_profile_id: member.id, stream_id: id } }),
    ).toMatchObject({ topic_name: 'legacy', visibility_policy: 1 });
    expect((await mute({ stream: name, topic: 'legacy', op: 'remove' })).status).toBe(200);
    expect(await stack.db.userTopic.count({ where: { user_profile_id: member.id, stream_id: id } })).toBe(0);
    expectError(await mute({ topic: 'legacy', op: 'add' }), 400, 'BAD_REQUEST', "Missing 'stream_id' argument");
    expectError(
      await mute({ stream_id: id, stream: name, topic: 'legacy', op: 'add' }),
      400,
      'BAD_REQUEST',
      'Unsupported parameter combination: stream_id, stream',
    );
    expectError(await mute({ stream_id: id, topic: 'legacy', op: 'toggle' }), 400, 'BAD_REQUEST', 'Invalid op');
  });
});

describe('POST /streams/{stream_id}/delete_topic', () => {
  const deleteTopic = (user: TestUser, streamId: number, topic: string) =>
    user.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: topic });

  test('organisation administrators only', async () => {
    const { id } = await channel({ principals: [owner.id, moderator.id, member.id] });
    await insertMessages(stack, { streamId: id, senderId: owner.id, topic: 'keep', count: 1, recipients: [owner.id] });
    for (const user of [moderator, member, guest]) {
      expectError(
        await deleteTopic(user, id, 'keep'),
        400,
        'UNAUTHORIZED_PRINCIPAL',
        'Must be an organization administrator',
      );
    }
    expect(await stack.db.message.count({ where: { stream_id: id } })).toBe(1);
    const secret = await channel({ invite_only: true });
    expectError(await deleteTopic(admin, secret.id, 'keep'), 400, 'BAD_REQUEST', 'Invalid channel ID');
    expectError(
      await admin.client.post(`/api/v1/streams/${id}/delete_topic`, {}),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'topic_name' argument",
    );
  });

  test('more than one batch: newest first, delete_message per batch, first_message_id, uploads, user_topics', async () => {
    const { id, name } = await channel({ principals: [owner.id, member.id] });
    const doomed = await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: 'Doomed',
      count: 250,
      recipients: [owner.id, member.id],
    });
    const kept = await insertMessages(stack, {
      streamId: id,
      senderId: owner.id,
      topic: 'kept',
      count: 3,
      recipients: [owner.id, member.id],
    });
    // An upload linked only from the topic, and one also linked from a kept message.
    const orphan = await stack.db.attachment.create({
      data: {
        realm_id: stack.realm.id,
        owner_id: owner.id,
        path_id: `${stack.realm.id}/aa/${name}-orphan.txt`,
        file_name: 'orphan.txt',
        size: 3n,
      },
    });
    const shared = await stack.db.attachment.create({
      data: {
        realm_id: stack.realm.id,
        owner_id: owner.id,
        path_id: `${stack.realm.id}/bb/${name}-shared.txt`,
        file_name: 'shared.txt',
        size: 3n,
      },
    });
    await stack.db.attachmentMessage.createMany({
      data: [
        { attachment_id: orphan.id, message_id: doomed[10] },
        { attachment_id: shared.id, message_id: doomed[20] },
        { attachment_id: shared.id, message_id: kept[0] },
      ],
    });
    await member.client.post('/api/v1/user_topics', { stream_id: id, topic: 'doomed', visibility_policy: 1 });
    const firstBefore = (await stack.db.stream.findUniqueOrThrow({ where: { id } })).first_message_id;
    expect(firstBefore).toBe(doomed[0]);

    const events = await captureEvents(stack, async () => {
      const res = await deleteTopic(admin, id, 'DOOMED');
      expect(res.body).toEqual({ result: 'success', msg: '', complete: true });
    });
    expect(await stack.db.message.count({ where: { stream_id: id } })).toBe(3);
    expect(await stack.db.userMessage.count({ where: { message_id: { in: doomed } } })).toBe(0);

    const deletions = ofType(events, 'delete_message');
    expect(deletions.map((e) => e.event.message_ids.length)).toEqual([100, 100, 50]);
    expect(deletions[0].event).toEqual({
      type: 'delete_message',
      message_ids: doomed.slice(150),
      message_type: 'stream',
      stream_id: id,
      topic: 'Doomed',
    });
    expect(deletions[2].event.message_ids).toEqual(doomed.slice(0, 50));
    // The subscribers, and the deleting administrator (as DELETE /messages tells its deleting user).
    for (const deletion of deletions) expect(deletion.recipientIds).toEqual(sorted([owner.id, member.id, admin.id]));
    // The oldest message went with the last batch.
    expect(ofType(events, 'stream', 'update')).toEqual([
      expect.objectContaining({
        event: { type: 'stream', op: 'update', property: 'first_message_id', value: kept[0], stream_id: id, name },
      }),
    ]);
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id } })).first_message_id).toBe(kept[0]);
    // The member's muted topic is gone and they are told.
    expect(ofType(events, 'user_topic')).toEqual([
      expect.objectContaining({
        recipientIds: [member.id],
        event: expect.objectContaining({ stream_id: id, topic_name: 'doomed', visibility_policy: 0 }),
      }),
    ]);
    expect(await stack.db.userTopic.count({ where: { stream_id: id } })).toBe(0);
    // Only the orphaned upload goes to the uploads clean-up job.
    const jobs = await stack.deps.jobs
      .queue('uploads-cleanup')
      .getJobs(['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized', 'paused']);
    expect(jobs.map((job) => job.data)).toContainEqual({ attachmentIds: [orphan.id] });
    expect(jobs.some((job) => (job.data.attachmentIds as number[]).includes(shared.id))).toBe(false);
    expect(await stack.db.attachmentMessage.count({ where: { attachment_id: shared.id } })).toBe(1);

    // The topic is gone: repeating the request completes at once.
    expect((await deleteTopic(admin, id, 'Doomed')).body.complete).toBe(true);
    expect((await topicsOf(owner, id)).body.topics).toEqual([{ name: 'kept', max_id: kept[2] }]);
  });

  test('the empty topic by its display name; protected history: only what the administrator received', async () => {
    const open = await channel({ principals: [owner.id] });
    await insertMessages(stack, { streamId: open.id, senderId: owner.id, topic: '', count: 2, recipients: [owner.id] });
    expect((await deleteTopic(owner, open.id, 'general chat')).body.complete).toBe(true);
    expect(await stack.db.message.count({ where: { stream_id: open.id } })).toBe(0);

    const secret = await channel({ invite_only: true, principals: [owner.id] });
    const unseen = await insertMessages(stack, {
      streamId: secret.id,
      senderId: owner.id,
      topic: 'plans',
      count: 2,
      recipients: [owner.id],
    });
    await owner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: secret.name }],
      principals: [admin.id, member.id],
    });
    const seen = await insertMessages(stack, {
      streamId: secret.id,
      senderId: owner.id,
      topic: 'plans',
      count: 2,
      recipients: [owner.id, admin.id, member.id],
    });
    await member.client.post('/api/v1/user_topics', { stream_id: secret.id, topic: 'plans', visibility_policy: 3 });
    const captured = await captureEvents(stack, async () => {
      expect((await deleteTopic(admin, secret.id, 'plans')).body.complete).toBe(true);
    });
    expect(
      (await stack.db.message.findMany({ where: { stream_id: secret.id }, select: { id: true } })).map((m) => m.id),
    ).toEqual(unseen);
    const [deletion] = ofType(captured, 'delete_message');
    expect(deletion.event.message_ids).toEqual(seen);
    // Protected history: only those who received them hear of it.
    expect(deletion.recipientIds).toEqual(sorted([owner.id, admin.id, member.id]));
    // The member received no other message of the topic: their row is reset.
    expect(await stack.db.userTopic.count({ where: { stream_id: secret.id } })).toBe(0);
  });
});

describe('a repeated request joins the running job', () => {
  let idle: Stack;
  let worker: RunningService | undefined;
  beforeAll(async () => {
    // No worker yet, and a short budget: requests answer complete: false.
    idle = await startStack({ services: ['channels'], env: { DELETE_TOPIC_BUDGET_MS: '300' } });
  });
  afterAll(async () => {
    await worker?.drain?.();
    await worker?.close();
    await idle?.close();
  });

  test('one job per topic; it finishes once a worker runs', async () => {
    const boss = await idle.createUser({ role: Role.ADMINISTRATOR });
    const name = uniqueName('slow');
    await boss.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }] });
    const streamId = (await idle.db.stream.findFirstOrThrow({ where: { name } })).id;
    await insertMessages(idle, { streamId, senderId: boss.id, topic: 'big', count: 120, recipients: [boss.id] });
    const request = () => boss.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: 'big' });
    expect((await request()).body).toEqual({ result: 'success', msg: '', complete: false });
    expect((await request()).body.complete).toBe(false);
    const queue = idle.deps.jobs.queue('delete-topic');
    const waiting = await queue.getJobs(['waiting', 'active', 'delayed']);
    expect(waiting).toHaveLength(1);
    expect(waiting[0].id).toMatch(new RegExp(`^delete-topic-${streamId}-[0-9a-f]{16}$`));
    expect(await idle.db.message.count({ where: { stream_id: streamId } })).toBe(120);

    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createService } = require('@teamchat/service-worker') as {
      createService: (deps: unknown) => Promise<RunningService>;
    };
    worker = await createService(idle.deps);
    let complete = false;
    for (let attempt = 0; attempt < 50 && !complete; attempt++) complete = (await request()).body.complete;
    expect(complete).toBe(true);
    expect(await idle.db.message.count({ where: { stream_id: streamId } })).toBe(0);
  });
});
