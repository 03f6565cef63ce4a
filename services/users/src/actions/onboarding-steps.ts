// Marking an onboarding step seen (Zulip's do_mark_onboarding_step_as_read): stored once per user,
// then the user's remaining steps are sent to the user's own clients.

import { transaction } from '@teamchat/db';
import { nextOnboardingSteps } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

export async function doMarkOnboardingStepAsRead(
  deps: Deps,
  user: { id: number; realm_id: number },
  step: string,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await tx.db.onboardingStep.createMany({
      data: [{ user_profile_id: user.id, onboarding_step: step }],
      skipDuplicates: true,
    });
    const onboardingSteps = await nextOnboardingSteps(tx.db, user.id);
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      { type: 'onboarding_steps', onboarding_steps: onboardingSteps },
      [user.id],
    );
  });
}
