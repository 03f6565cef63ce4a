// User statuses (Zulip's do_update_user_status): text and emoji are stored in user_status;
// `away` is the legacy face of the presence_enabled setting (away = !presence_enabled), changed
// as PATCH /settings changes it. Everyone who can access the user hears a user_status event
// naming only what the request changed.

import type { ZulipEventOf } from '@teamchat/bus';
import { transaction, type UserProfile } from '@teamchat/db';
import { userIdsWhoCanAccessUser } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { doChangeSettings } from './settings';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'redis' | 'env'>;

export interface StatusChange {
  away?: boolean;
  statusText?: string;
  /** With emojiName: its code and type, resolved and checked by the view ("" clears the emoji). */
  emoji?: { name: string; code: string; reactionType: string };
}

export async function doUpdateUserStatus(deps: Deps, user: UserProfile, change: StatusChange): Promise<void> {
  if (change.away !== undefined) {
    await doChangeSettings(deps, user.id, { settings: [['presence_enabled', !change.away]] });
  }
  await transaction(deps.db, async (tx) => {
    const fields = {
      timestamp: new Date(),
      ...(change.statusText !== undefined ? { status_text: change.statusText } : {}),
      ...(change.emoji
        ? { emoji_name: change.emoji.name, emoji_code: change.emoji.code, reaction_type: change.emoji.reactionType }
        : {}),
    };
    await tx.db.userStatus.upsert({
      where: { user_profile_id: user.id },
      create: { user_profile_id: user.id, ...fields },
      update: fields,
    });
    const event: ZulipEventOf<'user_status'> = { type: 'user_status', user_id: user.id };
    if (change.away !== undefined) event.away = change.away;
    if (change.statusText !== undefined) event.status_text = change.statusText;
    if (change.emoji) {
      event.emoji_name = change.emoji.name;
      event.emoji_code = change.emoji.code;
      event.reaction_type = change.emoji.reactionType;
    }
    await deps.bus.sendEventOnCommit(tx, user.realm_id, event, await userIdsWhoCanAccessUser(tx.db, user));
  });
}
