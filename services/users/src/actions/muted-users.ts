// Muting users (Zulip's do_mute_user / do_unmute_user): the muter's clients get the whole list
// as a muted_users event. Muting also marks the muted user's messages read for the muter
// (Zulip's do_mark_muted_user_messages_as_read); user_message belongs to the messages service,
// so that is asked of it, as the muter, once the mute is committed: from then on its send path
// delivers the muted user's new messages already read, so none slips between the two.

import type { ZulipEventOf } from '@teamchat/bus';
import { callService, JsonableError, type Logger } from '@teamchat/core';
import { Prisma, transaction, type Tx, type UserProfile } from '@teamchat/db';
import { userMutes } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { lockUser } from '../lib/locks';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'env'>;

export interface MuteServices {
  messagesUrl: string;
  logger: Logger;
}

/** Zulip's MAX_MESSAGES_PER_UPDATE: the most messages one flags-over-a-narrow request changes. */
const MESSAGES_PER_BATCH = 5000;

export async function doMuteUser(
  deps: Deps,
  services: MuteServices,
  user: UserProfile,
  mutedUserId: number,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, user.id);
    try {
      await tx.db.mutedUser.create({ data: { user_profile_id: user.id, muted_user_id: mutedUserId } });
    } catch (error) {
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')
        throw new JsonableError('User already muted');
      throw error;
    }
    await notify(deps, tx, user);
  });
  try {
    await markMessagesRead(deps, services, user, mutedUserId);
  } catch (error) {
    // The mute stands (a retry would answer "User already muted"); only older unread messages
    // of the muted user stay unread. Say so in the log rather than fail the request.
    services.logger.error(
      { err: error, user_id: user.id, muted_user_id: mutedUserId },
      "marking a muted user's messages read failed",
    );
  }
}

export async function doUnmuteUser(deps: Deps, user: UserProfile, mutedUserId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, user.id);
    const removed = await tx.db.mutedUser.deleteMany({
      where: { user_profile_id: user.id, muted_user_id: mutedUserId },
    });
    if (removed.count === 0) throw new JsonableError('User is not muted');
    await notify(deps, tx, user);
  });
}

async function notify(deps: Deps, tx: Tx, user: UserProfile): Promise<void> {
  const event: ZulipEventOf<'muted_users'> = {
    type: 'muted_users',
    muted_users: await userMutes(tx.db, user.id),
  };
  await deps.bus.sendEventOnCommit(tx, user.realm_id, event, [user.id]);
}

/** The muted user's unread messages of the muter, marked read in batches (newest state each time). */
async function markMessagesRead(deps: Deps, services: MuteServices, user: UserProfile, mutedUserId: number) {
  const narrow = [
    { operator: 'sender', operand: mutedUserId },
    { operator: 'is', operand: 'unread' },
  ];
  let anchor = 'oldest';
  for (;;) {
    const result = await callService<{
      found_newest: boolean;
      processed_count: number;
      last_processed_id: number | null;
    }>(services.messagesUrl, deps.env.INTERNAL_JWT_SECRET, {
      method: 'POST',
      path: '/api/v1/messages/flags/narrow',
      actingAs: { userId: user.id, realmId: user.realm_id, role: user.role, email: user.email, isBot: user.is_bot },
      params: {
        anchor,
        include_anchor: anchor === 'oldest',
        num_before: 0,
        num_after: MESSAGES_PER_BATCH,
        narrow,
        op: 'add',
        flag: 'read',
      },
    });
    if (result.found_newest || result.processed_count === 0 || result.last_processed_id === null) return;
    anchor = String(result.last_processed_id);
  }
}
