// The bot endpoints through the gateway (POST/GET /bots, PATCH/DELETE /bots/{id},
// POST /bots/{id}/api_key/regenerate): who may do what, Zulip's errors, the realm_bot events to
// the bot's owner and the administrators, register's realm_bots, and bots' keys kept sealed
// (docs/adr/0007): shown again to those who administer the bot, never stored in the clear.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { hashApiKey, openBotSecret, SystemGroup, type SystemGroupName } from '@teamchat/domain';
import { doIssueApiKey } from '@teamchat/service-users';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import {
  expectError,
  registerEventQueue,
  settleEvents,
  type EventQueue,
  type Params,
  type ReceivedEvent,
  webAppStateSchema,
} from '@teamchat/testing';
import { createCast, systemGroupId, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
let botDomain: string;
let localDir: string;
beforeAll(async () => {
  localDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-bots-'));
  stack = await startStack({
    services: ['events', 'channels', 'uploads', 'web'],
    env: { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: localDir },
  });
  cast = await createCast(stack, 'bots');
  botDomain = (await registerEventQueue(cast.member.client, { fetch_event_types: ['realm'] })).registration
    .realm_bot_domain;
});
afterAll(async () => {
  await stack?.close();
  await fs.promises.rm(localDir, { recursive: true, force: true });
});

const strip = (events: ReceivedEvent[]) => events.map(({ id: _id, ...event }) => event);

async function settled(queue: EventQueue): Promise<Record<string, any>[]> {
  await settleEvents(stack);
  return strip(await queue.drain());
}

async function realmBots(user: TestUser): Promise<Record<string, any>[]> {
  return (await registerEventQueue(user.client, { fetch_event_types: ['realm_bot'] })).registration.realm_bots;
}

/** An owner sets a realm permission to a system group (PATCH /realm, Zulip's {new: ...} form). */
async function setRealmPermission(name: string, group: SystemGroupName): Promise<void> {
  const response = await cast.owner.client.patch('/api/v1/realm', {
    [name]: JSON.stringify({ new: await systemGroupId(stack, group) }),
  });
  expect(response.body.result).toBe('success');
}

let shortNames = 0;
async function createBot(owner: TestUser, params: Params = {}) {
  const short = `b${++shortNames}`;
  const response = await owner.client.post('/api/v1/bots', { full_name: `Bot ${short}`, short_name: short, ...params });
  expect(response.body.result).toBe('success');
  return { ...response.body, email: `${short}-bot@${botDomain}`, short };
}

describe('POST /bots', () => {
  test('a member makes a generic bot: its key works, realm_user and realm_bot add, realm_bots shows the key', async () => {
    const ownerQueue = await registerEventQueue(cast.member.client, { event_types: ['realm_bot', 'realm_user'] });
    const adminQueue = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot'] });
    const moderatorQueue = await registerEventQueue(cast.moderator.client, { event_types: ['realm_bot'] });

    const response = await cast.member.client.post('/api/v1/bots', { full_name: 'Weather Bot', short_name: 'weather' });
    expect(response.status).toBe(200);
    const { user_id: botId, api_key: apiKey } = response.body;
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      user_id: expect.any(Number),
      api_key: expect.stringMatching(/^[A-Za-z0-9]{32}$/),
      avatar_url: expect.any(String),
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
    });
    const email = `weather-bot@${botDomain}`;
    const me = await stack.client({ email, apiKey }).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ user_id: botId, is_bot: true, email, full_name: 'Weather Bot' });

    const expectedBot = {
      email,
      user_id: botId,
      full_name: 'Weather Bot',
      bot_type: 1,
      is_active: true,
      api_key: apiKey,
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
      owner_id: cast.member.id,
      avatar_url: expect.any(String),
      services: [],
    };
    const ownerEvents = await settled(ownerQueue);
    expect(ownerEvents.find((event) => event.type === 'realm_user')).toMatchObject({
      op: 'add',
      person: { user_id: botId, is_bot: true, bot_type: 1, bot_owner_id: cast.member.id },
    });
    expect(ownerEvents.filter((event) => event.type === 'realm_bot')).toEqual([
      { type: 'realm_bot', op: 'add', bot: expectedBot },
    ]);
    expect(await settled(adminQueue)).toEqual([{ type: 'realm_bot', op: 'add', bot: expectedBot }]);
    expect(await settled(moderatorQueue)).toEqual([]);

    // Register: the owner and administrators see the bot with its key; other members do not see it.
    expect((await realmBots(cast.member)).find((bot) => bot.user_id === botId)).toEqual(expectedBot);
    expect((await realmBots(cast.admin)).find((bot) => bot.user_id === botId)).toEqual(expectedBot);
    expect((await realmBots(cast.moderator)).some((bot) => bot.user_id === botId)).toBe(false);

    // Stored: the key's hash, and the key sealed (not in the clear) for this bot only.
    const [row] = await stack.db.apiKey.findMany({ where: { user_profile_id: botId } });
    expect(row.key_hash).toBe(hashApiKey(apiKey));
    expect(row.sealed_key).not.toContain(apiKey);
    expect(openBotSecret(row.sealed_key!, botId, stack.deps.env.INTERNAL_JWT_SECRET)).toBe(apiKey);
    expect(openBotSecret(row.sealed_key!, botId + 1, stack.deps.env.INTERNAL_JWT_SECRET)).toBeNull();
    expect(openBotSecret(row.sealed_key!, botId, 'another server secret')).toBeNull();
  });

  test('an outgoing webhook bot: its service with a sealed token, shown in realm_bots', async () => {
    const bot = await createBot(cast.member, {
      bot_type: 3,
      payload_url: JSON.stringify('https://hooks.example.com/zulip'),
      interface_type: 2,
    });
    const [shown] = (await realmBots(cast.member)).filter((entry) => entry.user_id === bot.user_id);
    expect(shown.bot_type).toBe(3);
    expect(shown.services).toEqual([
      { base_url: 'https://hooks.example.com/zulip', interface: 2, token: expect.stringMatching(/^[A-Za-z0-9]{32}$/) },
    ]);
    const [service] = await stack.db.botService.findMany({ where: { user_profile_id: bot.user_id } });
    expect(service).toMatchObject({ name: bot.short, base_url: 'https://hooks.example.com/zulip', interface: 2 });
    expect(service.sealed_token).not.toContain(shown.services[0].token);
  });

  test('default channels by name; a private one makes the bot known to its owner only', async () => {
    const open = await stack.createStream({ name: 'bots open', subscribers: [cast.member.id] });
    await stack.createStream({ name: 'bots private', inviteOnly: true, subscribers: [cast.member.id] });
    const adminQueue = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot'] });
    const bot = await createBot(cast.member, {
      default_sending_stream: 'BOTS OPEN',
      default_events_register_stream: 'bots open',
      default_all_public_streams: true,
    });
    expect(bot).toMatchObject({
      default_sending_stream: open.name,
      default_events_register_stream: open.name,
      default_all_public_streams: true,
    });
    expect(await settled(adminQueue)).toMatchObject([{ type: 'realm_bot', op: 'add', bot: { user_id: bot.user_id } }]);

    const ownerQueue = await registerEventQueue(cast.member.client, { event_types: ['realm_bot'] });
    const privateBot = await createBot(cast.member, { default_sending_stream: 'bots private' });
    expect(await settled(ownerQueue)).toMatchObject([{ op: 'add', bot: { user_id: privateBot.user_id } }]);
    expect(await settled(adminQueue)).toEqual([]);
    // An administrator who cannot read it cannot name it.
    expectError(
      await cast.admin.client.post('/api/v1/bots', {
        full_name: 'Nosy Private',
        short_name: 'nosyprivate',
        default_sending_stream: 'bots private',
      }),
      400,
      'BAD_REQUEST',
      "Invalid channel name 'bots private'",
    );

    // Someone who cannot read a channel cannot name it.
    expectError(
      await cast.admin.client.post('/api/v1/bots', {
        full_name: 'Nosy',
        short_name: 'nosy',
        default_sending_stream: 'no such channel',
      }),
      400,
      'BAD_REQUEST',
      "Invalid channel name 'no such channel'",
    );
  });

  test("Zulip's refusals", async () => {
    const post = (user: TestUser, params: Params) =>
      user.client.post('/api/v1/bots', { full_name: 'Some Bot', short_name: 'some', ...params });
    expectError(await post(cast.member, { bot_type: 4 }), 400, 'BAD_REQUEST', 'Embedded bots are not enabled.');
    expectError(await post(cast.member, { short_name: '  ' }), 400, 'BAD_REQUEST', 'Bad name or username');
    expectError(await post(cast.member, { short_name: 'a b' }), 400, 'BAD_REQUEST', 'Bad name or username');
    expectError(await post(cast.member, { full_name: '' }), 400, 'BAD_REQUEST', 'Name too short!');
    expectError(await post(cast.member, { bot_type: 7 }), 400, 'BAD_REQUEST', 'Invalid bot type');
    expectError(await post(cast.member, { interface_type: 9 }), 400, 'BAD_REQUEST', 'Invalid interface type');
    expectError(
      await post(cast.member, { bot_type: 3, payload_url: JSON.stringify('not a url') }),
      400,
      'BAD_REQUEST',
      'payload_url is not a URL',
    );
    expectError(
      await post(cast.member, { bot_type: 2, service_name: 'github' }),
      400,
      'BAD_REQUEST',
      "Invalid integration 'github'.",
    );
    expectError(await post(cast.guest, {}), 400, 'BAD_REQUEST', 'Not allowed for guest users');
    expectError(await post(cast.bot, {}), 400, 'BAD_REQUEST', 'This endpoint does not accept bot requests.');
    expectError(
      await post(cast.member, { full_name: cast.admin.profile.full_name }),
      400,
      'BAD_REQUEST',
      'Name is already in use.',
    );
    const first = await createBot(cast.member);
    expectError(
      await cast.admin.client.post('/api/v1/bots', { full_name: 'Other Name', short_name: first.short }),
      400,
      'BAD_REQUEST',
      'Email is already in use.',
    );
  });

  test('can_create_bots_group and can_create_write_only_bots_group decide who makes which bot', async () => {
    await setRealmPermission('can_create_bots_group', SystemGroup.ADMINISTRATORS);
    try {
      expectError(
        await cast.member.client.post('/api/v1/bots', { full_name: 'Generic', short_name: 'generic' }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
      // Incoming webhooks only need the write-only permission (members by default).
      await createBot(cast.member, { bot_type: 2 });
      await createBot(cast.admin, { bot_type: 3 });
      await setRealmPermission('can_create_write_only_bots_group', SystemGroup.ADMINISTRATORS);
      expectError(
        await cast.member.client.post('/api/v1/bots', { full_name: 'Hook', short_name: 'hook', bot_type: 2 }),
        400,
        'BAD_REQUEST',
        'Insufficient permission',
      );
    } finally {
      await setRealmPermission('can_create_bots_group', SystemGroup.MEMBERS);
      await setRealmPermission('can_create_write_only_bots_group', SystemGroup.MEMBERS);
    }
  });
});

describe('GET /bots', () => {
  test("the requester's active bots with their keys", async () => {
    const owner = await stack.createUser({ email: 'bots-lister@example.com' });
    const first = await createBot(owner);
    const second = await createBot(owner, { default_all_public_streams: true });
    await createBot(cast.member);
    const response = await owner.client.get('/api/v1/bots');
    expect(response.body.bots).toEqual([
      {
        username: first.email,
        full_name: `Bot ${first.short}`,
        api_key: first.api_key,
        avatar_url: expect.any(String),
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
      },
      expect.objectContaining({ username: second.email, api_key: second.api_key, default_all_public_streams: true }),
    ]);
    await owner.client.delete(`/api/v1/bots/${first.user_id}`);
    expect((await owner.client.get('/api/v1/bots')).body.bots.map((bot: any) => bot.username)).toEqual([second.email]);
    expectError(await cast.guest.client.get('/api/v1/bots'), 400, 'BAD_REQUEST', 'Not allowed for guest users');
  });
});

describe('PATCH /bots/{bot_id}', () => {
  test('its owner renames it and sets its default channels: realm_user and realm_bot updates', async () => {
    const bot = await createBot(cast.member);
    const channel = await stack.createStream({ name: 'bots defaults', subscribers: [cast.member.id] });
    const adminQueue = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot', 'realm_user'] });

    const response = await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, {
      full_name: 'Renamed Bot',
      default_sending_stream: channel.name,
      default_events_register_stream: channel.name,
      default_all_public_streams: true,
    });
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      full_name: 'Renamed Bot',
      avatar_url: expect.any(String),
      service_interface: 1,
      service_payload_url: null,
      config_data: null,
      default_sending_stream: channel.name,
      default_events_register_stream: channel.name,
      default_all_public_streams: true,
      bot_owner: cast.member.email,
    });
    expect(await settled(adminQueue)).toEqual([
      { type: 'realm_user', op: 'update', person: { user_id: bot.user_id, full_name: 'Renamed Bot' } },
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, full_name: 'Renamed Bot' } },
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, default_sending_stream: channel.name } },
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, default_events_register_stream: channel.name } },
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, default_all_public_streams: true } },
    ]);
    // "" clears a default channel.
    const cleared = await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, { default_sending_stream: '' });
    expect(cleared.body.default_sending_stream).toBeNull();
    const [shown] = (await realmBots(cast.member)).filter((entry) => entry.user_id === bot.user_id);
    expect(shown).toMatchObject({
      full_name: 'Renamed Bot',
      default_sending_stream: null,
      default_events_register_stream: channel.name,
      default_all_public_streams: true,
    });
  });

  test('a new owner: realm_bot delete to the old, add to the new, update to administrators', async () => {
    const oldOwner = await stack.createUser({ email: 'bots-old-owner@example.com' });
    const newOwner = await stack.createUser({ email: 'bots-new-owner@example.com' });
    const bot = await createBot(oldOwner);
    const queues = {
      old: await registerEventQueue(oldOwner.client, { event_types: ['realm_bot'] }),
      new: await registerEventQueue(newOwner.client, { event_types: ['realm_bot'] }),
      admin: await registerEventQueue(cast.admin.client, { event_types: ['realm_bot'] }),
    };
    const response = await cast.admin.client.patch(`/api/v1/bots/${bot.user_id}`, { bot_owner_id: newOwner.id });
    expect(response.body.bot_owner).toBe(newOwner.email);
    expect(await settled(queues.old)).toEqual([{ type: 'realm_bot', op: 'delete', bot: { user_id: bot.user_id } }]);
    expect(await settled(queues.new)).toEqual([
      {
        type: 'realm_bot',
        op: 'add',
        bot: expect.objectContaining({ user_id: bot.user_id, owner_id: newOwner.id, api_key: bot.api_key }),
      },
    ]);
    expect(await settled(queues.admin)).toEqual([
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, owner_id: newOwner.id } },
    ]);
    // The old owner no longer administers it.
    expectError(
      await oldOwner.client.patch(`/api/v1/bots/${bot.user_id}`, { full_name: 'Mine Again' }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );

    const patch = (params: Params) => cast.admin.client.patch(`/api/v1/bots/${bot.user_id}`, params);
    expectError(await patch({ bot_owner_id: 999999 }), 400, 'BAD_REQUEST', 'Failed to change owner, no such user');
    expectError(
      await patch({ bot_owner_id: cast.bot.id }),
      400,
      'BAD_REQUEST',
      "Failed to change owner, bots can't own other bots",
    );
    const gone = await stack.createUser({ email: 'bots-gone@example.com' });
    await cast.admin.client.delete(`/api/v1/users/${gone.id}`);
    expectError(
      await patch({ bot_owner_id: gone.id }),
      400,
      'BAD_REQUEST',
      'Failed to change owner, user is deactivated',
    );
  });

  test("an outgoing webhook's service and a bot's configuration", async () => {
    const bot = await createBot(cast.member, { bot_type: 3, payload_url: JSON.stringify('https://a.example.com/') });
    const ownerQueue = await registerEventQueue(cast.member.client, { event_types: ['realm_bot'] });
    const response = await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, {
      service_payload_url: JSON.stringify('https://b.example.com/hook'),
      service_interface: 2,
    });
    expect(response.body).toMatchObject({ service_payload_url: 'https://b.example.com/hook', service_interface: 2 });
    const [event] = await settled(ownerQueue);
    expect(event).toEqual({
      type: 'realm_bot',
      op: 'update',
      bot: {
        user_id: bot.user_id,
        services: [{ base_url: 'https://b.example.com/hook', interface: 2, token: expect.any(String) }],
      },
    });
    expectError(
      await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, {
        service_payload_url: JSON.stringify('https://b.example.com/'),
        service_interface: 5,
      }),
      400,
      'BAD_REQUEST',
      'Invalid interface type',
    );
    const configured = await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, {
      config_data: JSON.stringify({ key: 'value' }),
    });
    expect(configured.body.config_data).toEqual({ key: 'value' });
    expect(await stack.db.botConfigData.findMany({ where: { bot_profile_id: bot.user_id } })).toMatchObject([
      { key: 'key', value: 'value' },
    ]);
  });

  test('who may: owners and administrators; roles by administrators; "No such bot"', async () => {
    const bot = await createBot(cast.member);
    expectError(
      await cast.moderator.client.patch(`/api/v1/bots/${bot.user_id}`, { full_name: 'X Bot' }),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    expectError(
      await cast.member.client.patch(`/api/v1/bots/${cast.admin.id}`, { full_name: 'X Bot' }),
      400,
      'BAD_REQUEST',
      'No such bot',
    );
    expectError(
      await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, { role: 200 }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization administrator',
    );
    const adminQueue = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot', 'realm_user'] });
    expect((await cast.admin.client.patch(`/api/v1/bots/${bot.user_id}`, { role: 300 })).status).toBe(200);
    // The role is the user's: realm_user says it, realm_bot has no such field.
    expect((await settled(adminQueue)).filter((event) => event.type !== 'user_group')).toEqual([
      { type: 'realm_user', op: 'update', person: { user_id: bot.user_id, role: 300 } },
    ]);
    expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: bot.user_id } })).role).toBe(300);
    expectError(
      await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, { full_name: cast.owner.profile.full_name }),
      400,
      'BAD_REQUEST',
      'Name is already in use.',
    );
    // The same name again is no change (the web app sends it unchanged).
    expect(
      (await cast.member.client.patch(`/api/v1/bots/${bot.user_id}`, { full_name: `Bot ${bot.short}` })).status,
    ).toBe(200);
  });
});

describe('POST /bots/{bot_id}/api_key/regenerate', () => {
  test('the old key stops, the new one works and reaches realm_bot and realm_bots', async () => {
    const bot = await createBot(cast.member);
    const oldClient = stack.client({ email: bot.email, apiKey: bot.api_key });
    expect((await oldClient.get('/api/v1/users/me')).status).toBe(200);
    const adminQueue = await registerEventQueue(cast.admin.client, { event_types: ['realm_bot'] });
    const response = await cast.admin.client.post(`/api/v1/bots/${bot.user_id}/api_key/regenerate`);
    const apiKey = response.body.api_key;
    expect(apiKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(apiKey).not.toBe(bot.api_key);
    expectError(await oldClient.get('/api/v1/users/me'), 401, 'UNAUTHORIZED');
    expect((await stack.client({ email: bot.email, apiKey }).get('/api/v1/users/me')).status).toBe(200);
    expect(await settled(adminQueue)).toEqual([
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, api_key: apiKey } },
    ]);
    expect((await realmBots(cast.member)).find((entry) => entry.user_id === bot.user_id)?.api_key).toBe(apiKey);
    expectError(
      await cast.moderator.client.post(`/api/v1/bots/${bot.user_id}/api_key/regenerate`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
  });
});

describe('DELETE /bots/{bot_id}', () => {
  test('deactivates it (realm_bot update), again is no change; reactivation checks the name', async () => {
    const bot = await createBot(cast.member);
    const botClient = stack.client({ email: bot.email, apiKey: bot.api_key });
    expect((await botClient.get('/api/v1/users/me')).status).toBe(200);
    expectError(
      await cast.moderator.client.delete(`/api/v1/bots/${bot.user_id}`),
      400,
      'BAD_REQUEST',
      'Insufficient permission',
    );
    const ownerQueue = await registerEventQueue(cast.member.client, { event_types: ['realm_bot'] });
    expect((await cast.member.client.delete(`/api/v1/bots/${bot.user_id}`)).body).toEqual({
      result: 'success',
      msg: '',
    });
    expectError(await botClient.get('/api/v1/users/me'), 401, 'USER_DEACTIVATED', 'Account is deactivated');
    expect(await settled(ownerQueue)).toEqual([
      { type: 'realm_bot', op: 'update', bot: { user_id: bot.user_id, is_active: false } },
    ]);
    expect((await cast.member.client.delete(`/api/v1/bots/${bot.user_id}`)).status).toBe(200);
    expect((await realmBots(cast.member)).find((entry) => entry.user_id === bot.user_id)?.is_active).toBe(false);

    // Another active user took its name meanwhile: reactivating it is refused.
    await cast.member.client.post('/api/v1/bots', { full_name: `Bot ${bot.short}`, short_name: `${bot.short}x` });
    expectError(
      await cast.member.client.post(`/api/v1/users/${bot.user_id}/reactivate`),
      400,
      'BAD_REQUEST',
      `There is already an active bot named "Bot ${bot.short}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
  });
});

describe('keys kept for bots only', () => {
  test('a bot\'s clients get its one key; a key never kept shows as "" until regenerated', async () => {
    const bot = await createBot(cast.member);
    // manage write-zuliprc for a bot writes the key it has instead of issuing another.
    expect(await doIssueApiKey(stack.deps, bot.user_id, 'manage write-zuliprc')).toBe(bot.api_key);
    expect(await stack.db.apiKey.count({ where: { user_profile_id: bot.user_id } })).toBe(1);
    // A human's keys are never kept.
    const human = await stack.createUser({ email: 'bots-human@example.com' });
    await doIssueApiKey(stack.deps, human.id, 'fetch_api_key');
    expect(await stack.db.apiKey.count({ where: { user_profile_id: human.id, sealed_key: { not: null } } })).toBe(0);

    // A bot whose key was never kept (made before keys were sealed): it still authenticates.
    await stack.db.apiKey.updateMany({ where: { user_profile_id: bot.user_id }, data: { sealed_key: null } });
    expect((await realmBots(cast.member)).find((entry) => entry.user_id === bot.user_id)?.api_key).toBe('');
    expect((await stack.client({ email: bot.email, apiKey: bot.api_key }).get('/api/v1/users/me')).status).toBe(200);
    const { api_key: apiKey } = (await cast.member.client.post(`/api/v1/bots/${bot.user_id}/api_key/regenerate`)).body;
    expect((await realmBots(cast.member)).find((entry) => entry.user_id === bot.user_id)?.api_key).toBe(apiKey);
  });
});

describe('avatars and body encodings', () => {
  /** A multipart body as the web app's FormData: text fields, then the files. */
  function multipart(fields: Record<string, string>, files: { filename: string; content: Buffer }[]) {
    const boundary = crypto.randomBytes(12).toString('hex');
    const chunks: Buffer[] = [];
    for (const [name, value] of Object.entries(fields)) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    }
    files.forEach((file, i) => {
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file-${i}"; filename="${file.filename}"\r\n`;
      chunks.push(Buffer.from(`${head}Content-Type: image/png\r\n\r\n`), file.content, Buffer.from('\r\n'));
    });
    chunks.push(Buffer.from(`--${boundary}--\r\n`));
    return { body: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
  }
  const png = () =>
    sharp({ create: { width: 40, height: 30, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();

  test('the web app creates a bot with its avatar (multipart), and changes it', async () => {
    const form = multipart({ full_name: 'Pictured Bot', short_name: 'pictured', bot_type: '1' }, [
      { filename: 'face.png', content: await png() },
    ]);
    const created = await cast.member.client.post('/api/v1/bots', {}, form);
    expect(created.status).toBe(200);
    expect(created.body.avatar_url).toMatch(/\/user_avatars\//);
    const row = await stack.db.userProfile.findUniqueOrThrow({ where: { id: created.body.user_id } });
    expect(row.avatar_source).toBe('U');
    const [shown] = (await realmBots(cast.member)).filter((entry) => entry.user_id === created.body.user_id);
    expect(shown.avatar_url).toBe(created.body.avatar_url);
    const avatar = await stack.anonymous().get(created.body.avatar_url, {}, { validate: false });
    expect(avatar.status).toBe(200);

    const changed = await cast.member.client.patch(
      `/api/v1/bots/${created.body.user_id}`,
      {},
      multipart({ full_name: 'Pictured Bot' }, [{ filename: 'other.png', content: await png() }]),
    );
    expect(changed.status).toBe(200);
    expect(changed.body.avatar_url).toMatch(/\/user_avatars\//);
    expect(changed.body.avatar_url).not.toBe(created.body.avatar_url);

    const two = multipart({ full_name: 'Twice Bot', short_name: 'twice' }, [
      { filename: 'a.png', content: await png() },
      { filename: 'b.png', content: await png() },
    ]);
    expectError(
      await cast.member.client.post('/api/v1/bots', {}, two),
      400,
      'BAD_REQUEST',
      'You may only upload one file at a time',
    );
    expect(await stack.db.userProfile.count({ where: { full_name: 'Twice Bot' } })).toBe(0);
  });

  test('JSON bodies as urlencoded ones; a malformed one is refused', async () => {
    const created = await cast.member.client.post(
      '/api/v1/bots',
      { full_name: 'Json Bot', short_name: 'json', default_all_public_streams: true },
      { encoding: 'json' },
    );
    expect(created.body).toMatchObject({ result: 'success', default_all_public_streams: true });
    const renamed = await cast.member.client.patch(
      `/api/v1/bots/${created.body.user_id}`,
      { full_name: 'Json Bot Renamed' },
      { encoding: 'json' },
    );
    expect(renamed.body.full_name).toBe('Json Bot Renamed');
    expectError(
      await cast.member.client.post('/api/v1/bots', {}, { body: '{', headers: { 'content-type': 'application/json' } }),
      400,
      'INVALID_JSON',
      'Malformed JSON',
    );
  });
});

test("register's realm_bots, with bots of every kind made above, parses as the web app's state_data", async () => {
  for (const user of [cast.admin, cast.member]) {
    const bots = await realmBots(user);
    expect(bots.some((bot) => bot.bot_type === 3 && bot.services.length === 1)).toBe(true);
    const parsed = webAppStateSchema.shape.realm_bots.safeParse(bots);
    expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
  }
});

test("the web app's own requests: /json/bots with the session cookie, the form's CSRF token and FormData", async () => {
  const password = 'bots-session-password';
  const person = await stack.createUser({ email: 'bots-browser@example.com', password });
  const { browser, csrfToken } = await stack.sessionClient(person, password);

  const created = await browser.post(
    '/json/bots',
    { csrfmiddlewaretoken: csrfToken, bot_type: '1', full_name: 'Browser Bot', short_name: 'browser' },
    { encoding: 'multipart' },
  );
  expect(created.body).toMatchObject({ msg: '', result: 'success', user_id: expect.any(Number) });
  const bots = await browser.get('/json/bots');
  expect(bots.body.bots).toEqual([
    expect.objectContaining({ full_name: 'Browser Bot', api_key: created.body.api_key }),
  ]);
  const edited = await browser.patch(
    `/json/bots/${created.body.user_id}`,
    { csrfmiddlewaretoken: csrfToken, full_name: 'Browser Bot 2', role: JSON.stringify(400) },
    { encoding: 'multipart' },
  );
  expect(edited.body).toMatchObject({ result: 'success', full_name: 'Browser Bot 2' });
  expect((await browser.delete(`/json/bots/${created.body.user_id}`)).body.result).toBe('success');
});
