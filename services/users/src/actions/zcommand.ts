// Zcommands (Zulip's zerver/lib/zcommand.py): slash commands typed in the web app's compose box
// that the server carries out instead of sending a message, each flipping one of the user's
// display settings through the one settings action (doChangeSettings: its events included).

import { JsonableError } from '@teamchat/core';
import { userSettings } from '@teamchat/domain';
import { doChangeSettings } from './settings';
import type { UsersDeps } from '../deps';

// Zulip's UserProfile.COLOR_SCHEME_DARK and COLOR_SCHEME_LIGHT.
const COLOR_SCHEME_DARK = 2;
const COLOR_SCHEME_LIGHT = 3;

interface ModeCommand {
  setting: 'color_scheme' | 'fluid_layout_width';
  value: number | boolean;
  /** The mode as the answer names it, and the command that goes back. */
  mode: string;
  revert: string;
  /** The answer when the setting already has the value. */
  already: string;
}

const MODE_COMMANDS: Record<string, ModeCommand> = {
  dark: {
    setting: 'color_scheme',
    value: COLOR_SCHEME_DARK,
    mode: 'dark theme',
    revert: 'light',
    already: 'You are still in dark theme.',
  },
  light: {
    setting: 'color_scheme',
    value: COLOR_SCHEME_LIGHT,
    mode: 'light theme',
    revert: 'dark',
    already: 'You are still in light theme.',
  },
  'fluid-width': {
    setting: 'fluid_layout_width',
    value: true,
    mode: 'fluid-width mode',
    revert: 'fixed-width',
    already: 'You are still in fluid width mode.',
  },
  'fixed-width': {
    setting: 'fluid_layout_width',
    value: false,
    mode: 'fixed-width mode',
    revert: 'fluid-width',
    already: 'You are still in fixed width mode.',
  },
};

/** POST /zcommand (Zulip's process_zcommands): `{}` for /ping, else `{msg}` saying what changed. */
export async function doZcommand(deps: UsersDeps, userId: number, content: string): Promise<{ msg?: string }> {
  if (!content.startsWith('/')) throw new JsonableError('There should be a leading slash in the zcommand.');
  const command = content.slice(1);
  if (command === 'ping') return {};
  const mode = Object.hasOwn(MODE_COMMANDS, command) ? MODE_COMMANDS[command] : undefined;
  if (!mode) throw new JsonableError(`No such command: ${command}`);

  const user = await deps.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
  if (userSettings(user)[mode.setting] === mode.value) return { msg: mode.already };
  await doChangeSettings(deps, userId, { settings: [[mode.setting, mode.value]] });
  return { msg: `Changed to ${mode.mode}! To revert ${mode.mode}, type \`/${mode.revert}\`.` };
}
