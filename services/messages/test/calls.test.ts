// GET /calls/bigbluebutton/create: a signed join link when BigBlueButton is configured,
// Zulip's error otherwise; GET /calls/bigbluebutton/join, the page that link opens, through the
// gateway with the browser's session: the meeting created on the BigBlueButton server (a fake
// one here, checking each call's checksum as BigBlueButton does) and the browser sent on to it.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SESSION_COOKIE_NAME, SessionStore } from '@teamchat/bus';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, expectError } from '@teamchat/testing';
import { verifyJoinPayload } from '../src/lib/video-calls';

const SECRET = 'bbb-shared-secret';

describe('configured', () => {
  let stack: Stack;
  let alice: TestUser;
  beforeAll(async () => {
    stack = await startStack({
      services: ['messages'],
      env: { BIG_BLUE_BUTTON_URL: 'https://bbb.example.com/bigbluebutton/', BIG_BLUE_BUTTON_SECRET: SECRET },
    });
    alice = await stack.createUser();
  });
  afterAll(() => stack.close());

  test('a signed join link for a new meeting, with the creator as moderator', async () => {
    const response = await alice.client.get('/api/v1/calls/bigbluebutton/create', {
      meeting_name: 'general meeting',
      voice_only: true,
    });
    expect(response.status).toBe(200);
    const url = new URL(response.body.url, 'http://example.com');
    expect(url.pathname).toBe('/calls/bigbluebutton/join');
    const signed = url.searchParams.get('bigbluebutton')!;
    const payload = verifyJoinPayload(SECRET, signed);
    expect(payload).toEqual({
      meeting_id: expect.stringMatching(/^zulip-\d{12}$/),
      name: 'general meeting',
      lock_settings_disable_cam: true,
      moderator: alice.id,
    });
    // Altered, it no longer verifies; with another secret neither.
    const [data, signature] = signed.split(':');
    const forged = Buffer.from(JSON.stringify({ ...payload, meeting_id: 'zulip-1' })).toString('base64url');
    expect(verifyJoinPayload(SECRET, `${forged}:${signature}`)).toBeNull();
    expect(verifyJoinPayload('other', `${data}:${signature}`)).toBeNull();

    // Each call names a new meeting; voice_only defaults to false.
    const second = await alice.client.get('/api/v1/calls/bigbluebutton/create', { meeting_name: 'general meeting' });
    const secondPayload = verifyJoinPayload(
      SECRET,
      new URL(second.body.url, 'http://example.com').searchParams.get('bigbluebutton')!,
    );
    expect(secondPayload).toMatchObject({ lock_settings_disable_cam: false });
    expect(secondPayload!.meeting_id).not.toBe(payload!.meeting_id);
  });

  test('meeting_name is required', async () => {
    expectError(await alice.client.get('/api/v1/calls/bigbluebutton/create'), 400, 'REQUEST_VARIABLE_MISSING');
  });
});

/** BigBlueButton's API as far as Zulip uses it: create (answering XML) and join, each checksummed. */
function fakeBigBlueButton(secret: string) {
  const calls: { call: string; params: URLSearchParams }[] = [];
  let answer: 'success' | 'failure' | 'http-error' = 'success';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://bbb.invalid');
    const call = url.pathname.replace('/bigbluebutton/api/', '');
    const query = url.search.slice(1);
    const withoutChecksum = query.replace(/&checksum=[0-9a-f]+$/, '');
    const checksum = crypto.createHash('sha256').update(`${call}${withoutChecksum}${secret}`).digest('hex');
    calls.push({ call, params: url.searchParams });
    res.setHeader('content-type', 'text/xml');
    if (answer === 'http-error') return void res.writeHead(500).end();
    if (url.searchParams.get('checksum') !== checksum)
      return void res.end('<response><returncode>FAILED</returncode><messageKey>checksumError</messageKey></response>');
    if (answer === 'failure')
      return void res.end('<response><returncode>FAILED</returncode><messageKey>tooMany</messageKey></response>');
    res.end(
      `<response><returncode>SUCCESS</returncode><meetingID>${url.searchParams.get('meetingID')}</meetingID>` +
        '<createTime>1700000000123</createTime><messageKey></messageKey></response>',
    );
  });
  return {
    calls,
    answer: (next: typeof answer) => (answer = next),
    listen: () =>
      new Promise<string>((resolve) =>
        server.listen(0, '127.0.0.1', () =>
          resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/bigbluebutton/`),
        ),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('joining through the gateway', () => {
  const bbb = fakeBigBlueButton(SECRET);
  let stack: Stack;
  let bbbUrl: string;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    bbbUrl = await bbb.listen();
    stack = await startStack({
      services: ['messages'],
      env: { BIG_BLUE_BUTTON_URL: bbbUrl, BIG_BLUE_BUTTON_SECRET: SECRET },
    });
    alice = await stack.createUser({ fullName: 'Alice Liddell' });
    bob = await stack.createUser({ fullName: "Bob O'Brien & co" });
  });
  afterAll(async () => {
    await stack.close();
    await bbb.close();
  });

  async function browserOf(user: TestUser): Promise<string> {
    const store = new SessionStore(stack.redis, stack.deps.env.REDIS_PREFIX);
    const { id } = await store.create({ userId: user.id, realmId: stack.realm.id }, 3600);
    return `${SESSION_COOKIE_NAME}=${id}`;
  }

  async function newCall(voiceOnly: boolean): Promise<string> {
    const response = await alice.client.get('/api/v1/calls/bigbluebutton/create', {
      meeting_name: 'Tea (party)!',
      voice_only: voiceOnly,
    });
    expect(response.status).toBe(200);
    return response.body.url;
  }

  const open = (link: string, cookie?: string) =>
    new ApiClient(stack.gatewayUrl, null, cookie ? { cookie } : {}).get(link);

  test('the creator joins as moderator, anyone else as viewer, each under their name', async () => {
    const link = await newCall(true);
    const meetingId = verifyJoinPayload(SECRET, new URL(link, 'http://x').searchParams.get('bigbluebutton')!)!
      .meeting_id as string;
    bbb.calls.length = 0;

    const asAlice = await open(link, await browserOf(alice));
    expect(asAlice.status).toBe(302);
    expect(asAlice.headers['cache-control']).toContain('no-store');
    const created = bbb.calls.find((c) => c.call === 'create')!;
    expect(Object.fromEntries(created.params)).toEqual({
      meetingID: meetingId,
      name: 'Tea (party)!',
      lockSettingsDisableCam: 'True',
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const joinAlice = new URL(asAlice.headers.location!);
    expect(joinAlice.origin + joinAlice.pathname).toBe(`${bbbUrl}api/join`);
    expect(Object.fromEntries(joinAlice.searchParams)).toEqual({
      meetingID: meetingId,
      role: 'MODERATOR',
      fullName: 'Alice Liddell',
      createTime: '1700000000123',
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The join URL's checksum is BigBlueButton's: the fake server accepts it.
    expect(await (await fetch(joinAlice)).text()).toContain('<returncode>SUCCESS</returncode>');

    const asBob = await open(link, await browserOf(bob));
    const joinBob = new URL(asBob.headers.location!);
    expect(joinBob.searchParams.get('role')).toBe('VIEWER');
    expect(joinBob.searchParams.get('fullName')).toBe("Bob O'Brien & co");
    expect(await (await fetch(joinBob)).text()).toContain('<returncode>SUCCESS</returncode>');
  });

  test('a logged-out browser is sent to log in, and back to the link after', async () => {
    const link = await newCall(false);
    const response = await open(link);
    expect(response.status).toBe(302);
    const login = new URL(response.headers.location!, stack.gatewayUrl);
    expect(login.pathname).toBe('/login/');
    expect(login.searchParams.get('next')).toBe(link);
  });

  test("an altered link, or BigBlueButton's refusals, are Zulip's errors", async () => {
    const cookie = await browserOf(bob);
    const link = new URL(await newCall(false), 'http://x');
    const [data, signature] = link.searchParams.get('bigbluebutton')!.split(':');
    const payload = JSON.parse(Buffer.from(data!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...payload, moderator: bob.id })).toString('base64url');
    const answer = (signed: string) =>
      open(`/calls/bigbluebutton/join?bigbluebutton=${encodeURIComponent(signed)}`, cookie);
    expectError(await answer(`${forged}:${signature}`), 400, 'BAD_REQUEST', 'Invalid signature.');
    expectError(await answer('nonsense'), 400, 'BAD_REQUEST', 'Invalid signature.');
    const signed = `${data}:${signature}`;
    bbb.answer('failure');
    expectError(await answer(signed), 400, 'BAD_REQUEST', 'BigBlueButton server returned an unexpected error.');
    bbb.answer('http-error');
    expectError(await answer(signed), 400, 'BAD_REQUEST', 'Error connecting to the BigBlueButton server.');
    bbb.answer('success');
    expect((await open(`/calls/bigbluebutton/join?bigbluebutton=${encodeURIComponent(signed)}`, cookie)).status).toBe(
      302,
    );
  });
});

describe('not configured', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ services: ['messages'] });
  });
  afterAll(() => stack.close());

  test("Zulip's error", async () => {
    const alice = await stack.createUser();
    expectError(
      await alice.client.get('/api/v1/calls/bigbluebutton/create', { meeting_name: 'm' }),
      400,
      'BAD_REQUEST',
      'Big Blue Button is not configured.',
    );
  });

  test("the join page answers Zulip's error", async () => {
    const alice = await stack.createUser();
    const { id } = await new SessionStore(stack.redis, stack.deps.env.REDIS_PREFIX).create(
      { userId: alice.id, realmId: stack.realm.id },
      3600,
    );
    const response = await new ApiClient(stack.gatewayUrl, null, { cookie: `${SESSION_COOKIE_NAME}=${id}` }).get(
      '/calls/bigbluebutton/join?bigbluebutton=x:y',
    );
    expectError(response, 400, 'BAD_REQUEST', 'BigBlueButton is not configured.');
  });
});
