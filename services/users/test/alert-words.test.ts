// Alert words: GET/POST/DELETE /users/me/alert_words, the register alert_words section and
// the alert_words events.
import { startStack, type Stack } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents } from '@teamchat/testing';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
});
afterAll(() => stack.close());

describe('alert words', () => {
  test('add: stripped, empties dropped, duplicates (ignoring case) kept once; listed and registered', async () => {
    const user = await stack.createUser();
    const queue = await registerEventQueue(user.client, { event_types: ['alert_words'] });
    expect(queue.registration.alert_words).toEqual([]);

    const added = await user.client.post('/api/v1/users/me/alert_words', {
      alert_words: ['  Zulip ', '', '   ', 'deploy', 'ZULIP', 'Deploy'],
    });
    expect(added.status).toBe(200);
    // Among new words the last spelling wins (Zulip keys them by their lower case).
    expect(added.body).toEqual({ result: 'success', msg: '', alert_words: ['ZULIP', 'Deploy'] });
    const [event] = await queue.next(1);
    expect(event).toEqual({ id: expect.any(Number), type: 'alert_words', alert_words: ['ZULIP', 'Deploy'] });

    // A word the user already has, in any case, is not added again.
    const again = await user.client.post('/api/v1/users/me/alert_words', { alert_words: ['zulip', 'release'] });
    expect(again.body.alert_words).toEqual(['ZULIP', 'Deploy', 'release']);
    expect((await queue.next(1))[0].alert_words).toEqual(['ZULIP', 'Deploy', 'release']);

    expect((await user.client.get('/api/v1/users/me/alert_words')).body).toEqual({
      result: 'success',
      msg: '',
      alert_words: ['ZULIP', 'Deploy', 'release'],
    });
    expect(
      (await registerEventQueue(user.client, { fetch_event_types: ['alert_words'] })).registration.alert_words,
    ).toEqual(['ZULIP', 'Deploy', 'release']);
  });

  test('remove: matched ignoring case; unknown words are fine; the event has the new list', async () => {
    const user = await stack.createUser();
    await user.client.post('/api/v1/users/me/alert_words', { alert_words: ['alpha', 'Beta', 'gamma'] });
    const queue = await registerEventQueue(user.client, { event_types: ['alert_words'] });
    const removed = await user.client.delete('/api/v1/users/me/alert_words', {
      alert_words: ['BETA', 'delta', 'alpha'],
    });
    expect(removed.body).toEqual({ result: 'success', msg: '', alert_words: ['gamma'] });
    expect((await queue.next(1))[0]).toMatchObject({ type: 'alert_words', alert_words: ['gamma'] });
  });

  test('each user has their own words; nobody else gets the events', async () => {
    const user = await stack.createUser();
    const other = await stack.createUser();
    const observer = await registerEventQueue(other.client, { event_types: ['alert_words'] });
    await user.client.post('/api/v1/users/me/alert_words', { alert_words: ['mine'] });
    await settleEvents(stack);
    expect(await observer.drain()).toEqual([]);
    expect((await other.client.get('/api/v1/users/me/alert_words')).body.alert_words).toEqual([]);
  });

  test('bots may keep alert words too', async () => {
    const owner = await stack.createUser();
    const bot = await stack.createUser({ email: 'alert-bot@example.com', botType: 1, botOwnerId: owner.id });
    expect(
      (await bot.client.post('/api/v1/users/me/alert_words', { alert_words: ['bot word'] })).body.alert_words,
    ).toEqual(['bot word']);
  });

  test.each([
    ['POST', { alert_words: 'zulip' }, 'alert_words is not valid JSON'],
    ['POST', { alert_words: '"zulip"' }, 'alert_words is not a list'],
    ['POST', { alert_words: [1] }, 'alert_words[0] is not a string'],
    ['POST', { alert_words: ['x'.repeat(101)] }, 'alert_words[0] is too long (limit: 100 characters)'],
    ['DELETE', { alert_words: '{}' }, 'alert_words is not a list'],
  ] as const)('%s %j is refused: %s', async (method, params, message) => {
    const user = await stack.createUser();
    const response =
      method === 'POST'
        ? await user.client.post('/api/v1/users/me/alert_words', params)
        : await user.client.delete('/api/v1/users/me/alert_words', params);
    expectError(response, 400, 'BAD_REQUEST', message);
  });

  test('alert_words is required', async () => {
    const user = await stack.createUser();
    expectError(
      await user.client.post('/api/v1/users/me/alert_words'),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'alert_words' argument",
    );
    expectError(
      await user.client.delete('/api/v1/users/me/alert_words'),
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'alert_words' argument",
    );
  });

  test('a word of exactly 100 characters is accepted', async () => {
    const user = await stack.createUser();
    const word = 'y'.repeat(100);
    expect((await user.client.post('/api/v1/users/me/alert_words', { alert_words: [word] })).body.alert_words).toEqual([
      word,
    ]);
  });

  test('concurrent additions of one word in different cases keep one', async () => {
    const user = await stack.createUser();
    await Promise.all(
      ['Race', 'RACE', 'race'].map((word) => user.client.post('/api/v1/users/me/alert_words', { alert_words: [word] })),
    );
    expect((await user.client.get('/api/v1/users/me/alert_words')).body.alert_words).toHaveLength(1);
  });
});
