// verify_action for the user's own collections and the transient events: alert words, saved
// snippets, drafts, scheduled messages, navigation views, onboarding steps, reactions,
// submessages (widgets), typing.
import type { Stack, TestUser } from '@teamchat/stack';
import { verifyAction } from '@teamchat/testing';
import { CAPABILITY_SETS, ok, startSuiteStack } from './support';

let stack: Stack;
let me: TestUser;
let other: TestUser;
let generalId: number;
let counter = 0;

beforeAll(async () => {
  ({ stack, me, other, generalId } = await startSuiteStack(['messages', 'channels', 'events']));
});

afterAll(() => stack?.close());

const inOneHour = () => Math.floor(Date.now() / 1000) + 3600 + ++counter;

describe.each(CAPABILITY_SETS)('personal collections and transient events, %s', (_name, register) => {
  test('alert words added and removed', async () => {
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/users/me/alert_words', { alert_words: ['lunch', `word${++counter}`] }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.delete('/api/v1/users/me/alert_words', { alert_words: ['lunch'] }).then(ok),
    );
  });

  test('a saved snippet created, edited, deleted', async () => {
    const { saved_snippet_id: id } = await me.client
      .post('/api/v1/saved_snippets', { title: `Snippet ${++counter}`, content: 'text' })
      .then(ok);
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/saved_snippets/${id}`, { content: 'new text' }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/saved_snippets/${id}`).then(ok));
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/saved_snippets', { title: `Snippet ${++counter}`, content: 'more' }).then(ok),
    );
  });

  test('a draft created, edited, deleted', async () => {
    const draft = {
      type: 'stream',
      to: [generalId],
      topic: 'plans',
      content: 'draft',
      timestamp: 1700000000 + ++counter,
    };
    const { ids } = await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/drafts', { drafts: [draft] }).then(ok),
    ).then(() =>
      me.client
        .get('/api/v1/drafts')
        .then(ok)
        .then((body) => ({ ids: (body.drafts as { id: number }[]).map((d) => d.id) })),
    );
    const id = Math.max(...ids);
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/drafts/${id}`, { draft: { ...draft, content: 'edited draft' } }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/drafts/${id}`).then(ok));
  });

  test('a scheduled message created, rescheduled, edited, deleted', async () => {
    let id = 0;
    await verifyAction(stack, me, register, async () => {
      id = (
        await me.client
          .post('/api/v1/scheduled_messages', {
            type: 'stream',
            to: generalId,
            topic: 'later',
            content: 'scheduled',
            scheduled_delivery_timestamp: inOneHour(),
          })
          .then(ok)
      ).scheduled_message_id;
    });
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/scheduled_messages/${id}`, { scheduled_delivery_timestamp: inOneHour() + 60 }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/scheduled_messages/${id}`, { content: 'changed' }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/scheduled_messages/${id}`).then(ok));
  });

  test('a navigation view added, updated, removed', async () => {
    const fragment = `narrow/channel/${generalId}-general/topic/t${++counter}`;
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/navigation_views', { fragment, is_pinned: true, name: `View ${counter}` }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/navigation_views/${fragment}`, { is_pinned: false }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/navigation_views/${fragment}`).then(ok));
  });

  test('an onboarding step marked read', async () => {
    const user = await stack.createUser({ fullName: `New ${++counter}` });
    const step = ok(await user.client.post('/api/v1/register', {})).onboarding_steps[0]?.name as string;
    await verifyAction(stack, user, register, () =>
      user.client.post('/api/v1/users/me/onboarding_steps', { onboarding_step: step }).then(ok),
    );
  });

  test('a reaction added and removed (no register state)', async () => {
    const { id } = await other.client
      .post('/api/v1/messages', { type: 'stream', to: generalId, topic: 'reacts', content: 'hi' })
      .then(ok);
    const { events } = await verifyAction(
      stack,
      me,
      register,
      () => me.client.post(`/api/v1/messages/${id}/reactions`, { emoji_name: 'smile' }).then(ok),
      { stateChange: false },
    );
    expect(events.map((event) => [event.type, event.op])).toEqual([['reaction', 'add']]);
    await verifyAction(
      stack,
      me,
      register,
      () => me.client.delete(`/api/v1/messages/${id}/reactions`, { emoji_name: 'smile' }).then(ok),
      { stateChange: false },
    );
  });

  test('a submessage (no register state)', async () => {
    const { id } = await me.client
      .post('/api/v1/messages', { type: 'stream', to: generalId, topic: 'poll', content: '/poll Lunch?\nPizza\nSushi' })
      .then(ok);
    const { events } = await verifyAction(
      stack,
      me,
      register,
      () =>
        other.client
          .post('/api/v1/submessage', {
            message_id: id,
            msg_type: 'widget',
            content: JSON.stringify({ type: 'vote', key: 'canned,0', vote: 1 }),
          })
          .then(ok),
      { stateChange: false },
    );
    expect(events.map((event) => event.type)).toEqual(['submessage']);
  });

  test('typing start and stop (no register state)', async () => {
    await verifyAction(
      stack,
      me,
      register,
      async () => {
        ok(await other.client.post('/api/v1/typing', { op: 'start', to: JSON.stringify([me.id]) }));
        ok(await other.client.post('/api/v1/typing', { op: 'stop', to: JSON.stringify([me.id]) }));
      },
      { stateChange: false },
    );
  });
});
