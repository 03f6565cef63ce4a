// Every register state section, in the order their keys appear. Each domain adds its
// sections in its own file here and lists them below.
import type { StateSection } from '../registry';
import { serverSection } from './server';
import { CHANNEL_SECTIONS } from './channels';
import { MESSAGE_SECTIONS } from './messages';
import { onboardingStepsSection } from './onboarding-steps';
import { EMPTY_FEATURE_SECTIONS, realmSection } from './realm';
import { SERVER_FEATURE_SECTIONS } from './server-features';
import { USER_SECTIONS } from './users';

export const STATE_SECTIONS: StateSection[] = [
  serverSection,
  realmSection,
  ...USER_SECTIONS,
  ...CHANNEL_SECTIONS,
  ...MESSAGE_SECTIONS,
  ...EMPTY_FEATURE_SECTIONS,
  ...SERVER_FEATURE_SECTIONS,
  onboardingStepsSection,
];
