// What a logged-out visitor ("spectator") reads over /json, as Zulip 10.2 answers an anonymous
// request (zerver/views/message_edit.py json_fetch_raw_message with
// zerver/lib/message.py access_web_public_message; zerver/lib/narrow.py's channels:web-public,
// get_web_public_streams_queryset): one message of a web-public channel, archived ones included,
// and nothing else, refused as unauthenticated whether or not the message exists.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

let stack: Stack;
let owner: TestUser;
const ids: Record<string, number> = {};

async function send(channelId: number, content: string): Promise<number> {
  const sent = await owner.client.post('/api/v1/messages', { type: 'stream', to: channelId, topic: 'news', content });
  expect(sent.status).toBe(200);
  return sent.body.id as number;
}

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels'] });
  owner = await stack.createUser({ fullName: 'Own Er', role: Role.OWNER });
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
  await stack.fixtureWritten();
  const open = await stack.createStream({ name: 'open', isWebPublic: true, subscribers: [owner.id] });
  const archived = await stack.createStream({ name: 'archived', isWebPublic: true, subscribers: [owner.id] });
  const publicOnly = await stack.createStream({ name: 'public only', subscribers: [owner.id] });
  ids.open = await send(open.id, 'In the **open**.');
  ids.archived = await send(archived.id, 'Before the archive.');
  ids.publicOnly = await send(publicOnly.id, 'Members only.');
  const other = await stack.createUser({ fullName: 'Oth Er' });
  const dm = await owner.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify([other.id]),
    content: 'Hi',
  });
  ids.direct = dm.body.id as number;
  expect((await owner.client.delete(`/api/v1/streams/${archived.id}`)).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

describe('GET /json/messages/{id} without a session', () => {
  test('a message of a web-public channel: rendered and raw, read', async () => {
    const answer = await stack.anonymous().get(`/json/messages/${ids.open}`);
    expect(answer.status).toBe(200);
    expect(answer.body.raw_content).toBe('In the **open**.');
    expect(answer.body.message).toMatchObject({
      id: ids.open,
      content: '<p>In the <strong>open</strong>.</p>',
      flags: ['read'],
      subject: 'news',
    });
    const raw = await stack.anonymous().get(`/json/messages/${ids.open}`, { apply_markdown: false });
    expect(raw.body.message.content).toBe('In the **open**.');
  });

  test('a message of an archived web-public channel too, as Zulip', async () => {
    const answer = await stack.anonymous().get(`/json/messages/${ids.archived}`);
    expect(answer.status).toBe(200);
    expect(answer.body.raw_content).toBe('Before the archive.');
  });

  test("a public channel's, a direct message, or no message: refused alike", async () => {
    for (const id of [ids.publicOnly, ids.direct, 999_999_999]) {
      expectError(await stack.anonymous().get(`/json/messages/${id}`), 401, 'UNAUTHORIZED');
    }
    // /api/v1 keeps to credentials, as Zulip's.
    expectError(await stack.anonymous().get(`/api/v1/messages/${ids.open}`), 401, 'UNAUTHORIZED');
  });

  test('refused where the organisation does not admit spectators', async () => {
    await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: false } });
    try {
      expectError(await stack.anonymous().get(`/json/messages/${ids.open}`), 401, 'UNAUTHORIZED');
    } finally {
      await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
    }
  });
});

describe('GET /json/messages without a session, narrowed to channels:web-public', () => {
  test('holds the archived web-public channels too, and no other', async () => {
    const answer = await stack.anonymous().get('/json/messages', {
      anchor: 'newest',
      num_before: 100,
      num_after: 0,
      narrow: JSON.stringify([{ operator: 'channels', operand: 'web-public' }]),
    });
    expect(answer.status).toBe(200);
    const fetched = (answer.body.messages as { id: number }[]).map((message) => message.id);
    expect(fetched).toEqual([ids.open, ids.archived]);
  });
});
