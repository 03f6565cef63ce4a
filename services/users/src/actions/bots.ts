// Bots: creating them with their outgoing webhook service, changing what their owners and
// administrators may change, deactivating them (Zulip's add_bot_backend's do_create_user and
// add_service, zerver/actions/bots.py, do_update_outgoing_webhook_service,
// do_update_bot_config_data). Their keys and tokens are kept sealed (docs/adr/0007).

import { JsonableError } from '@teamchat/core';
import { transaction, type Realm, type Tx, type UserProfile } from '@teamchat/db';
import {
  botDictById,
  BotType,
  generateApiKey,
  isAdministrator,
  lockRealm,
  openBotSecret,
  Role,
  sealBotSecret,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { botOwnerUserIds } from '../lib/bots';
import { activeUserIds } from '../lib/users';
import { changeFullName, createUserInTransaction, deactivateInTransaction, sendBotUpdate } from './users';

type Deps = Pick<BaseDeps, 'db' | 'bus' | 'redis' | 'env'>;

/** Zulip's BOT_CONFIG_SIZE_LIMIT: the characters of a bot's configuration, keys and values. */
const BOT_CONFIG_SIZE_LIMIT = 10_000;

export interface NewBot {
  email: string;
  fullName: string;
  botType: number;
  /** Outgoing webhooks: where to post, in which format, under which service name. */
  payloadUrl: string;
  interfaceType: number;
  serviceName: string;
  defaultSendingStreamId: number | null;
  defaultEventsRegisterStreamId: number | null;
  defaultAllPublicStreams: boolean;
}

/**
 * Creates a bot owned by `owner`: the account (realm_user add), an outgoing webhook's service
 * with a new token, then realm_bot add to those who administer it (Zulip's notify_created_bot).
 */
export async function doCreateBot(
  deps: Deps,
  realm: Realm,
  owner: UserProfile,
  input: NewBot,
): Promise<{ bot: UserProfile; apiKey: string }> {
  return transaction(deps.db, async (tx) => {
    const { user: bot, apiKey } = await createUserInTransaction(
      deps,
      tx,
      realm,
      {
        email: input.email,
        fullName: input.fullName,
        role: Role.MEMBER,
        botType: input.botType,
        botOwnerId: owner.id,
        defaultSendingStreamId: input.defaultSendingStreamId,
        defaultEventsRegisterStreamId: input.defaultEventsRegisterStreamId,
        defaultAllPublicStreams: input.defaultAllPublicStreams,
        description: 'bot',
      },
      null,
    );
    if (input.botType === BotType.OUTGOING_WEBHOOK) {
      await tx.db.botService.create({
        data: {
          user_profile_id: bot.id,
          name: input.serviceName,
          base_url: input.payloadUrl,
          interface: input.interfaceType,
          sealed_token: sealBotSecret(generateApiKey(), bot.id, deps.env.INTERNAL_JWT_SECRET),
        },
      });
    }
    await deps.bus.sendEventOnCommit(
      tx,
      bot.realm_id,
      { type: 'realm_bot', op: 'add', bot: await botDictById(tx.db, bot.id, deps.env.INTERNAL_JWT_SECRET) },
      await botOwnerUserIds(tx.db, bot),
    );
    return { bot, apiKey };
  });
}

export interface BotUpdate {
  fullName?: string;
  owner?: UserProfile;
  /** null: no default channel. */
  defaultSendingStreamId?: number | null;
  defaultEventsRegisterStreamId?: number | null;
  defaultAllPublicStreams?: boolean;
  service?: { payloadUrl: string; interface: number };
  configData?: Record<string, string>;
}

/** PATCH /bots/{bot_id}'s changes (the role aside), all or nothing; returns the bot as it is after them. */
export async function doUpdateBot(deps: Deps, botId: number, update: BotUpdate): Promise<UserProfile> {
  return transaction(deps.db, async (tx) => {
    let bot = await tx.db.userProfile.findUniqueOrThrow({ where: { id: botId } });
    if (update.fullName !== undefined) bot = await changeFullName(deps, tx, bot.id, update.fullName);
    if (update.owner !== undefined && update.owner.id !== bot.bot_owner_id) {
      bot = await changeBotOwner(deps, tx, bot, update.owner);
    }
    if (update.defaultSendingStreamId !== undefined) {
      bot = await tx.db.userProfile.update({
        where: { id: bot.id },
        data: { default_sending_stream_id: update.defaultSendingStreamId },
      });
      const id = update.defaultSendingStreamId;
      await sendBotUpdate(deps, tx, bot, { default_sending_stream: id === null ? null : await streamName(tx, id) });
    }
    if (update.defaultEventsRegisterStreamId !== undefined) {
      bot = await tx.db.userProfile.update({
        where: { id: bot.id },
        data: { default_events_register_stream_id: update.defaultEventsRegisterStreamId },
      });
      const id = update.defaultEventsRegisterStreamId;
      await sendBotUpdate(deps, tx, bot, {
        default_events_register_stream: id === null ? null : await streamName(tx, id),
      });
    }
    if (update.defaultAllPublicStreams !== undefined) {
      bot = await tx.db.userProfile.update({
        where: { id: bot.id },
        data: { default_all_public_streams: update.defaultAllPublicStreams },
      });
      await sendBotUpdate(deps, tx, bot, { default_all_public_streams: update.defaultAllPublicStreams });
    }
    if (update.service !== undefined) await updateOutgoingWebhookService(deps, tx, bot, update.service);
    if (update.configData !== undefined) await updateBotConfigData(deps, tx, bot, update.configData);
    return bot;
  });
}

async function streamName(tx: Tx, streamId: number): Promise<string> {
  return (await tx.db.stream.findUniqueOrThrow({ where: { id: streamId }, select: { name: true } })).name;
}

/**
 * Gives the bot to `owner` (Zulip's do_change_bot_owner and send_bot_owner_update_events): a
 * previous owner who is not an administrator loses it from their list (realm_bot delete), a
 * new owner who is not one gains it (realm_bot add), the others hear the new owner_id, and
 * everyone the new bot_owner_id of the user.
 */
async function changeBotOwner(deps: Deps, tx: Tx, bot: UserProfile, owner: UserProfile): Promise<UserProfile> {
  const previous =
    bot.bot_owner_id === null ? null : await tx.db.userProfile.findUnique({ where: { id: bot.bot_owner_id } });
  const updated = await tx.db.userProfile.update({ where: { id: bot.id }, data: { bot_owner_id: owner.id } });
  const updateAudience = new Set(await botOwnerUserIds(tx.db, updated));
  if (previous && !isAdministrator(previous.role)) {
    await deps.bus.sendEventOnCommit(tx, bot.realm_id, { type: 'realm_bot', op: 'delete', bot: { user_id: bot.id } }, [
      previous.id,
    ]);
    updateAudience.delete(previous.id);
  }
  if (!isAdministrator(owner.role)) {
    const dict = await botDictById(tx.db, bot.id, deps.env.INTERNAL_JWT_SECRET);
    await deps.bus.sendEventOnCommit(tx, bot.realm_id, { type: 'realm_bot', op: 'add', bot: dict }, [owner.id]);
    updateAudience.delete(owner.id);
  }
  await deps.bus.sendEventOnCommit(
    tx,
    bot.realm_id,
    { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, owner_id: owner.id } },
    [...updateAudience],
  );
  await deps.bus.sendEventOnCommit(
    tx,
    bot.realm_id,
    { type: 'realm_user', op: 'update', person: { user_id: bot.id, bot_owner_id: owner.id } },
    await activeUserIds(tx.db, bot.realm_id),
  );
  return updated;
}

/** Zulip's do_update_outgoing_webhook_service: the bot's (one) service gets the new URL and format. */
async function updateOutgoingWebhookService(
  deps: Deps,
  tx: Tx,
  bot: UserProfile,
  change: { payloadUrl: string; interface: number },
): Promise<void> {
  const service = await tx.db.botService.findFirst({ where: { user_profile_id: bot.id }, orderBy: { id: 'asc' } });
  // Only outgoing webhook bots have one.
  if (!service) throw new JsonableError('No such bot');
  const updated = await tx.db.botService.update({
    where: { id: service.id },
    data: { base_url: change.payloadUrl, interface: change.interface },
  });
  const token = openBotSecret(updated.sealed_token, bot.id, deps.env.INTERNAL_JWT_SECRET) ?? '';
  await sendBotUpdate(deps, tx, bot, {
    services: [{ base_url: updated.base_url, interface: updated.interface, token }],
  });
}

/** Zulip's do_update_bot_config_data: sets the keys given, within the size limit; the event carries the whole configuration. */
async function updateBotConfigData(
  deps: Deps,
  tx: Tx,
  bot: UserProfile,
  configData: Record<string, string>,
): Promise<void> {
  const existing = await tx.db.botConfigData.findMany({ where: { bot_profile_id: bot.id } });
  const merged = new Map(existing.map((entry) => [entry.key, entry.value]));
  for (const [key, value] of Object.entries(configData)) merged.set(key, value);
  const size = [...merged].reduce((sum, [key, value]) => sum + key.length + value.length, 0);
  if (size > BOT_CONFIG_SIZE_LIMIT) {
    throw new JsonableError(
      `Cannot store configuration. Request would require ${size} characters. The current configuration size limit is ${BOT_CONFIG_SIZE_LIMIT} characters.`,
    );
  }
  for (const [key, value] of Object.entries(configData)) {
    await tx.db.botConfigData.upsert({
      where: { bot_profile_id_key: { bot_profile_id: bot.id, key } },
      create: { bot_profile_id: bot.id, key, value },
      update: { value },
    });
  }
  await sendBotUpdate(deps, tx, bot, { services: [{ config_data: Object.fromEntries(merged) }] });
}

/** DELETE /bots/{bot_id} (Zulip's deactivate_bot_backend): deactivating an inactive bot changes nothing. */
export async function doDeactivateBot(deps: Deps, realmId: number, botId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const bot = await tx.db.userProfile.findUniqueOrThrow({ where: { id: botId } });
    if (!bot.is_active) return;
    await deactivateInTransaction(deps, tx, bot);
  });
}
