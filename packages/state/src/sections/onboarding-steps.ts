// Register's onboarding_steps: the web app's one-time notices and actions the user has still to
// see (Zulip's get_next_onboarding_steps), and the tour video they may show.
import { NAVIGATION_TOUR_VIDEO_URL, nextOnboardingSteps } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const onboardingStepsSection: StateSection = {
  eventType: 'onboarding_steps',
  async fetch({ db, user, spectator }) {
    return {
      // A spectator has no account to remember what they saw.
      onboarding_steps: spectator ? [] : await nextOnboardingSteps(db, user.id),
      navigation_tour_video_url: NAVIGATION_TOUR_VIDEO_URL,
    };
  },
};
