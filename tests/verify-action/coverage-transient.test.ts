// verify_action for events that change no register state (Zulip's apply_event ignores them):
// typing while editing, attachments, invitations, exports. The state must stay a fresh
// register's, and the event must arrive.
import type { Stack, TestUser } from '@teamchat/stack';
import { until, verifyAction } from '@teamchat/testing';
import { CAPABILITY_SETS, ok, postFile, startSuiteStack } from './support';

let stack: Stack;
let me: TestUser;
let other: TestUser;
let generalId: number;
let counter = 0;

beforeAll(async () => {
  ({ stack, me, other, generalId } = await startSuiteStack(['messages', 'channels', 'events', 'uploads', 'worker']));
});

afterAll(() => stack?.close());

const typesOf = (events: { type: string }[]) => [...new Set(events.map((event) => event.type))];

describe.each(CAPABILITY_SETS)('events without register state, %s', (_name, register) => {
  test('typing while editing a message', async () => {
    const { id } = await other.client
      .post('/api/v1/messages', { type: 'stream', to: generalId, topic: 'edit', content: 'hi' })
      .then(ok);
    const { events } = await verifyAction(
      stack,
      me,
      register,
      () => other.client.post(`/api/v1/messages/${id}/typing`, { op: 'start' }).then(ok),
      { stateChange: false },
    );
    expect(typesOf(events)).toEqual(['typing_edit_message']);
  });

  test('an attachment uploaded and deleted', async () => {
    const note = { name: `note${++counter}.txt`, type: 'text/plain', content: 'hello' };
    await postFile(me.client, '/api/v1/user_uploads', note).then(ok);
    await verifyAction(stack, me, register, () =>
      me.client
        .post('/api/v1/messages', { type: 'stream', to: generalId, topic: 'files', content: 'see attached' })
        .then(ok),
    );
    const attachments = ok(await me.client.get('/api/v1/attachments')).attachments as { id: number }[];
    const { events } = await verifyAction(
      stack,
      me,
      register,
      () => me.client.delete(`/api/v1/attachments/${attachments[0]!.id}`).then(ok),
      { stateChange: false },
    );
    expect(typesOf(events)).toEqual(['attachment']);
  });

  test('an invitation sent and revoked', async () => {
    const { events } = await verifyAction(
      stack,
      me,
      register,
      () =>
        me.client
          .post('/api/v1/invites', { invitee_emails: `invited${++counter}@example.com`, stream_ids: [generalId] })
          .then(ok),
      { stateChange: false },
    );
    expect(typesOf(events)).toEqual(['invites_changed']);
  });

  test('an export started', async () => {
    const { events } = await verifyAction(
      stack,
      me,
      register,
      async () => {
        ok(await me.client.post('/api/v1/export/realm', {}));
        // The worker's export ends with another realm_export event: wait for it to be done.
        const finished = () =>
          me.client
            .get('/api/v1/export/realm')
            .then(ok)
            .then(({ exports }) => (exports as { pending: boolean }[]).every((entry) => !entry.pending));
        expect(await until(finished, 30_000)).toBe(true);
      },
      { stateChange: false },
    );
    expect(typesOf(events)).toContain('realm_export');
  });
});
