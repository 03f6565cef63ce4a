// GET/PUT/DELETE /bot_storage through the gateway (Zulip's zerver/views/storage.py and
// zerver/lib/bot_storage.py): each caller's own string keys and values, at most
// USER_STATE_SIZE_LIMIT characters of both, Zulip's errors, nothing changed by a refused request.
// Zulip checks no bot type there (its test_service_bot_system.py stores through /json/bot_storage
// as a human), so a human caller has storage of its own, apart from its bots'.
import { USER_STATE_SIZE_LIMIT } from '@teamchat/service-users';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, expectError } from '@teamchat/testing';
import { createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['web'] });
  cast = await createCast(stack, 'botstorage');
});
afterAll(() => stack?.close());

let bots = 0;
const newBot = () =>
  stack.createUser({ email: `storage-bot${++bots}@example.com`, botType: 1, botOwnerId: cast.member.id });

const put = (client: ApiClient, storage: Record<string, unknown>) =>
  client.request('PUT', '/api/v1/bot_storage', { storage: JSON.stringify(storage) });
const get = (client: ApiClient, keys?: string[]) =>
  client.get('/api/v1/bot_storage', keys ? { keys: JSON.stringify(keys) } : {});
const remove = (client: ApiClient, keys?: string[]) =>
  client.delete('/api/v1/bot_storage', keys ? { keys: JSON.stringify(keys) } : {});

async function storedRows(user: TestUser) {
  const rows = await stack.db.botStorageData.findMany({ where: { bot_profile_id: user.id }, orderBy: { key: 'asc' } });
  return rows.map(({ key, value }) => [key, value]);
}

test('a bot stores, updates, reads (all keys or some) and removes its entries', async () => {
  const bot = await newBot();
  expect((await get(bot.client)).body).toEqual({ result: 'success', msg: '', storage: {} });

  const initial = { 'key 1': 'value 1', 'key 2': 'value 2', 'key 3': 'value 3' };
  expect((await put(bot.client, initial)).body).toEqual({ result: 'success', msg: '' });
  expect((await get(bot.client, ['key 3', 'key 1'])).body.storage).toEqual({ 'key 3': 'value 3', 'key 1': 'value 1' });
  expect((await get(bot.client)).body.storage).toEqual(initial);

  // A key already stored gets the new value; a new one is added.
  expect((await put(bot.client, { 'key 1': 'new value', 'key 4': 'value 4' })).status).toBe(200);
  const updated = { ...initial, 'key 1': 'new value', 'key 4': 'value 4' };
  expect((await get(bot.client)).body.storage).toEqual(updated);
  expect(await storedRows(bot)).toEqual(Object.entries(updated).sort());

  expect((await remove(bot.client, ['key 1', 'key 2'])).body).toEqual({ result: 'success', msg: '' });
  expect((await get(bot.client)).body.storage).toEqual({ 'key 3': 'value 3', 'key 4': 'value 4' });

  // Without keys, everything goes.
  expect((await remove(bot.client)).status).toBe(200);
  expect((await get(bot.client)).body.storage).toEqual({});
  expect(await storedRows(bot)).toEqual([]);
});

test("Zulip's errors: a key not stored (nothing removed), keys not JSON, a value not a string", async () => {
  const bot = await newBot();
  await put(bot.client, { a: '1', b: '2' });

  expectError(await get(bot.client, ['a', 'nonexistent key']), 400, 'BAD_REQUEST', 'Key does not exist.');
  expectError(await remove(bot.client, ['a', 'nonexistent key']), 400, 'BAD_REQUEST', 'Key does not exist.');
  expect(await storedRows(bot)).toEqual([
    ['a', '1'],
    ['b', '2'],
  ]);

  const notJson = await bot.client.get('/api/v1/bot_storage', { keys: 'a, b' });
  expectError(notJson, 400, 'BAD_REQUEST', 'keys is not valid JSON');
  expectError(await put(bot.client, { foo: [1, 2, 3] }), 400, 'BAD_REQUEST', 'storage["foo"] is not a string');
  expectError(
    await bot.client.request('PUT', '/api/v1/bot_storage', {}),
    400,
    'REQUEST_VARIABLE_MISSING',
    "Missing 'storage' argument",
  );
  expect(await storedRows(bot)).toEqual([
    ['a', '1'],
    ['b', '2'],
  ]);
});

test('the size limit counts the characters of keys and values; a request over it stores nothing', async () => {
  const bot = await newBot();
  // Ten entries of a two-character key and a value filling the rest of a tenth of the limit
  // (one request each, under the request body limit): exactly USER_STATE_SIZE_LIMIT characters.
  const valueLength = USER_STATE_SIZE_LIMIT / 10 - 2;
  for (let i = 0; i < 10; i++) {
    const response = await put(bot.client, { [`k${i}`]: String(i).repeat(valueLength) });
    expect(response.body).toEqual({ result: 'success', msg: '' });
  }

  // Three characters over ("z" and "ab"), with an entry that would fit on its own: neither is stored.
  const over = await put(bot.client, { z: 'ab' });
  expectError(
    over,
    400,
    'BAD_REQUEST',
    `Request exceeds storage limit by 3 characters. The limit is ${USER_STATE_SIZE_LIMIT} characters.`,
  );
  const [{ count, size }] = await stack.db.$queryRaw<{ count: number; size: number }[]>`
    SELECT count(*)::int AS count, sum(length(key) + length(value))::int AS size
    FROM bot_storage_data WHERE bot_profile_id = ${bot.id}`;
  expect({ count, size }).toEqual({ count: 10, size: USER_STATE_SIZE_LIMIT });

  // Replacing a value counts only the difference: a shorter one fits, and then "z" does too.
  expect((await put(bot.client, { k0: 'short' })).status).toBe(200);
  expect((await put(bot.client, { z: 'ab' })).status).toBe(200);
  expect((await get(bot.client, ['k0', 'z'])).body.storage).toEqual({ k0: 'short', z: 'ab' });
});

test("another bot, or the bot's human owner, sees only its own storage", async () => {
  const bot = await newBot();
  const other = await newBot();
  await put(bot.client, { 'some key': 'a value' });

  expect((await get(other.client)).body.storage).toEqual({});
  expectError(await get(other.client, ['some key']), 400, 'BAD_REQUEST', 'Key does not exist.');
  expectError(await remove(other.client, ['some key']), 400, 'BAD_REQUEST', 'Key does not exist.');
  expect((await remove(other.client)).status).toBe(200);

  // The same key in another bot's storage is another entry.
  await put(other.client, { 'some key': 'another value' });
  expect((await get(bot.client, ['some key'])).body.storage).toEqual({ 'some key': 'a value' });
  expect((await get(other.client, ['some key'])).body.storage).toEqual({ 'some key': 'another value' });

  // A human caller is not refused (as in Zulip): its storage is its own, apart from its bot's.
  const human = cast.member;
  expect((await get(human.client)).body.storage).toEqual({});
  await put(human.client, { 'some key': 'the owner value' });
  expect((await get(bot.client)).body.storage).toEqual({ 'some key': 'a value' });
  expect((await get(human.client)).body.storage).toEqual({ 'some key': 'the owner value' });
});

test("a deactivated bot keeps its storage; the rows go with the user row, as Zulip's cascade", async () => {
  const bot = await newBot();
  await put(bot.client, { kept: 'yes' });
  const deactivated = await cast.member.client.delete(`/api/v1/bots/${bot.id}`);
  expect(deactivated.status).toBe(200);
  expectError(await get(bot.client), 401, 'USER_DEACTIVATED');
  expect(await storedRows(bot)).toEqual([['kept', 'yes']]);

  // Zulip's BotStorageData.bot_profile is on_delete=CASCADE (zerver/models/bots.py).
  const [{ onDelete }] = await stack.db.$queryRaw<{ onDelete: string }[]>`
    SELECT confdeltype::text AS "onDelete" FROM pg_constraint WHERE conname = 'bot_storage_data_bot_profile_id_fkey'`;
  expect(onDelete).toBe('c');
});

test("the web app's /json/bot_storage with the session cookie", async () => {
  const password = 'bot-storage-session-password';
  const person = await stack.createUser({ email: 'bot-storage-browser@example.com', password });
  const { browser } = await stack.sessionClient(person, password);

  const stored = await browser.request('PUT', '/json/bot_storage', { storage: JSON.stringify({ web: 'app' }) });
  expect(stored.body).toEqual({ result: 'success', msg: '' });
  expect((await browser.get('/json/bot_storage', { keys: JSON.stringify(['web']) })).body.storage).toEqual({
    web: 'app',
  });
  expect((await browser.delete('/json/bot_storage')).status).toBe(200);
  expect(await storedRows(person)).toEqual([]);
});
