// GET /calls/bigbluebutton/create: a signed join link when BigBlueButton is configured,
// Zulip's error otherwise.
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';
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

  test('a signed join URL for a new meeting, with the creator as moderator', async () => {
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
      moderator: expect.stringMatching(/^[A-Z2-7]{32}$/),
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
});
