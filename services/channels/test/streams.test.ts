// Reading channels, archiving, default channels, channel folders, and the register state.
import { fetchInitialState, STATE_SECTIONS, type RegisterOptions } from '@teamchat/state';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import {
  type ApiResponse,
  captureEvents,
  expectError,
  ofType,
  type Params,
  validateSuccessResponse,
} from '@teamchat/testing';
import { Role } from '@teamchat/domain';
import { sorted, uniqueName } from './helpers';

let stack: Stack;
let owner: TestUser;
let admin: TestUser;
let member: TestUser;
let guest: TestUser;
let ids: { pub: number; priv: number; web: number; archived: number; hidden: number };
const names = {
  pub: uniqueName('pub'),
  priv: uniqueName('priv'),
  web: uniqueName('web'),
  archived: uniqueName('archived'),
  hidden: uniqueName('hidden'),
};

const create = async (by: TestUser, name: string, params: Params = {}) => {
  const res = await by.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name }], ...params });
  expect(res.status).toBe(200);
  return (await stack.db.stream.findFirstOrThrow({ where: { name } })).id;
};

beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  owner = await stack.createUser({ role: Role.OWNER });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
  member = await stack.createUser({ role: Role.MEMBER });
  guest = await stack.createUser({ role: Role.GUEST });
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
  ids = {
    pub: await create(owner, names.pub),
    priv: await create(owner, names.priv, { invite_only: true, principals: [owner.id, member.id] }),
    web: await create(owner, names.web, { is_web_public: true }),
    archived: await create(owner, names.archived),
    hidden: await create(owner, names.hidden, { invite_only: true }),
  };
  await owner.client.delete(`/api/v1/streams/${ids.archived}`);
});
afterAll(async () => stack?.close());

const listNames = async (user: TestUser, params: Params = {}) =>
  ((await user.client.get('/api/v1/streams', params)).body.streams as { name: string }[]).map((s) => s.name);

describe('GET /streams', () => {
  test('default: public channels and one’s subscriptions, sorted by name', async () => {
    expect(await listNames(member)).toEqual([names.priv, names.pub, names.web].sort());
    expect(await listNames(admin)).toEqual([names.pub, names.web].sort());
    // Guests: only what they are subscribed to, unless they ask for web-public channels.
    expect(await listNames(guest)).toEqual([]);
    expect(await listNames(guest, { include_web_public: true })).toEqual([names.web]);
  });

  test('include_all: every channel one can see exists; archived ones on request', async () => {
    expect(await listNames(admin, { include_all: true })).toEqual(
      [names.hidden, names.priv, names.pub, names.web].sort(),
    );
    expect(await listNames(member, { include_all: true })).toEqual([names.priv, names.pub, names.web].sort());
    expect(await listNames(owner, { include_all: true, exclude_archived: false })).toContain(names.archived);
    expect(await listNames(admin, { include_can_access_content: true })).toEqual([names.pub, names.web].sort());
    expect(await listNames(member, { include_public: false, include_subscribed: false })).toEqual([]);
  });

  test('include_default adds is_default', async () => {
    await admin.client.post('/api/v1/default_streams', { stream_id: ids.pub });
    const streams = (await member.client.get('/api/v1/streams', { include_default: true })).body.streams as {
      stream_id: number;
      is_default: boolean;
    }[];
    expect(streams.find((s) => s.stream_id === ids.pub)?.is_default).toBe(true);
    expect(streams.find((s) => s.stream_id === ids.web)?.is_default).toBe(false);
    await admin.client.delete('/api/v1/default_streams', { stream_id: ids.pub });
  });
});

describe('one channel', () => {
  test('GET /streams/{id} needs metadata access', async () => {
    const res = await admin.client.get(`/api/v1/streams/${ids.hidden}`);
    expect(res.body.stream).toMatchObject({
      stream_id: ids.hidden,
      name: names.hidden,
      invite_only: true,
      history_public_to_subscribers: false,
    });
    expectError(await member.client.get(`/api/v1/streams/${ids.hidden}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    expectError(await guest.client.get(`/api/v1/streams/${ids.pub}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    expect((await guest.client.get(`/api/v1/streams/${ids.web}`)).body.stream.is_web_public).toBe(true);
    expectError(await owner.client.get(`/api/v1/streams/${ids.archived}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
  });

  test('GET /streams/{id}/email_address: empty, as Zulip answers without an email gateway; content access needed', async () => {
    expect((await member.client.get(`/api/v1/streams/${ids.pub}/email_address`)).body).toEqual({
      result: 'success',
      msg: '',
      email: '',
    });
    expect(
      (await member.client.get(`/api/v1/streams/${ids.priv}/email_address`, { sender_id: member.id })).body.email,
    ).toBe('');
    expectError(
      await admin.client.get(`/api/v1/streams/${ids.hidden}/email_address`),
      400,
      'BAD_REQUEST',
      'Invalid channel ID',
    );
    expectError(
      await member.client.get(`/api/v1/streams/${ids.pub}/email_address`, { sender_id: 'me' }),
      400,
      'BAD_REQUEST',
      'sender_id is not valid JSON',
    );
  });

  test('GET /get_stream_id: by name, case-insensitively, with content access', async () => {
    expect((await member.client.get('/api/v1/get_stream_id', { stream: names.pub.toUpperCase() })).body.stream_id).toBe(
      ids.pub,
    );
    expect((await member.client.get('/api/v1/get_stream_id', { stream: names.priv })).body.stream_id).toBe(ids.priv);
    expectError(
      await admin.client.get('/api/v1/get_stream_id', { stream: names.hidden }),
      400,
      'BAD_REQUEST',
      `Invalid channel name '${names.hidden}'`,
    );
    expectError(
      await member.client.get('/api/v1/get_stream_id', { stream: 'nowhere' }),
      400,
      'BAD_REQUEST',
      "Invalid channel name 'nowhere'",
    );
    expectError(
      await member.client.get('/api/v1/get_stream_id', {}),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'stream' argument",
    );
  });
});

describe('DELETE /streams/{id}: archiving', () => {
  test('channel administrators archive; events to those who could see it; default status dropped', async () => {
    const name = uniqueName('doomed');
    const streamId = await create(member, name);
    await admin.client.post('/api/v1/default_streams', { stream_id: streamId });
    expectError(await guest.client.delete(`/api/v1/streams/${streamId}`), 400, 'BAD_REQUEST', 'Invalid channel ID');
    expectError(
      await member.client.delete(`/api/v1/streams/${ids.pub}`),
      400,
      'BAD_REQUEST',
      'You do not have permission to administer this channel.',
    );
    const events = await captureEvents(stack, async () => {
      expect((await member.client.delete(`/api/v1/streams/${streamId}`)).status).toBe(200);
    });
    const stream = await stack.db.stream.findUniqueOrThrow({ where: { id: streamId } });
    expect(stream).toMatchObject({ is_archived: true, is_default: false });
    // Subscriptions stay.
    expect(await stack.db.subscription.count({ where: { stream_id: streamId, active: true } })).toBe(1);
    expect(events.map((e) => `${e.event.type}:${e.event.op ?? ''}`)).toEqual([
      'default_streams:',
      'stream:update',
      'stream:delete',
    ]);
    expect(ofType(events, 'stream', 'update')[0]).toMatchObject({
      event: { property: 'is_archived', value: true, stream_id: streamId },
      recipientIds: sorted([owner.id, admin.id, member.id]),
    });
    expectError(
      await member.client.delete(`/api/v1/streams/${streamId}`),
      400,
      'BAD_REQUEST',
      'Channel is already deactivated',
    );
  });
});

describe('default channels', () => {
  test('POST/DELETE /default_streams: administrators, never private channels', async () => {
    expectError(
      await member.client.post('/api/v1/default_streams', { stream_id: ids.pub }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
    expectError(
      await owner.client.post('/api/v1/default_streams', { stream_id: ids.priv }),
      400,
      'BAD_REQUEST',
      'Private channels cannot be made default.',
    );
    const [event] = await captureEvents(stack, async () => {
      expect((await admin.client.post('/api/v1/default_streams', { stream_id: ids.web })).status).toBe(200);
    });
    expect(event).toMatchObject({
      event: { type: 'default_streams', default_streams: [ids.web] },
      recipientIds: sorted([owner.id, admin.id, member.id]),
    });
    expect((await admin.client.delete('/api/v1/default_streams', { stream_id: ids.web })).status).toBe(200);
    expect((await stack.db.stream.findUniqueOrThrow({ where: { id: ids.web } })).is_default).toBe(false);
  });
});

describe('channel folders', () => {
  test('create, list, update; administrators only; events to everyone', async () => {
    expectError(
      await member.client.post('/api/v1/channel_folders/create', { name: 'Frontend', description: '' }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
    let created!: ApiResponse;
    const [event] = await captureEvents(stack, async () => {
      created = await admin.client.post('/api/v1/channel_folders/create', {
        name: 'Frontend',
        description: 'UI *work*',
      });
    });
    const folderId = created.body.channel_folder_id;
    expect(typeof folderId).toBe('number');
    expect(event.event).toMatchObject({
      type: 'channel_folder',
      op: 'add',
      channel_folder: {
        id: folderId,
        name: 'Frontend',
        rendered_description: '<p>UI <em>work</em></p>',
        is_archived: false,
      },
    });
    expect(event.recipientIds).toEqual(sorted([owner.id, admin.id, member.id, guest.id]));
    expectError(
      await admin.client.post('/api/v1/channel_folders', { name: 'frontend', description: '' }),
      400,
      'BAD_REQUEST',
      'Channel folder name already in use',
    );
    expectError(
      await admin.client.post('/api/v1/channel_folders', { name: ' ', description: '' }),
      400,
      'BAD_REQUEST',
      "Channel folder name can't be empty.",
    );
    expectError(
      await admin.client.post('/api/v1/channel_folders', { name: 'f'.repeat(61), description: '' }),
      400,
      'BAD_REQUEST',
      'name is too long (limit: 60 characters)',
    );

    expect((await owner.client.patch(`/api/v1/streams/${ids.pub}`, { folder_id: folderId })).status).toBe(200);
    expectError(
      await admin.client.patch(`/api/v1/channel_folders/${folderId}`, { is_archived: true }),
      400,
      'BAD_REQUEST',
      'You need to remove all the channels from this folder to archive it.',
    );
    await owner.client.patch(`/api/v1/streams/${ids.pub}`, { folder_id: null });
    const updated = await captureEvents(stack, async () => {
      expect(
        (await admin.client.patch(`/api/v1/channel_folders/${folderId}`, { name: 'Web', is_archived: true })).status,
      ).toBe(200);
    });
    expect(updated[0].event).toEqual({
      type: 'channel_folder',
      op: 'update',
      channel_folder_id: folderId,
      data: { name: 'Web', is_archived: true },
    });
    expect((await member.client.get('/api/v1/channel_folders')).body.channel_folders).toEqual([]);
    const all = (await member.client.get('/api/v1/channel_folders', { include_archived: true })).body.channel_folders;
    expect(all).toEqual([
      expect.objectContaining({
        id: folderId,
        name: 'Web',
        description: 'UI *work*',
        creator_id: admin.id,
        is_archived: true,
      }),
    ]);
    expectError(
      await admin.client.patch('/api/v1/channel_folders/999999', { name: 'x' }),
      400,
      'BAD_REQUEST',
      'Invalid channel folder ID',
    );
    expectError(
      await member.client.patch(`/api/v1/channel_folders/${folderId}`, { name: 'x' }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
  });
});

describe('register state', () => {
  const options = (overrides: Partial<RegisterOptions> = {}): RegisterOptions => ({
    applyMarkdown: true,
    clientGravatar: true,
    includeSubscribers: true,
    narrow: [],
    allPublicStreams: false,
    capabilities: {},
    ...overrides,
  });
  const stateOf = async (user: TestUser, registerOptions: RegisterOptions) =>
    stack.db.$transaction(
      async (db) => {
        const realm = await db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
        const profile = await db.userProfile.findUniqueOrThrow({ where: { id: user.id } });
        const sections = STATE_SECTIONS.filter((section) =>
          [
            'subscription',
            'stream',
            'default_streams',
            'default_stream_groups',
            'user_topic',
            'muted_topics',
            'channel_folder',
          ].includes(section.eventType),
        );
        return fetchInitialState(sections, {
          db,
          realm,
          user: profile,
          options: registerOptions,
          scheme: 'http',
          serverSecret: 'test',
        });
      },
      { isolationLevel: 'RepeatableRead' },
    );

  test('subscriptions, unsubscribed, never_subscribed, streams: valid register state', async () => {
    const name = uniqueName('left');
    const leftId = await create(member, name);
    await member.client.delete('/api/v1/users/me/subscriptions', { subscriptions: [name] });
    await member.client.post('/api/v1/user_topics', { stream_id: ids.pub, topic: 'noise', visibility_policy: 1 });
    const state = await stateOf(member, options());
    validateSuccessResponse('POST', '/api/v1/register', 200, { result: 'success', msg: '', ...state });
    const idsOf = (list: unknown) => (list as { stream_id: number }[]).map((s) => s.stream_id).sort((a, b) => a - b);
    expect(idsOf(state.subscriptions)).toEqual([ids.priv]);
    expect(idsOf(state.unsubscribed)).toEqual([leftId]);
    expect(idsOf(state.never_subscribed)).toEqual(sorted([ids.pub, ids.web]));
    expect(idsOf(state.streams)).toEqual(sorted([ids.pub, ids.priv, ids.web, leftId]));
    expect((state.subscriptions as { subscribers: number[] }[])[0].subscribers).toEqual(sorted([owner.id, member.id]));
    expect(state.user_topics).toEqual([
      expect.objectContaining({ stream_id: ids.pub, topic_name: 'noise', visibility_policy: 1 }),
    ]);
    expect(state.muted_topics).toEqual([[names.pub, 'noise', expect.any(Number)]]);
    expect(state.realm_default_stream_groups).toEqual([]);
    expect(Array.isArray(state.realm_default_streams)).toBe(true);
    expect(Array.isArray(state.channel_folders)).toBe(true);

    const adminState = await stateOf(
      admin,
      options({ includeSubscribers: false, capabilities: { archived_channels: true } }),
    );
    validateSuccessResponse('POST', '/api/v1/register', 200, { result: 'success', msg: '', ...adminState });
    expect(idsOf(adminState.streams)).toEqual(expect.arrayContaining([ids.hidden, ids.archived]));
    expect((adminState.never_subscribed as Record<string, unknown>[]).every((s) => !('subscribers' in s))).toBe(true);
    const guestState = await stateOf(guest, options());
    expect(idsOf(guestState.streams)).toEqual([ids.web]);
  });
});
