// POST /users/me/onboarding_steps (Zulip's mark_onboarding_step_as_read): a step seen is stored
// once per user, and the user's own clients get the steps still to see.
import { nextOnboardingSteps } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue } from '@teamchat/testing';
import { createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const NOTICES = [
  'visibility_policy_banner',
  'intro_inbox_view_modal',
  'intro_recent_view_modal',
  'first_stream_created_banner',
  'jump_to_conversation_banner',
  'non_interleaved_view_messages_fading',
  'interleaved_view_messages_fading',
  'intro_resolve_topic',
];
const notices = (names: string[]) => names.map((name) => ({ type: 'one_time_notice', name }));

test('a step marked seen is gone from the steps to see; the event goes to the user only', async () => {
  // Without a tour video or Welcome Bot on this server, those two steps are never offered.
  expect(await nextOnboardingSteps(stack.db, cast.member.id)).toEqual(notices(NOTICES));
  const queue = await registerEventQueue(cast.member.client, { event_types: ['onboarding_steps'] });

  const captured = await captureEvents(stack, async () => {
    const response = await cast.member.client.post('/api/v1/users/me/onboarding_steps', {
      onboarding_step: 'intro_inbox_view_modal',
    });
    expect(response.body).toEqual({ result: 'success', msg: '' });
  });
  const remaining = notices(NOTICES.filter((name) => name !== 'intro_inbox_view_modal'));
  const events = ofType(captured, 'onboarding_steps');
  expect(events.map((e) => e.event)).toEqual([{ type: 'onboarding_steps', onboarding_steps: remaining }]);
  expect(events[0].recipientIds).toEqual([cast.member.id]);
  // Through the event queue too (the client checks the event against zulip.yaml).
  expect((await queue.next(1))[0]).toMatchObject({ type: 'onboarding_steps', onboarding_steps: remaining });

  // Marking it again changes nothing, but still tells the clients.
  const again = await cast.member.client.post('/api/v1/users/me/onboarding_steps', {
    onboarding_step: 'intro_inbox_view_modal',
  });
  expect(again.status).toBe(200);
  expect(await nextOnboardingSteps(stack.db, cast.member.id)).toEqual(remaining);
  // Register shows what is left (and no tour video to show).
  const registered = (await registerEventQueue(cast.member.client, { fetch_event_types: ['onboarding_steps'] }))
    .registration;
  expect(registered).toMatchObject({ onboarding_steps: remaining, navigation_tour_video_url: null });
  // Other users still have every step.
  expect(await nextOnboardingSteps(stack.db, cast.admin.id)).toEqual(notices(NOTICES));

  // The web app asks to be reminded of the tour video later: accepted, nothing to schedule.
  const later = await cast.member.client.post('/api/v1/users/me/onboarding_steps', {
    onboarding_step: 'navigation_tour_video',
    schedule_navigation_tour_video_reminder_delay: 3600,
  });
  expect(later.status).toBe(200);
});

test('unknown steps, missing steps and bots are refused', async () => {
  expectError(
    await cast.member.client.post('/api/v1/users/me/onboarding_steps', { onboarding_step: 'no_such_step' }),
    400,
    'BAD_REQUEST',
    'Unknown onboarding_step: no_such_step',
  );
  expectError(
    await cast.member.client.post('/api/v1/users/me/onboarding_steps', {}),
    400,
    'REQUEST_VARIABLE_MISSING',
    "Missing 'onboarding_step' argument",
  );
  expectError(
    await cast.bot.client.post('/api/v1/users/me/onboarding_steps', { onboarding_step: 'intro_resolve_topic' }),
    400,
    'BAD_REQUEST',
    'This endpoint does not accept bot requests.',
  );
  expect(await nextOnboardingSteps(stack.db, cast.bot.id)).toHaveLength(NOTICES.length);
});
