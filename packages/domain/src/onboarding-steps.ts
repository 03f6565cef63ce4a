// The web app's onboarding steps (Zulip's zerver/lib/onboarding_steps.py): one-time notices and
// actions, each shown until the user marks it seen (POST /users/me/onboarding_steps).
import type { TxClient } from '@teamchat/db';

export interface OnboardingStepDict {
  type: 'one_time_notice' | 'one_time_action';
  name: string;
}

/** Every step, in Zulip's order. */
export const ONBOARDING_STEPS: readonly OnboardingStepDict[] = [
  ...[
    'visibility_policy_banner',
    'intro_inbox_view_modal',
    'intro_recent_view_modal',
    'first_stream_created_banner',
    'jump_to_conversation_banner',
    'non_interleaved_view_messages_fading',
    'interleaved_view_messages_fading',
    'intro_resolve_topic',
    'navigation_tour_video',
  ].map((name) => ({ type: 'one_time_notice' as const, name })),
  { type: 'one_time_action', name: 'narrow_to_dm_with_welcome_bot_new_user' },
];

/**
 * Register's navigation_tour_video_url (Zulip's NAVIGATION_TOUR_VIDEO_URL). This server hosts no
 * tour video, so it is null, and the video's step counts as seen (as Zulip does then: the web app
 * requires the URL when it shows the step).
 */
export const NAVIGATION_TOUR_VIDEO_URL: string | null = null;

/**
 * Steps this server never shows: the tour video (above), and the jump to the direct messages with
 * Welcome Bot, which this server does not have (the web app would narrow to an unknown user).
 */
const STEPS_NEVER_SHOWN = new Set([
  ...(NAVIGATION_TOUR_VIDEO_URL === null ? ['navigation_tour_video'] : []),
  'narrow_to_dm_with_welcome_bot_new_user',
]);

/** The steps the user has still to see (Zulip's get_next_onboarding_steps). */
export async function nextOnboardingSteps(
  db: Pick<TxClient, 'onboardingStep'>,
  userId: number,
): Promise<OnboardingStepDict[]> {
  const seen = await db.onboardingStep.findMany({
    where: { user_profile_id: userId },
    select: { onboarding_step: true },
  });
  const done = new Set([...STEPS_NEVER_SHOWN, ...seen.map((row) => row.onboarding_step)]);
  return ONBOARDING_STEPS.filter((step) => !done.has(step.name)).map((step) => ({ ...step }));
}
