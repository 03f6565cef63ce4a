// Outgoing webhook bots end to end, as Zulip 10.2 runs them (zerver/lib/outgoing_webhook.py):
// a member makes bots through the API whose services are a local HTTP server; a mention in a
// channel or a direct message to a bot makes the worker post Zulip's payload (or Slack's) to it,
// and the answer comes back as the bot's reply, seen in the sender's event queue through the
// gateway. Failures are told to the bot's owner in Zulip's words; an address the operator does
// not allow is never called.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, sendMessage, waitFor, type EventQueue, type ReceivedEvent } from '@teamchat/testing';

jest.setTimeout(120_000);

interface ReceivedCall {
  /** When the call arrived (Date.now()). */
  at: number;
  path: string;
  contentType: string;
  userAgent: string;
  body: string;
}

/** The bots' service: what it answers depends on the path it is called on. */
class BotServer {
  readonly calls: ReceivedCall[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const path = req.url ?? '';
      this.calls.push({
        at: Date.now(),
        path,
        contentType: req.headers['content-type'] ?? '',
        userAgent: req.headers['user-agent'] ?? '',
        body,
      });
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (path === '/reply') json(200, { content: `pong: ${JSON.parse(body).data}` });
      else if (path === '/silent') json(200, { response_not_required: true });
      else if (path === '/fail') res.writeHead(500, { 'content-type': 'text/plain' }).end("it's broken");
      else if (path === '/down') req.socket.destroy();
      else if (path === '/slack') json(200, { text: `slack pong: ${new URLSearchParams(body).get('text')}` });
      else json(404, {});
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  callsTo(path: string): ReceivedCall[] {
    return this.calls.filter((call) => call.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let stack: Stack;
let service: BotServer;
let alice: TestUser;
let bob: TestUser;
let channelId: number;
let aliceEvents: EventQueue;

interface Bot {
  id: number;
  email: string;
  apiKey: string;
  fullName: string;
}

let botCount = 0;
/** An outgoing webhook bot owned by Alice, made through the API. */
async function createBot(path: string, options: { interface?: number; host?: string } = {}): Promise<Bot> {
  const short = `hook${++botCount}`;
  const fullName = `Hook Bot ${botCount}`;
  const response = await alice.client.post('/api/v1/bots', {
    full_name: fullName,
    short_name: short,
    bot_type: 3,
    payload_url: JSON.stringify(`http://${options.host ?? `127.0.0.1:${service.port}`}${path}`),
    interface_type: options.interface ?? 1,
  });
  expect(response.body.result).toBe('success');
  const { email } = (await alice.client.get(`/api/v1/users/${response.body.user_id}`)).body.user;
  return { id: response.body.user_id, email, apiKey: response.body.api_key, fullName };
}

/** The next message event in Alice's queue sent by `senderId`, and when it arrived. */
async function nextMessageFrom(senderId: number): Promise<{ message: Record<string, any>; at: number }> {
  for (;;) {
    const [event] = await aliceEvents.next(1, 30_000);
    if (event.type === 'message' && event.message.sender_id === senderId) {
      return { message: event.message, at: Date.now() };
    }
  }
}

/** Nothing left in the outgoing webhook queue: every call and reply has happened. */
async function webhooksSettled(): Promise<void> {
  await waitFor(async () => {
    const counts = await stack.deps.jobs.queue('outgoing-webhook').getJobCounts('waiting', 'delayed', 'active');
    return Object.values(counts).every((n) => n === 0);
  });
}

/** The topic's messages, as Alice reads them through the API. */
async function topicMessages(topic: string): Promise<Record<string, any>[]> {
  const response = await alice.client.get('/api/v1/messages', {
    anchor: 'newest',
    num_before: 50,
    num_after: 0,
    narrow: JSON.stringify([
      { operator: 'channel', operand: channelId },
      { operator: 'topic', operand: topic },
    ]),
  });
  expect(response.status).toBe(200);
  return response.body.messages;
}

const mention = (bot: Bot) => `@**${bot.fullName}**`;

beforeAll(async () => {
  service = await new BotServer().start();
  stack = await startStack({
    services: ['messages', 'channels', 'events', 'worker'],
    // The service is on loopback: allowed by address and port; "localhost" is not.
    env: { OUTGOING_WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${service.port}` },
  });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  channelId = (await stack.createStream({ name: 'hooks', subscribers: [alice.id, bob.id] })).id;
  aliceEvents = await registerEventQueue(alice.client, { event_types: ['message'] });
});
afterAll(async () => {
  await stack?.close();
  await service?.close();
});

test("a mention in a channel: the service gets Zulip's payload and its content is the bot's reply in the topic", async () => {
  const bot = await createBot('/reply');
  const sentAt = Date.now();
  const messageId = await sendMessage(alice, {
    type: 'stream',
    to: String(channelId),
    topic: 'ping',
    content: `${mention(bot)} ping`,
  });
  const answeredAt = Date.now();
  const { message: reply, at } = await nextMessageFrom(bot.id);
  const [call] = service.callsTo('/reply');
  // A mention to the bot's reply on the sender's event queue (the first: a cold worker path).
  console.log(
    `outgoing webhook, first: send answered ${answeredAt - sentAt} ms, service called ${call.at - sentAt} ms, reply event ${at - sentAt} ms`,
  );

  expect(call.contentType).toBe('application/json');
  expect(call.userAgent).toMatch(/^ZulipOutgoingWebhook\//);
  const payload = JSON.parse(call.body);
  // The token as the bot's owner is shown it (register's realm_bots).
  const { realm_bots: realmBots } = (
    await alice.client.post('/api/v1/register', { fetch_event_types: JSON.stringify(['realm_bot']) })
  ).body;
  const token = realmBots.find((entry: { user_id: number }) => entry.user_id === bot.id).services[0].token;
  expect(payload).toEqual({
    bot_email: bot.email,
    bot_full_name: bot.fullName,
    data: `${mention(bot)} ping`,
    token,
    trigger: 'mention',
    message: expect.objectContaining({
      id: messageId,
      sender_id: alice.id,
      sender_email: alice.email,
      sender_full_name: 'Alice Liddell',
      content: `${mention(bot)} ping`,
      rendered_content: expect.stringContaining('user-mention'),
      type: 'stream',
      stream_id: channelId,
      display_recipient: 'hooks',
      subject: 'ping',
    }),
  });
  expect(token).toMatch(/^[A-Za-z0-9]{32}$/);

  expect(reply).toMatchObject({
    type: 'stream',
    stream_id: channelId,
    subject: 'ping',
    content: expect.stringContaining(`pong: ${mention(bot)} ping`),
  });
  const inTopic = await topicMessages('ping');
  expect(inTopic.map((message) => [message.sender_id, message.content.includes('pong:')])).toEqual([
    [alice.id, false],
    [bot.id, true],
  ]);
});

test('mention -> reply time on a warm, idle stack (printed, not asserted)', async () => {
  const bot = await createBot('/reply');
  const times: string[] = [];
  for (let n = 0; n < 5; n++) {
    const sentAt = Date.now();
    await sendMessage(alice, {
      type: 'stream',
      to: String(channelId),
      topic: 'timing',
      content: `${mention(bot)} ${n}`,
    });
    const { message: reply, at } = await nextMessageFrom(bot.id);
    expect(reply.content).toContain(`pong: ${mention(bot)} ${n}`);
    times.push(`${service.callsTo('/reply').at(-1)!.at - sentAt}/${at - sentAt}`);
  }
  console.log(`outgoing webhook, warm: service called / reply event, ms after the send: ${times.join(' ')}`);
});

test('a direct message to the bot: the reply is a direct message back', async () => {
  const bot = await createBot('/reply');
  await sendMessage(alice, { type: 'direct', to: JSON.stringify([bot.id]), content: 'hello bot' });
  const { message: reply } = await nextMessageFrom(bot.id);
  expect(JSON.parse(service.callsTo('/reply').at(-1)!.body)).toMatchObject({
    trigger: 'direct_message',
    data: 'hello bot',
    message: { type: 'private', sender_id: alice.id },
  });
  expect(reply.type).toBe('private');
  expect(reply.content).toContain('pong: hello bot');
  expect(reply.display_recipient.map((user: { id: number }) => user.id).sort()).toEqual([alice.id, bot.id].sort());
});

test('response_not_required: the service is called and no reply is sent', async () => {
  const bot = await createBot('/silent');
  await sendMessage(alice, { type: 'stream', to: String(channelId), topic: 'quiet', content: `${mention(bot)} hush` });
  await waitFor(() => service.callsTo('/silent').length === 1);
  await webhooksSettled();
  expect((await topicMessages('quiet')).map((message) => message.sender_id)).toEqual([alice.id]);
});

test("a bot's own messages call no webhook", async () => {
  const bot = await createBot('/silent');
  const other = await createBot('/silent');
  const calls = service.callsTo('/silent').length;
  const botClient = stack.client({ email: bot.email, apiKey: bot.apiKey });
  await sendMessage(
    { client: botClient },
    { type: 'stream', to: String(channelId), topic: 'bots', content: `${mention(other)} from a bot` },
  );
  // Alice's mention after it is called: by then the bot's message would have been too.
  await sendMessage(alice, { type: 'stream', to: String(channelId), topic: 'bots', content: `${mention(other)} hi` });
  await waitFor(() => service.callsTo('/silent').length > calls);
  await webhooksSettled();
  const newCalls = service.callsTo('/silent').slice(calls);
  expect(newCalls.map((call) => JSON.parse(call.body).data)).toEqual([`${mention(other)} hi`]);
});

test("a service that answers 500: the bot says so in the topic and its owner is told, in Zulip's words", async () => {
  const bot = await createBot('/fail');
  const messageId = await sendMessage(alice, {
    type: 'stream',
    to: String(channelId),
    topic: 'broken',
    content: `${mention(bot)} go`,
  });
  const { message: failure } = await nextMessageFrom(bot.id);
  expect(failure).toMatchObject({ type: 'stream', subject: 'broken' });
  expect(failure.content).toContain('Failure! Third party responded with 500');
  const { message: notice } = await nextMessageFrom(bot.id);
  expect(notice.type).toBe('private');
  expect(notice.display_recipient.map((user: { id: number }) => user.id).sort()).toEqual([alice.id, bot.id].sort());
  const raw = (await alice.client.get(`/api/v1/messages/${notice.id}`, { apply_markdown: false })).body.message.content;
  expect(raw).toBe(
    `[A message](http://${stack.realm.host}/#narrow/channel/${channelId}-hooks/topic/broken/near/${messageId}) to your bot @_**${bot.fullName}** triggered an outgoing webhook.\n` +
      'The webhook got a response with status code *500*.\n' +
      'The response contains the following payload:\n```\nb"it\'s broken"\n```',
  );
  await webhooksSettled();
  expect(service.callsTo('/fail')).toHaveLength(1);
});

test('a service that cannot be reached: tried four times, then the bot is unavailable and its owner is told', async () => {
  const bot = await createBot('/down');
  await sendMessage(alice, {
    type: 'stream',
    to: String(channelId),
    topic: 'down',
    content: `${mention(bot)} anyone?`,
  });
  const { message: failure } = await nextMessageFrom(bot.id);
  expect(failure.content).toContain('Failure! Bot is unavailable');
  const { message: notice } = await nextMessageFrom(bot.id);
  const raw = (await alice.client.get(`/api/v1/messages/${notice.id}`, { apply_markdown: false })).body.message.content;
  expect(raw).toMatch(/triggered an outgoing webhook\.\nA connection error occurred\. Is my bot server down\?$/);
  expect(service.callsTo('/down')).toHaveLength(4);
});

test('a host the operator does not allow is never called; the owner is told', async () => {
  // localhost is loopback, and only 127.0.0.1:<port> is allowed.
  const bot = await createBot('/refused', { host: `localhost:${service.port}` });
  await sendMessage(alice, { type: 'stream', to: String(channelId), topic: 'ssrf', content: `${mention(bot)} probe` });
  const { message: failure } = await nextMessageFrom(bot.id);
  expect(failure.content).toContain('Failure! Third party responded with 407');
  const { message: notice } = await nextMessageFrom(bot.id);
  const raw = (await alice.client.get(`/api/v1/messages/${notice.id}`, { apply_markdown: false })).body.message.content;
  expect(raw).toMatch(
    /triggered an outgoing webhook\.\nThe URL configured for the webhook is for a private or disallowed network\.$/,
  );
  expect(service.callsTo('/refused')).toHaveLength(0);
});

test("the Slack interface: Slack's form fields, and its text is the reply", async () => {
  const bot = await createBot('/slack', { interface: 2 });
  const messageId = await sendMessage(alice, {
    type: 'stream',
    to: String(channelId),
    topic: 'slack',
    content: `${mention(bot)} hi`,
  });
  const { message: reply } = await nextMessageFrom(bot.id);
  expect(reply.content).toContain(`slack pong: ${mention(bot)} hi`);
  const [call] = service.callsTo('/slack');
  expect(call.contentType).toBe('application/x-www-form-urlencoded');
  const form = Object.fromEntries(new URLSearchParams(call.body));
  const sent: ReceivedEvent = (await alice.client.get(`/api/v1/messages/${messageId}`)).body.message;
  expect(form).toEqual({
    token: expect.stringMatching(/^[A-Za-z0-9]{32}$/),
    team_id: `T${stack.realm.id}`,
    team_domain: stack.realm.host,
    channel_id: `C${channelId}`,
    channel_name: 'hooks',
    thread_ts: String(sent.timestamp),
    timestamp: String(sent.timestamp),
    user_id: `U${alice.id}`,
    user_name: 'Alice Liddell',
    text: `${mention(bot)} hi`,
    trigger_word: 'mention',
    service_id: String(bot.id),
  });
});
