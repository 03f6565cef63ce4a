// Bots as those who administer them see them (Zulip's get_owned_bot_dicts, created_bot_event and
// get_service_dicts_for_bots): register's realm_bots and the realm_bot add events. Their API
// keys and webhook tokens are kept sealed (docs/adr/0007) and opened here.
import type { Prisma, TxClient } from '@teamchat/db';
import { BotType } from './roles';
import { openBotSecret } from './secrets';
import { avatarUrl } from './users';

export type BotReader = Pick<TxClient, 'userProfile'>;

/** One entry of `services` (Zulip's BasicBotBase.services): an outgoing webhook or an embedded bot. */
export type BotServiceDict =
  | { base_url: string; interface: number; token: string }
  | { config_data: Record<string, string>; service_name: string };

export interface BotDict {
  email: string;
  user_id: number;
  full_name: string;
  bot_type: number | null;
  is_active: boolean;
  api_key: string;
  default_sending_stream: string | null;
  default_events_register_stream: string | null;
  default_all_public_streams: boolean;
  owner_id: number | null;
  avatar_url: string;
  services: BotServiceDict[];
}

const BOT_INCLUDE = {
  default_sending_stream: { select: { name: true } },
  default_events_register_stream: { select: { name: true } },
  // A bot has one key (regenerating replaces it); the newest kept one is the one shown.
  api_keys: { where: { sealed_key: { not: null } }, orderBy: { id: 'desc' }, take: 1, select: { sealed_key: true } },
  bot_services: { orderBy: { id: 'asc' } },
  bot_config: { orderBy: { id: 'asc' } },
} satisfies Prisma.UserProfileInclude;

type BotRow = Prisma.UserProfileGetPayload<{ include: typeof BOT_INCLUDE }>;

/**
 * The bot's API key, or "" when none can be shown: a bot whose keys all predate sealing (or
 * were sealed under another server secret) still authenticates, and its owner regenerates
 * the key to see one.
 */
function shownApiKey(bot: BotRow, serverSecret: string): string {
  const sealed = bot.api_keys[0]?.sealed_key;
  return (sealed && openBotSecret(sealed, bot.id, serverSecret)) ?? '';
}

/** Zulip's get_service_dicts_for_bot: outgoing webhooks list their services, embedded bots their configuration. */
export function botServiceDicts(
  bot: Pick<BotRow, 'id' | 'bot_type' | 'bot_services' | 'bot_config'>,
  serverSecret: string,
): BotServiceDict[] {
  if (bot.bot_type === BotType.OUTGOING_WEBHOOK) {
    return bot.bot_services.map((service) => ({
      base_url: service.base_url,
      interface: service.interface,
      token: openBotSecret(service.sealed_token, bot.id, serverSecret) ?? '',
    }));
  }
  if (bot.bot_type === BotType.EMBEDDED && bot.bot_config.length > 0 && bot.bot_services.length > 0) {
    return [
      {
        config_data: Object.fromEntries(bot.bot_config.map((entry) => [entry.key, entry.value])),
        service_name: bot.bot_services[0].name,
      },
    ];
  }
  return [];
}

function botDict(bot: BotRow, serverSecret: string): BotDict {
  return {
    email: bot.email,
    user_id: bot.id,
    full_name: bot.full_name,
    bot_type: bot.bot_type,
    is_active: bot.is_active,
    api_key: shownApiKey(bot, serverSecret),
    default_sending_stream: bot.default_sending_stream?.name ?? null,
    default_events_register_stream: bot.default_events_register_stream?.name ?? null,
    default_all_public_streams: bot.default_all_public_streams,
    owner_id: bot.bot_owner_id,
    avatar_url: avatarUrl(bot),
    services: botServiceDicts(bot, serverSecret),
  };
}

/** The bots matching `where` (within bots), in creation order, as realm_bots shows them. */
export async function botDicts(
  db: BotReader,
  where: Prisma.UserProfileWhereInput,
  serverSecret: string,
): Promise<BotDict[]> {
  const bots = await db.userProfile.findMany({
    where: { ...where, is_bot: true },
    include: BOT_INCLUDE,
    orderBy: { id: 'asc' },
  });
  return bots.map((bot) => botDict(bot, serverSecret));
}

/** One bot as realm_bot add shows it (Zulip's created_bot_event). */
export async function botDictById(db: BotReader, botId: number, serverSecret: string): Promise<BotDict> {
  const [dict] = await botDicts(db, { id: botId }, serverSecret);
  return dict;
}
