// Drafts: create, list, edit, delete, every validation rule, and the drafts events.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type ApiResponse, captureEvents, expectError } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let general: { id: number };
let secret: { id: number };

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  carol = await stack.createUser({ fullName: 'Carol King' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id] });
  secret = await stack.createStream({ name: 'secret', creatorId: bob.id, subscribers: [bob.id], inviteOnly: true });
});
afterAll(() => stack.close());

const create = (user: TestUser, drafts: unknown) =>
  user.client.post('/api/v1/drafts', { drafts: typeof drafts === 'string' ? drafts : JSON.stringify(drafts) });

describe('drafts', () => {
  test('create (server-set id and timestamp), list, and the add event', async () => {
    const before = Math.floor(Date.now() / 1000);
    let response!: ApiResponse;
    const captured = await captureEvents(stack, async () => {
      response = await create(alice, [
        { type: 'stream', to: [general.id], topic: 'plans', content: 'Let us plan' },
        {
          type: 'private',
          to: [carol.id, bob.id, alice.id],
          topic: 'ignored',
          content: 'group note',
          timestamp: 1_595_479_019,
        },
        { type: '', to: [], topic: '', content: 'unaddressed' },
      ]);
    });
    expect(response.status).toBe(200);
    expect(response.body.ids).toHaveLength(3);
    const [streamId, groupId, looseId] = response.body.ids;

    const listed = await alice.client.get('/api/v1/drafts');
    expect(listed.body.count).toBe(3);
    expect(listed.body.drafts).toEqual([
      {
        id: groupId,
        type: 'private',
        to: [bob.id, carol.id].sort((a, b) => a - b),
        topic: '',
        content: 'group note',
        timestamp: 1_595_479_019,
      },
      {
        id: streamId,
        type: 'stream',
        to: [general.id],
        topic: 'plans',
        content: 'Let us plan',
        timestamp: expect.any(Number),
      },
      { id: looseId, type: '', to: [], topic: '', content: 'unaddressed', timestamp: expect.any(Number) },
    ]);
    expect(listed.body.drafts[1].timestamp).toBeGreaterThanOrEqual(before);

    const [event] = captured;
    expect(event.recipientIds).toEqual([alice.id]);
    expect(event.event).toEqual({ type: 'drafts', op: 'add', drafts: expect.arrayContaining(listed.body.drafts) });
    expect(event.event.drafts).toHaveLength(3);
    // Nobody else sees them.
    expect((await bob.client.get('/api/v1/drafts')).body).toMatchObject({ count: 0, drafts: [] });
  });

  test('direct drafts to oneself and 1:1 normalise like conversations', async () => {
    const response = await create(alice, [
      { type: 'private', to: [alice.id], topic: '', content: 'self' },
      { type: 'private', to: [alice.id, bob.id], topic: '', content: 'one to one' },
      { type: 'private', to: [], topic: '', content: 'nobody yet' },
    ]);
    const drafts = await stack.db.draft.findMany({ where: { id: { in: response.body.ids } }, orderBy: { id: 'asc' } });
    expect(drafts.map((draft) => [draft.type, draft.to])).toEqual([
      ['private', [alice.id]],
      ['private', [bob.id]],
      ['', []],
    ]);
  });

  test('edit: replaces the draft and sends the update event', async () => {
    const [id] = (await create(alice, [{ type: '', to: [], topic: '', content: 'first words' }])).body.ids;
    const draft = {
      type: 'stream',
      to: [general.id],
      topic: 'moved',
      content: 'better words',
      timestamp: 1_700_000_000,
    };
    const [event] = await captureEvents(stack, async () => {
      const response = await alice.client.patch(`/api/v1/drafts/${id}`, { draft: JSON.stringify(draft) });
      expect(response.body).toEqual({ result: 'success', msg: '' });
    });
    expect(event.event).toEqual({ type: 'drafts', op: 'update', draft: { id, ...draft } });
    expect(event.recipientIds).toEqual([alice.id]);
    expectError(
      await bob.client.patch(`/api/v1/drafts/${id}`, { draft: JSON.stringify(draft) }),
      404,
      'BAD_REQUEST',
      'Draft does not exist',
    );
    expectError(
      await alice.client.patch('/api/v1/drafts/999999', { draft: JSON.stringify(draft) }),
      404,
      'BAD_REQUEST',
      'Draft does not exist',
    );
    expectError(
      await alice.client.patch(`/api/v1/drafts/${id}`, {}),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'draft' argument",
    );
  });

  test("delete: only one's own, with the remove event", async () => {
    const [id] = (await create(alice, [{ type: '', to: [], topic: '', content: 'to delete' }])).body.ids;
    expectError(await bob.client.delete(`/api/v1/drafts/${id}`), 404, 'BAD_REQUEST', 'Draft does not exist');
    const [event] = await captureEvents(stack, async () => {
      expect((await alice.client.delete(`/api/v1/drafts/${id}`)).status).toBe(200);
    });
    expect(event.event).toEqual({ type: 'drafts', op: 'remove', draft_id: id });
    expect(await stack.db.draft.findUnique({ where: { id } })).toBeNull();
    expectError(await alice.client.delete(`/api/v1/drafts/${id}`), 404, 'BAD_REQUEST', 'Draft does not exist');
  });

  test('validation', async () => {
    const bad = async (draft: Record<string, unknown>, msg: string) =>
      expectError(await create(alice, [draft]), 400, 'BAD_REQUEST', msg);
    const valid = { type: 'stream', to: [general.id], topic: 't', content: 'c' };
    await bad({ ...valid, id: 5 }, 'Argument "id" at drafts[0] is unexpected');
    await bad({ ...valid, type: 'channel' }, 'Invalid drafts[0]["type"]');
    await bad({ ...valid, to: general.id }, 'drafts[0]["to"] is not a list');
    await bad({ ...valid, to: [general.id, general.id] }, 'Must specify exactly 1 channel ID for channel messages');
    await bad({ ...valid, to: [] }, 'Must specify exactly 1 channel ID for channel messages');
    await bad({ ...valid, to: [secret.id] }, 'Invalid channel ID');
    await bad({ ...valid, content: '   ' }, 'drafts[0]["content"] cannot be blank');
    await bad({ ...valid, content: 'a\u0000b' }, 'Message must not contain null bytes');
    await bad({ ...valid, topic: 'a\u0000b' }, 'Topic must not contain null bytes');
    await bad({ ...valid, timestamp: -1 }, 'Timestamp must not be negative.');
    await bad({ type: 'private', to: [999_999], topic: '', content: 'c' }, 'Invalid user ID 999999');
    const { topic: _omitted, ...withoutTopic } = valid;
    await bad(withoutTopic, "drafts[0] is missing the 'topic' key");
    expectError(await create(alice, '{"type": "stream"}'), 400, 'BAD_REQUEST', 'drafts is not a list');
    expectError(
      await alice.client.post('/api/v1/drafts', {}),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'drafts' argument",
    );
    const long = await create(alice, [{ ...valid, topic: 'z'.repeat(80) }]);
    expect((await stack.db.draft.findUniqueOrThrow({ where: { id: long.body.ids[0] } })).topic).toBe(
      `${'z'.repeat(57)}...`,
    );
  });

  test('with synchronisation turned off, every draft endpoint refuses', async () => {
    const private_ = await stack.createUser();
    await stack.db.userProfile.update({
      where: { id: private_.id },
      data: { settings: { enable_drafts_synchronization: false } },
    });
    const msg = 'User has disabled synchronizing drafts.';
    expectError(await private_.client.get('/api/v1/drafts'), 400, 'BAD_REQUEST', msg);
    expectError(await create(private_, [{ type: '', to: [], topic: '', content: 'x' }]), 400, 'BAD_REQUEST', msg);
    expectError(
      await private_.client.patch('/api/v1/drafts/1', {
        draft: JSON.stringify({ type: '', to: [], topic: '', content: 'x' }),
      }),
      400,
      'BAD_REQUEST',
      msg,
    );
    expectError(await private_.client.delete('/api/v1/drafts/1'), 400, 'BAD_REQUEST', msg);
  });
});
