// An incoming webhook's request becomes messages (Zulip's webhook_view + check_send_webhook_message):
// the integration reads the request, the URL says where the messages go, and each is sent by the
// bot through the one send path (doSendMessage). A request the bot's owner must fix (a body that
// is not JSON, a missing event header, a channel that does not exist) also gets the owner a direct
// message, at most one per bot every 5 minutes (Zulip's send_rate_limited_pm_notification_to_bot_owner).

import { JsonableError, type Requester } from '@teamchat/core';
import type { MessagesDeps } from '../deps';
import { type StreamIndicator } from '../lib/recipients';
import {
  MissingHttpEventHeaderError,
  type WebhookIntegration,
  type WebhookMessage,
  type WebhookRequest,
} from '../webhooks/integration';
import { doSendMessage } from './send-message';

/** Where the URL sends the messages and which events it wants. */
export interface WebhookTarget {
  /** A channel name, or its id in decimal; absent: a direct message to the bot's owner. */
  stream?: string;
  /** Replaces every message's own topic. */
  topic?: string;
  onlyEvents?: string[];
  excludeEvents?: string[];
}

/** Zulip's INVALID_JSON_MESSAGE, stripped. */
const invalidJsonNotice = (webhookName: string) =>
  `Hi there! It looks like you tried to set up the Zulip ${webhookName} integration,\n` +
  `but didn't correctly configure the webhook to send data in the JSON format\n` +
  `that this integration expects!`;

/** Zulip's MISSING_EVENT_HEADER_MESSAGE. */
const missingHeaderNotice = (botName: string, path: string, header: string, integrationName: string) =>
  `Hi there!  Your bot ${botName} just sent an HTTP request to ${path} that\n` +
  `is missing the HTTP ${header} header.  Because this header is how\n` +
  `${integrationName} indicates the event type, this usually indicates a configuration\n` +
  `issue, where you either entered the URL for a different integration, or are running\n` +
  `an older version of the third-party service that doesn't provide that header.\n` +
  `Contact the server's administrators if you need help debugging!\n`;

/** Zulip's BOT_OWNER_STREAM_ALERT_WAITPERIOD. */
const OWNER_NOTICE_INTERVAL_SECONDS = 5 * 60;

/** Zulip's "Malformed JSON": the body is not what a JSON integration reads. */
export class InvalidWebhookJsonError extends JsonableError {
  constructor() {
    super('Malformed JSON', { code: 'INVALID_JSON' });
  }
}

/** Python's fnmatch (Unix shell wildcards: * ? [seq] [!seq]), as only_events/exclude_events match. */
export function fnmatch(name: string, pattern: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) source += '\\[';
      else {
        let set = pattern.slice(i + 1, end).replaceAll('\\', '\\\\');
        if (set.startsWith('!')) set = '^' + set.slice(1);
        else if (set.startsWith('^')) set = '\\' + set;
        source += `[${set}]`;
        i = end;
      }
    } else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's').test(name);
}

/** Python's urllib.parse.unquote: runs of %XX decoded as UTF-8 (bad bytes as U+FFFD), the rest kept. */
function pythonUnquote(text: string): string {
  const decoder = new TextDecoder();
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
    decoder.decode(Uint8Array.from(run.slice(1).split('%'), (hex) => parseInt(hex, 16))),
  );
}

function wanted(message: WebhookMessage, target: WebhookTarget): boolean {
  const eventType = message.eventType;
  if (eventType === undefined) return true;
  if (target.onlyEvents && !target.onlyEvents.some((pattern) => fnmatch(eventType, pattern))) return false;
  if (target.excludeEvents?.some((pattern) => fnmatch(eventType, pattern))) return false;
  return true;
}

const sendOptions = (webhookName: string) => ({ sendingClient: `Zulip${webhookName}Webhook`, readBySender: false });

/** The sending bot (or person), with what the notices and direct messages need of their row. */
type WebhookSender = Requester & { fullName: string; botOwnerId: number | null };

/** The bot's owner, told of a problem only they can fix: at most once per bot every 5 minutes. */
async function notifyBotOwner(deps: MessagesDeps, bot: WebhookSender, webhookName: string, content: string) {
  if (!bot.botOwnerId) return;
  const key = `${deps.env.REDIS_PREFIX}webhook-owner-notice:${bot.userId}`;
  if ((await deps.redis.set(key, '1', 'EX', OWNER_NOTICE_INTERVAL_SECONDS, 'NX')) !== 'OK') return;
  await doSendMessage(deps, bot, {
    type: 'private',
    to: [bot.botOwnerId],
    content,
    options: sendOptions(webhookName),
  });
}

export async function doReceiveWebhook(
  deps: MessagesDeps,
  requester: Requester,
  integration: WebhookIntegration,
  request: WebhookRequest,
  target: WebhookTarget,
  path: string,
): Promise<void> {
  const row = await deps.db.userProfile.findUniqueOrThrow({
    where: { id: requester.userId },
    select: { full_name: true, bot_owner_id: true },
  });
  const bot: WebhookSender = { ...requester, fullName: row.full_name, botOwnerId: row.bot_owner_id };
  let messages: WebhookMessage[];
  try {
    messages = await integration.messages(request);
  } catch (error) {
    if (error instanceof InvalidWebhookJsonError) {
      await notifyBotOwner(deps, bot, integration.webhookName, invalidJsonNotice(integration.webhookName));
    } else if (error instanceof MissingHttpEventHeaderError) {
      const notice = missingHeaderNotice(bot.fullName, path, error.header, error.integrationName);
      await notifyBotOwner(deps, bot, integration.webhookName, notice);
    }
    throw error;
  }
  const where: WebhookTarget = integration.unquoteUrlParameters
    ? {
        ...target,
        stream: target.stream === undefined ? undefined : pythonUnquote(target.stream),
        topic: target.topic === undefined ? undefined : pythonUnquote(target.topic),
      }
    : target;
  for (const message of messages.filter((each) => wanted(each, target))) {
    await sendWebhookMessage(deps, bot, integration.webhookName, message, where);
  }
}

async function sendWebhookMessage(
  deps: MessagesDeps,
  bot: WebhookSender,
  webhookName: string,
  message: WebhookMessage,
  target: WebhookTarget,
): Promise<void> {
  if (target.stream === undefined) {
    // Zulip assumes a bot here; a person's key without a channel has nobody to write to.
    if (!bot.botOwnerId) throw new JsonableError('Missing channel');
    await doSendMessage(deps, bot, {
      type: 'private',
      to: [bot.botOwnerId],
      content: message.content,
      options: sendOptions(webhookName),
    });
    return;
  }
  const to: StreamIndicator = /^[0-9]+$/.test(target.stream) ? Number(target.stream) : target.stream;
  try {
    await doSendMessage(deps, bot, {
      type: 'stream',
      to,
      topic: target.topic ?? message.topic,
      content: message.content,
      options: sendOptions(webhookName),
    });
  } catch (error) {
    if (!(error instanceof JsonableError && error.code === 'STREAM_DOES_NOT_EXIST')) throw error;
    const notice =
      typeof to === 'number'
        ? `Your bot \`${bot.email}\` tried to send a message to channel ID ${to}, but there is no channel with that ID.`
        : `Your bot \`${bot.email}\` tried to send a message to channel #**${to.trim()}**, but that channel does not exist. ` +
          `Click [here](#channels/new) to create it.`;
    await notifyBotOwner(deps, bot, webhookName, notice);
    // Zulip answers a channel named by id with the error, and one named by name with success (the
    // owner is told instead: the tool cannot fix its URL).
    if (typeof to === 'number') throw error;
  }
}
