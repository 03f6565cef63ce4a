import { JsonableError, optional, param, required, type AuthedContext } from '@teamchat/core';
import { loadActor, ONBOARDING_STEPS } from '@teamchat/domain';
import { doMarkOnboardingStepAsRead } from '../actions/onboarding-steps';
import type { UsersDeps } from '../deps';
import { requireHuman } from '../lib/access';

/** POST /users/me/onboarding_steps (Zulip's mark_onboarding_step_as_read; human users only). */
export async function markOnboardingStepAsRead({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user } = await loadActor(deps.db, requester.userId);
  requireHuman(user);
  const input = params.parse({
    onboarding_step: required(param.string()),
    // The reminder to watch the tour video later is a message from Welcome Bot, which this server
    // does not have; the tour video is never offered either (NAVIGATION_TOUR_VIDEO_URL), so the
    // parameter is read and has nothing to schedule.
    schedule_navigation_tour_video_reminder_delay: optional(param.int()),
  });
  if (!ONBOARDING_STEPS.some((step) => step.name === input.onboarding_step)) {
    throw new JsonableError(`Unknown onboarding_step: ${input.onboarding_step}`);
  }
  await doMarkOnboardingStepAsRead(deps, user, input.onboarding_step);
  return {};
}
