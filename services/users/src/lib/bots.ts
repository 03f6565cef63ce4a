// Reads and checks for the bot endpoints (Zulip's zerver/lib/users.py check_bot_name_available,
// check_can_create_bot; zerver/models/users.py bot_owner_user_ids).

import { JsonableError } from '@teamchat/core';
import type { Stream, TxClient, UserProfile } from '@teamchat/db';
import { BotType, realmPermissions, Role, streamAccess } from '@teamchat/domain';

type Reader = Pick<
  TxClient,
  | '$queryRaw'
  | 'userProfile'
  | 'stream'
  | 'subscription'
  | 'userMessage'
  | 'groupSetting'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
>;

/** Zulip's Service.ALLOWED_INTERFACE_TYPES: 1 generic, 2 Slack-compatible. */
export const SERVICE_INTERFACES = [1, 2];

const BOT_PERMISSIONS = ['can_create_bots_group', 'can_create_write_only_bots_group'] as const;
type BotPermission = (typeof BOT_PERMISSIONS)[number];

/**
 * The bot types someone holding `held` may create (Zulip's UserProfile.allowed_bot_types):
 * can_create_bots_group gives every type but embedded (embedded bots are not enabled here),
 * can_create_write_only_bots_group incoming webhooks only.
 */
function allowedBotTypes(held: Record<BotPermission, boolean>): number[] {
  if (held.can_create_bots_group) return [BotType.DEFAULT, BotType.INCOMING_WEBHOOK, BotType.OUTGOING_WEBHOOK];
  if (held.can_create_write_only_bots_group) return [BotType.INCOMING_WEBHOOK];
  return [];
}

/** Zulip's check_can_create_bot and check_valid_bot_type, in that order. */
export async function checkCanCreateBot(db: Reader, actor: UserProfile, botType: number): Promise<void> {
  const held = await realmPermissions(db, actor, BOT_PERMISSIONS);
  const mayCreate =
    held.can_create_bots_group || (botType === BotType.INCOMING_WEBHOOK && held.can_create_write_only_bots_group);
  if (!mayCreate) throw new JsonableError('Insufficient permission');
  if (!allowedBotTypes(held).includes(botType)) throw new JsonableError('Invalid bot type');
}

/**
 * Zulip's check_bot_name_available: no active user of the realm has the name (a check against
 * accidents, not a constraint: reactivating a bot can still make two).
 */
export async function checkBotNameAvailable(
  db: Pick<TxClient, 'userProfile'>,
  realmId: number,
  fullName: string,
  options: { isActivation: boolean },
): Promise<void> {
  const taken = await db.userProfile.findFirst({
    where: { realm_id: realmId, full_name: fullName.trim(), is_active: true },
    select: { id: true },
  });
  if (!taken) return;
  if (options.isActivation) {
    throw new JsonableError(
      `There is already an active bot named "${fullName}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
  }
  throw new JsonableError('Name is already in use.');
}

/** Zulip's access_stream_by_name: an active channel the actor can read, matched without regard to case. */
export async function accessStreamByName(db: Reader, actor: UserProfile, name: string): Promise<Stream> {
  const error = `Invalid channel name '${name}'`;
  // No channel name holds a NUL (PostgreSQL text cannot).
  if (name.includes('\u0000')) throw new JsonableError(error);
  const stream = await db.stream.findFirst({
    where: { realm_id: actor.realm_id, name: { equals: name, mode: 'insensitive' } },
  });
  if (!stream || stream.is_archived) throw new JsonableError(error);
  if (!(await streamAccess(db, actor, stream)).content) throw new JsonableError(error);
  return stream;
}

/**
 * Who hears about a bot's configuration (Zulip's bot_owner_user_ids): its owner and the
 * realm's active human administrators; only its owner when a default channel of the bot is
 * private.
 */
export async function botOwnerUserIds(
  db: Pick<TxClient, 'userProfile' | 'stream'>,
  bot: Pick<
    UserProfile,
    'realm_id' | 'bot_owner_id' | 'default_sending_stream_id' | 'default_events_register_stream_id'
  >,
): Promise<number[]> {
  const streamIds = [bot.default_sending_stream_id, bot.default_events_register_stream_id].filter(
    (id): id is number => id !== null,
  );
  const isPrivate =
    streamIds.length > 0 && (await db.stream.count({ where: { id: { in: streamIds }, invite_only: true } })) > 0;
  const audience = new Set<number>();
  if (!isPrivate) {
    const admins = await db.userProfile.findMany({
      where: { realm_id: bot.realm_id, is_active: true, is_bot: false, role: { lte: Role.ADMINISTRATOR } },
      select: { id: true },
    });
    for (const admin of admins) audience.add(admin.id);
  }
  if (bot.bot_owner_id !== null) audience.add(bot.bot_owner_id);
  return [...audience];
}
