// Accounts made by an administrator through the API (Zulip's create_user_backend → do_create_user):
// a member with the given password, in the organisation's default channels (subscribed by the
// channels service, which owns subscriptions, as the administrator). Only accounts holding
// Zulip's can_create_users permission (granted by a server administrator with
// `manage change-user-role ... can_create_users`) may do this; having no column of its own, the
// flag is kept in user_profile.settings beside the personal settings, which never read it.

import { callService, type Logger } from '@teamchat/core';
import { transaction, type UserProfile } from '@teamchat/db';
import type { BaseDeps } from '@teamchat/runtime';
import { lockUser } from '../lib/locks';
import { doCreateUser, type CreatedUser } from './users';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'redis' | 'env'>;

const CAN_CREATE_USERS = 'can_create_users';

/** Whether the account holds Zulip's can_create_users permission. */
export function canCreateUsers(user: Pick<UserProfile, 'settings'>): boolean {
  const settings = user.settings;
  return Boolean(
    settings && typeof settings === 'object' && !Array.isArray(settings) && settings[CAN_CREATE_USERS] === true,
  );
}

/** Grants or revokes can_create_users (the server administrator's `change-user-role`). */
export async function doSetCanCreateUsers(deps: Pick<Deps, 'db'>, userId: number, value: boolean): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, userId);
    await tx.db.$executeRaw`
      UPDATE user_profile SET settings = settings || ${JSON.stringify({ [CAN_CREATE_USERS]: value })}::jsonb
      WHERE id = ${userId}`;
  });
}

export interface AdminCreateServices {
  channelsUrl: string;
  logger: Logger;
}

export async function doCreateUserByAdmin(
  deps: Deps,
  services: AdminCreateServices,
  actor: UserProfile,
  input: { email: string; fullName: string; password: string },
): Promise<CreatedUser> {
  const realm = await deps.db.realm.findUniqueOrThrow({ where: { id: actor.realm_id } });
  const created = await doCreateUser(deps, realm, { ...input, description: 'created by an administrator' });
  const streams = await deps.db.stream.findMany({
    where: { realm_id: realm.id, is_default: true, is_archived: false },
    orderBy: { id: 'asc' },
  });
  if (streams.length) {
    try {
      await callService(services.channelsUrl, deps.env.INTERNAL_JWT_SECRET, {
        method: 'POST',
        path: '/api/v1/users/me/subscriptions',
        actingAs: {
          userId: actor.id,
          realmId: actor.realm_id,
          role: actor.role,
          email: actor.email,
          isBot: actor.is_bot,
        },
        params: { subscriptions: streams.map((stream) => ({ name: stream.name })), principals: [created.user.id] },
      });
    } catch (error) {
      // The account exists and works; only its first subscriptions are missing (a retry would
      // answer "already in use"). Say so in the log rather than fail.
      services.logger.error(
        { err: error, user_id: created.user.id },
        "subscribing a new user to the organisation's default channels failed",
      );
    }
  }
  return created;
}
