// One request's work is bounded, and malformed values are refused with a 4xx before they reach
// PostgreSQL (no 500, no database error in the answer).
import { BODY_LIMITS, LIST_LIMITS } from '@teamchat/core';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError, type ApiResponse } from '@teamchat/testing';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;
let general: { id: number; name: string };

const TOO_LARGE_IDS = [2 ** 31, 2 ** 53];

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  general = await stack.createStream({ name: 'general', creatorId: alice.id, subscribers: [alice.id, bob.id] });
});
afterAll(() => stack.close());

const post = (path: string, params: Record<string, unknown>, encoding?: 'multipart') =>
  alice.client.post(`/api/v1${path}`, params as never, encoding ? { encoding } : {});
const flag = (messages: unknown, extra: Record<string, unknown> = {}) =>
  post('/messages/flags', { messages, op: 'add', flag: 'starred', ...extra });
const narrowOf = (operator: string, operand: unknown) => JSON.stringify([{ operator, operand }]);
const fetchNarrow = (narrow: string) =>
  alice.client.get('/api/v1/messages', { anchor: 'newest', num_before: 5, narrow });
const ids = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
const refused = (response: ApiResponse, msg: string, code = 'BAD_REQUEST') => expectError(response, 400, code, msg);
const tooLarge = (response: ApiResponse) => expectError(response, 413, 'BAD_REQUEST', 'Request body too large');

describe('a list parameter cannot occupy the messages service', () => {
  test('POST /messages/flags with a million ids is refused by its size, unread', async () => {
    tooLarge(await flag(ids(1_000_000)));
  });

  test("POST /messages/flags takes Zulip's 5,000 ids at most", async () => {
    refused(await flag(ids(LIST_LIMITS.messagesPerFlagUpdate + 1)), 'messages is too long (limit: 5000 items)');
    expect((await flag(ids(LIST_LIMITS.messagesPerFlagUpdate), { flag: 'read' })).status).toBe(200);
  });

  test('the body limits: 256 KiB for a list of ids, 1 MiB for the rest of the service', async () => {
    const padded = (bytes: number) => 'x'.repeat(bytes);
    tooLarge(await flag([1], { pad: padded(BODY_LIMITS.idList) }));
    const message = { type: 'stream', to: general.id, topic: 't' };
    tooLarge(await post('/messages', { ...message, content: padded(BODY_LIMITS.messagesAndChannels) }));
    // A multipart body is measured whole (multer alone bounds each field).
    const twoFields = { a: padded(600_000), b: padded(600_000) };
    tooLarge(await post('/messages', { ...message, content: 'hi', ...twoFields }, 'multipart'));
    // Zulip truncates a long message rather than refusing it: 100,000 characters still arrive.
    expect((await post('/messages', { ...message, content: padded(100_000) })).status).toBe(200);
  });

  test("GET /messages takes 5,000 message_ids at most, in Zulip's words", async () => {
    // In a body: 5,001 ids are more than a query string may carry.
    const params = { message_ids: JSON.stringify(ids(LIST_LIMITS.messagesPerFetch + 1)) };
    const response = await alice.client.get('/api/v1/messages', params, { encoding: 'form' });
    refused(response, 'Too many messages requested (maximum 5000).');
  });

  test('a narrow has 100 terms at most, a dm operand 1,000 users', async () => {
    const terms = Array.from({ length: LIST_LIMITS.narrowTerms + 1 }, () => ({ operator: 'search', operand: 'x' }));
    refused(await fetchNarrow(JSON.stringify(terms)), 'narrow is too long (limit: 100 items)');
    const users = ids(LIST_LIMITS.directMessageRecipients + 1);
    refused(await fetchNarrow(narrowOf('dm', users)), 'operand is too long (limit: 1000 items)');
  });
});

describe('ids past the id columns are refused before PostgreSQL', () => {
  test.each(TOO_LARGE_IDS)('POST /messages/flags with id %d', async (id) => {
    refused(await flag([id]), 'messages[0] is too large');
  });

  test.each(TOO_LARGE_IDS)('message recipients with id %d', async (id) => {
    refused(await post('/messages', { type: 'direct', to: JSON.stringify([id]), content: 'x' }), 'to[0] is too large');
    const toChannel = { type: 'stream', to: JSON.stringify(id), topic: 't', content: 'x' };
    refused(await post('/messages', toChannel), 'to is too large');
    refused(await post('/typing', { op: 'start', to: JSON.stringify([id]) }), 'to[0] is too large');
    const draft = { type: 'private', to: [id], topic: '', content: 'x' };
    refused(await post('/drafts', { drafts: JSON.stringify([draft]) }), 'drafts[0]["to"][0] is too large');
    const fetched = await alice.client.get('/api/v1/messages', { message_ids: JSON.stringify([id]) });
    refused(fetched, 'message_ids[0] is too large');
  });

  test.each(TOO_LARGE_IDS)("narrows by id %d name nothing, in Zulip's words", async (id) => {
    const unknown = (desc: string) => `Invalid narrow operator: ${desc}`;
    for (const operator of ['channel', 'stream']) {
      refused(await fetchNarrow(narrowOf(operator, id)), unknown(`unknown channel ${id}`), 'BAD_NARROW');
    }
    for (const operator of ['sender', 'dm-including', 'group-pm-with']) {
      refused(await fetchNarrow(narrowOf(operator, id)), unknown(`unknown user ${id}`), 'BAD_NARROW');
    }
    refused(await fetchNarrow(narrowOf('dm', [id])), unknown(`unknown user in [${id}]`), 'BAD_NARROW');
    const range = { anchor: 'newest', num_before: 1, num_after: 0, op: 'add', flag: 'read' };
    const flagged = await post('/messages/flags/narrow', { ...range, narrow: narrowOf('sender', id) });
    refused(flagged, unknown(`unknown user ${id}`), 'BAD_NARROW');
  });

  test('a dm narrow of real users still matches (ids and emails, one lookup each)', async () => {
    await post('/messages', { type: 'direct', to: JSON.stringify([bob.id]), content: 'to bob' });
    const byId = await fetchNarrow(narrowOf('dm', [bob.id]));
    const byEmail = await fetchNarrow(narrowOf('dm', bob.email.toUpperCase()));
    expect(byId.body.messages.map((m: { content: string }) => m.content)).toEqual(['<p>to bob</p>']);
    expect(byEmail.body.messages).toEqual(byId.body.messages);
  });
});

describe('text PostgreSQL cannot store is refused before it', () => {
  test.each(['search', 'topic', 'channel', 'sender', 'dm'])('NUL in a %s operand', async (operator) => {
    refused(await fetchNarrow(narrowOf(operator, 'a\u0000b')), 'narrow[0]["operand"] contains NULL (0x00) characters.');
  });

  test('NUL in the emails of a direct message', async () => {
    const sent = await post('/messages', { type: 'direct', to: 'a\u0000b@example.com', content: 'x' });
    refused(sent, 'to[0] contains NULL (0x00) characters.');
  });

  test("NUL in a draft's content keeps Zulip's own words", async () => {
    const draft = { type: 'stream', to: [general.id], topic: 't', content: 'a\u0000b' };
    refused(await post('/drafts', { drafts: JSON.stringify([draft]) }), 'Message must not contain null bytes');
  });

  test('a timestamp past what a date can hold', async () => {
    const draft = { type: 'stream', to: [general.id], topic: 't', content: 'x', timestamp: 1e300 };
    refused(await post('/drafts', { drafts: JSON.stringify([draft]) }), 'drafts[0]["timestamp"] is too large');
  });

  test('timestamps past year 9999 (what PostgreSQL, JavaScript and Python dates all hold) are refused, not a 500', async () => {
    const future = Math.floor(Date.now() / 1000) + 3600;
    for (const timestamp of [1e12, 253402300800, 8.64e12 - 1]) {
      const draft = { type: 'stream', to: [general.id], topic: 't', content: 'x', timestamp };
      refused(await post('/drafts', { drafts: JSON.stringify([draft]) }), 'drafts[0]["timestamp"] is too large');
      const scheduled = await post('/scheduled_messages', {
        type: 'stream',
        to: general.id,
        topic: 't',
        content: 'later',
        scheduled_delivery_timestamp: timestamp,
      });
      refused(scheduled, 'scheduled_delivery_timestamp is too large');
    }
    // The last second of year 9999 is a draft's time; a delivery within the hour still schedules.
    const lastSecond = { type: 'stream', to: [general.id], topic: 't', content: 'x', timestamp: 253402300799 };
    expect((await post('/drafts', { drafts: JSON.stringify([lastSecond]) })).status).toBe(200);
    const soon = { type: 'stream', to: general.id, topic: 't', content: 'soon', scheduled_delivery_timestamp: future };
    expect((await post('/scheduled_messages', soon)).status).toBe(200);
  });
});
