// The incoming-webhook framework through the gateway, as Zulip's webhook_view and
// check_send_webhook_message behave: who may post (the key in the URL or HTTP Basic; an
// incoming-webhook bot's key nowhere else), where the messages go, which events are wanted, and
// the answers for what an integration cannot read.

import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { createWebhookBot, newestMessageId, type WebhookBot } from './harness';

let stack: Stack;
let owner: TestUser;
let bot: WebhookBot;
let streamId: number;

const grafanaAlert = (status: 'firing' | 'resolved', alertname: string) =>
  JSON.stringify({
    alerts: [
      {
        status,
        labels: { alertname },
        annotations: {},
        startsAt: '2024-01-01T00:00:00Z',
        endsAt: '0001-01-01T00:00:00Z',
        generatorURL: '',
        silenceURL: '',
        fingerprint: 'f',
      },
    ],
  });

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  owner = await stack.createUser({ fullName: 'Bot Owner' });
  bot = await createWebhookBot(stack, owner);
  streamId = (await stack.createStream({ name: 'alerts', subscribers: [owner.id, bot.id] })).id;
});
afterAll(() => stack.close());

function post(path: string, body: string, options: { headers?: Record<string, string>; basic?: boolean } = {}) {
  const client = options.basic ? stack.client({ email: bot.email, apiKey: bot.apiKey }) : stack.anonymous();
  return client.request(
    'POST',
    path,
    {},
    {
      body,
      headers: { 'content-type': 'application/json', ...options.headers },
      validate: false,
    },
  );
}

async function messagesSince(id: number, viewer = owner) {
  const fetched = await viewer.client.get('/api/v1/messages', {
    anchor: id + 1,
    num_before: 0,
    num_after: 20,
    apply_markdown: false,
  });
  return fetched.body.messages as {
    type: string;
    subject: string;
    content: string;
    sender_id: number;
    display_recipient: any;
  }[];
}

const key = () => encodeURIComponent(bot.apiKey);

describe('authentication', () => {
  test('the key in the query string or HTTP Basic', async () => {
    const since = await newestMessageId(stack);
    expect((await post(`/api/v1/external/json?api_key=${key()}&stream=alerts`, '{"a": 1}')).body).toEqual({
      result: 'success',
      msg: '',
    });
    expect((await post('/api/v1/external/json?stream=alerts', '{"b": 2}', { basic: true })).status).toBe(200);
    const messages = await messagesSince(since);
    expect(messages.map((m) => [m.subject, m.content])).toEqual([
      ['JSON', '```json\n{\n  "a": 1\n}\n```'],
      ['JSON', '```json\n{\n  "b": 2\n}\n```'],
    ]);
    expect(messages.every((m) => m.sender_id === bot.id)).toBe(true);
  });

  test('no key, a wrong key: 401', async () => {
    const none = await post('/api/v1/external/json?stream=alerts', '{}');
    expect(none.status).toBe(401);
    const wrong = await post(`/api/v1/external/json?api_key=${'x'.repeat(32)}&stream=alerts`, '{}');
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ result: 'error', msg: 'Invalid API key' });
  });

  test("an incoming-webhook bot's key is refused elsewhere, in Zulip's words", async () => {
    const elsewhere = await stack.client({ email: bot.email, apiKey: bot.apiKey }).get('/api/v1/users/me');
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body).toMatchObject({
      result: 'error',
      msg: 'This API is not available to incoming webhook bots.',
    });
    const sending = await stack
      .client({ email: bot.email, apiKey: bot.apiKey })
      .post('/api/v1/messages', { type: 'stream', to: 'alerts', topic: 't', content: 'hi' });
    expect(sending.status).toBe(401);
  });

  test("a generic bot's key (and a person's, as Zulip) works on webhook URLs too", async () => {
    const generic = await owner.client.post('/api/v1/bots', {
      full_name: 'Generic',
      short_name: 'generic',
      bot_type: 1,
    });
    const since = await newestMessageId(stack);
    const answer = await post(
      `/api/v1/external/json?api_key=${encodeURIComponent(generic.body.api_key)}&stream=alerts`,
      '{"c": 3}',
    );
    expect(answer.status).toBe(200);
    expect((await messagesSince(since)).map((m) => m.sender_id)).toEqual([generic.body.user_id]);
    // And it keeps working elsewhere.
    const row = await stack.db.userProfile.findUniqueOrThrow({ where: { id: generic.body.user_id } });
    expect(
      (await stack.client({ email: row.delivery_email, apiKey: generic.body.api_key }).get('/api/v1/users/me')).status,
    ).toBe(200);
  });

  test('an integration that does not exist: 404', async () => {
    expect((await post(`/api/v1/external/nosuchtool?api_key=${key()}`, '{}')).status).toBe(404);
  });
});

describe('where messages go', () => {
  test('the channel by name or id; topic replaces the integration’s own', async () => {
    const since = await newestMessageId(stack);
    await post(
      `/api/v1/external/json?api_key=${key()}&stream=${streamId}&topic=${encodeURIComponent('my topic')}`,
      '{}',
    );
    const [message] = await messagesSince(since);
    expect(message).toMatchObject({ type: 'stream', display_recipient: 'alerts', subject: 'my topic' });
  });

  test('no stream: a direct message to the bot’s owner', async () => {
    const since = await newestMessageId(stack);
    expect((await post(`/api/v1/external/json?api_key=${key()}`, '{"d": 4}')).status).toBe(200);
    const [message] = await messagesSince(since);
    expect(message).toMatchObject({ type: 'private', sender_id: bot.id, content: '```json\n{\n  "d": 4\n}\n```' });
    expect(message!.display_recipient.map((user: { id: number }) => user.id).sort()).toEqual([owner.id, bot.id].sort());
  });

  test('a channel that does not exist: success, and the owner is told (once in 5 minutes)', async () => {
    await stack.redis.del(`${stack.deps.env.REDIS_PREFIX}webhook-owner-notice:${bot.id}`);
    const since = await newestMessageId(stack);
    expect((await post(`/api/v1/external/json?api_key=${key()}&stream=nowhere`, '{}')).body.result).toBe('success');
    expect((await post(`/api/v1/external/json?api_key=${key()}&stream=nowhere`, '{}')).body.result).toBe('success');
    const messages = await messagesSince(since);
    expect(messages.map((m) => [m.type, m.content])).toEqual([
      [
        'private',
        `Your bot \`${bot.email}\` tried to send a message to channel #**nowhere**, but that channel does not exist. ` +
          'Click [here](#channels/new) to create it.',
      ],
    ]);
  });
});

describe('events wanted', () => {
  test('only_events and exclude_events, with shell wildcards', async () => {
    const url = (query: string) => `/api/v1/external/grafana?api_key=${key()}&stream=alerts&${query}`;
    const since = await newestMessageId(stack);
    await post(url(`only_events=${encodeURIComponent('["fir*"]')}`), grafanaAlert('resolved', 'dropped-1'));
    await post(url(`only_events=${encodeURIComponent('["fir*"]')}`), grafanaAlert('firing', 'kept-1'));
    await post(url(`exclude_events=${encodeURIComponent('["resolved"]')}`), grafanaAlert('resolved', 'dropped-2'));
    await post(url(`exclude_events=${encodeURIComponent('["res?lved"]')}`), grafanaAlert('firing', 'kept-2'));
    expect((await messagesSince(since)).map((m) => m.subject)).toEqual(['[kept-1]', '[kept-2]']);
  });

  test('a list that is not JSON: 400', async () => {
    const answer = await post(`/api/v1/external/grafana?api_key=${key()}&stream=alerts&only_events=fir`, '{}');
    expect(answer.status).toBe(400);
    expect(answer.body.msg).toBe('only_events is not valid JSON');
  });
});

describe('what an integration cannot read', () => {
  test("an unsupported event: Zulip's envelope, HTTP 200, nothing posted", async () => {
    const since = await newestMessageId(stack);
    const answer = await post(
      `/api/v1/external/grafana?api_key=${key()}&stream=alerts`,
      JSON.stringify({ title: 't', state: 'exploded', ruleName: 'r', ruleUrl: 'u' }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      result: 'error',
      msg: "The 'exploded' event isn't currently supported by the Grafana webhook; ignoring",
      code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
      webhook_name: 'Grafana',
      event_type: 'exploded',
    });
    expect(await messagesSince(since)).toEqual([]);
  });

  test("a body that is not JSON: 400 Malformed JSON, and the owner is told in Zulip's words", async () => {
    await stack.redis.del(`${stack.deps.env.REDIS_PREFIX}webhook-owner-notice:${bot.id}`);
    const since = await newestMessageId(stack);
    const answer = await post(`/api/v1/external/alertmanager?api_key=${key()}&stream=alerts`, 'not json');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ result: 'error', msg: 'Malformed JSON', code: 'INVALID_JSON' });
    const [notice] = await messagesSince(since);
    expect(notice).toMatchObject({
      type: 'private',
      content:
        'Hi there! It looks like you tried to set up the Zulip Alertmanager integration,\n' +
        "but didn't correctly configure the webhook to send data in the JSON format\n" +
        'that this integration expects!',
    });
  });
});
