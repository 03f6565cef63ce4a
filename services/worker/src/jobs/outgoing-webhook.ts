// outgoing-webhook: posts a message to an outgoing webhook bot's service and sends the service's
// answer as the bot's reply, as Zulip's OutgoingWebhookWorker does (zerver/worker/outgoing_webhooks.py,
// zerver/lib/outgoing_webhook.py). The messages service enqueues one job per message and bot
// (a mention in a channel, or a direct message to the bot).
//
// What happens, Zulip's way:
// - a 2xx answer: its `content` (generic interface; Slack's: `text`) is posted as the bot's reply
//   where the message was (same channel and topic, or the same direct message conversation);
//   `response_not_required`, no content or empty content: nothing;
// - an answer that is not JSON (or not an object), or whose reply the server refuses: the bot
//   says "Failure! <why>" there and its owner is told by direct message;
// - another status: "Failure! Third party responded with <status>", and the owner is told;
// - a timeout or a connection error: the job is tried again (OUTGOING_WEBHOOK_ATTEMPTS in
//   packages/bus); after the last try, "Failure! Bot is unavailable" and the owner is told;
// - an address the operator does not allow (lib/outgoing-http.ts): never called; as Zulip's
//   proxy answering 407, the bot says so and its owner is told the URL is not allowed.
// Replies are sent through the messages service's POST /api/v1/messages, as the bot: the send
// path's checks and events apply, and a bot's messages trigger no webhook (no loops).

import type { Job } from 'bullmq';
import { callService, JsonableError, type Requester } from '@teamchat/core';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import {
  buildWideMessageDicts,
  finalizeMessageDict,
  MESSAGE_DICT_COLUMNS,
  realmUrl,
  openBotSecret,
  ZULIP_VERSION,
  type WideMessageDict,
} from '@teamchat/domain';
import type { UserProfile } from '@teamchat/db';
import { DisallowedAddressError, guardedPost, parseAllowedHosts, RequestTimeoutError } from '../lib/outgoing-http';
import type { JobProcessor, WorkerDeps } from './processor';

type OutgoingWebhookJobData = JobData['outgoing-webhook'];

/** Zulip's Service.interface values (zerver/models/bots.py). */
const SLACK_INTERFACE = 2;

/** Zulip's hash_util_encode (zerver/lib/url_encoding.py): a component of a #narrow URL. */
function hashEncode(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/\./g, '%2E')
    .replace(/%/g, '.');
}

/** Zulip's near_message_url: the message in its conversation. */
function nearMessageUrl(base: string, message: WideMessageDict): string {
  if (typeof message.display_recipient === 'string') {
    const channel = `${message.stream_id}-${hashEncode(message.display_recipient.replace(/ /g, '-'))}`;
    return `${base}/#narrow/channel/${channel}/topic/${hashEncode(message.subject)}/near/${message.id}`;
  }
  const ids = message.display_recipient.map((recipient) => recipient.id).join(',');
  return `${base}/#narrow/dm/${ids}-pm/near/${message.id}`;
}

/** Python's repr of a str (or, with `asBytes`, of bytes), as Zulip's notice quotes an answer with !r. */
export function pythonRepr(text: string | Buffer, asBytes: boolean): string {
  const units: string[] = asBytes ? [...(text as Buffer)].map((byte) => String.fromCharCode(byte)) : [...String(text)];
  const joined = units.join('');
  const quote = joined.includes("'") && !joined.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of units) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f || (asBytes && code > 0x7e) || (code >= 0x80 && code < 0xa0)) {
      out += `\\x${code.toString(16).padStart(2, '0')}`;
    } else out += ch;
  }
  return `${asBytes ? 'b' : ''}${quote}${out}${quote}`;
}

interface Trigger {
  data: OutgoingWebhookJobData;
  bot: UserProfile;
  message: WideMessageDict;
  messageUrl: string;
  realm: { id: number; host: string };
}

function actingAs(bot: UserProfile): Requester {
  return { userId: bot.id, realmId: bot.realm_id, role: bot.role, email: bot.email, isBot: true };
}

/** Zulip's send_response_message: the bot's message where the triggering one was. */
async function sendReply(deps: WorkerDeps, trigger: Trigger, content: string, widgetContent?: unknown): Promise<void> {
  const { message, bot } = trigger;
  const address =
    typeof message.display_recipient === 'string'
      ? { type: 'stream', to: String(message.stream_id), topic: message.subject }
      : {
          type: 'private',
          to: JSON.stringify(message.display_recipient.map((user) => user.id).filter((id) => id !== bot.id)),
        };
  await callService(deps.config.MESSAGES_URL, deps.env.INTERNAL_JWT_SECRET, {
    method: 'POST',
    path: '/api/v1/messages',
    actingAs: actingAs(bot),
    params: {
      ...address,
      content,
      client: 'OutgoingWebhookResponse',
      ...(widgetContent !== undefined && widgetContent !== null && { widget_content: JSON.stringify(widgetContent) }),
    },
  });
}

/** Zulip's fail_with_message: the bot says what went wrong where it was asked (if it still can). */
async function failWithMessage(deps: WorkerDeps, trigger: Trigger, failure: string): Promise<void> {
  await sendReply(deps, trigger, `Failure! ${failure}`).catch((error) =>
    deps.logger.warn({ err: error, message_id: trigger.message.id }, 'outgoing webhook failure reply not sent'),
  );
}

/** Zulip's notify_bot_owner: a direct message from the bot to its owner. */
async function notifyBotOwner(
  deps: WorkerDeps,
  trigger: Trigger,
  details: { status?: number; responseContent?: string; failureMessage?: string },
): Promise<void> {
  const { bot } = trigger;
  if (bot.bot_owner_id === null) return;
  let notice = `[A message](${trigger.messageUrl}) to your bot @_**${bot.full_name}** triggered an outgoing webhook.`;
  if (details.failureMessage) notice += `\n${details.failureMessage}`;
  else if (details.status === 407)
    notice += '\nThe URL configured for the webhook is for a private or disallowed network.';
  else if (details.status) notice += `\nThe webhook got a response with status code *${details.status}*.`;
  if (details.responseContent) {
    notice += `\nThe response contains the following payload:\n\`\`\`\n${details.responseContent}\n\`\`\``;
  }
  await callService(deps.config.MESSAGES_URL, deps.env.INTERNAL_JWT_SECRET, {
    method: 'POST',
    path: '/api/v1/messages',
    actingAs: actingAs(bot),
    params: {
      type: 'private',
      to: JSON.stringify([bot.bot_owner_id]),
      content: notice,
      client: 'OutgoingWebhookResponse',
    },
  });
}

/** The request to one service, in its interface's format (Zulip's make_request); null: not sent. */
function serviceRequest(
  trigger: Trigger,
  service: { base_url: string; interface: number },
  token: string,
): { body: string; contentType: string } | null {
  const { message, bot, data, realm } = trigger;
  if (service.interface === SLACK_INTERFACE) {
    if (typeof message.display_recipient !== 'string') return null;
    // Slack's legacy outgoing webhook fields, as Zulip fills them.
    const form = new URLSearchParams([
      ['token', token],
      ['team_id', `T${realm.id}`],
      ['team_domain', realm.host],
      ['channel_id', `C${message.stream_id}`],
      ['channel_name', message.display_recipient],
      ['thread_ts', String(message.timestamp)],
      ['timestamp', String(message.timestamp)],
      ['user_id', `U${message.sender_id}`],
      ['user_name', message.sender_full_name],
      ['text', message.content],
      ['trigger_word', data.trigger],
      ['service_id', String(bot.id)],
    ]);
    return { body: form.toString(), contentType: 'application/x-www-form-urlencoded' };
  }
  const payload = {
    data: message.content,
    message: {
      ...finalizeMessageDict(message, { applyMarkdown: false, clientGravatar: false, allowEmptyTopicName: true }),
      rendered_content: message.rendered_content,
    },
    bot_email: bot.email,
    bot_full_name: bot.full_name,
    token,
    trigger: data.trigger,
  };
  return { body: JSON.stringify(payload), contentType: 'application/json' };
}

/** Zulip's process_success: the reply a 2xx answer asks for, if any. */
function replyOf(answer: unknown, slack: boolean): { content: string; widgetContent?: unknown } | null {
  if (answer === '') return null;
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
    throw new JsonableError('Invalid response format');
  }
  const fields = answer as Record<string, unknown>;
  let reply: { content: string; widgetContent?: unknown } | null = null;
  if (slack) {
    if ('text' in fields) reply = { content: String(fields.text) };
  } else if (fields.response_not_required) {
    return null;
  } else if ('response_string' in fields) {
    reply = { content: String(fields.response_string) };
  } else if ('content' in fields) {
    reply = { content: String(fields.content), widgetContent: fields.widget_content };
  }
  return reply && reply.content.trim() !== '' ? reply : null;
}

async function processOutgoingWebhook(job: Job<OutgoingWebhookJobData>, deps: WorkerDeps): Promise<string> {
  const data = job.data;
  const [bot, row, services] = await Promise.all([
    deps.db.userProfile.findUnique({ where: { id: data.botId } }),
    deps.db.message.findUnique({ where: { id: data.messageId }, select: MESSAGE_DICT_COLUMNS }),
    deps.db.botService.findMany({ where: { user_profile_id: data.botId }, orderBy: { id: 'asc' } }),
  ]);
  if (!bot || !bot.is_active || !row) return 'skipped';
  const realm = await deps.db.realm.findUniqueOrThrow({ where: { id: bot.realm_id } });
  const [message] = await buildWideMessageDicts(deps.db, [row]);
  const trigger: Trigger = {
    data,
    bot,
    message,
    messageUrl: nearMessageUrl(realmUrl(realm, deps.env.EXTERNAL_SCHEME), message),
    realm,
  };
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const started = Date.now();
  for (const service of services) {
    const slack = service.interface === SLACK_INTERFACE;
    const token = openBotSecret(service.sealed_token, bot.id, deps.env.INTERNAL_JWT_SECRET) ?? '';
    const request = serviceRequest(trigger, service, token);
    if (request === null) {
      await failWithMessage(deps, trigger, "Slack outgoing webhooks don't support direct messages.");
      continue;
    }
    let response;
    try {
      response = await guardedPost({
        url: service.base_url,
        ...request,
        userAgent: `ZulipOutgoingWebhook/${ZULIP_VERSION}`,
        timeoutSeconds: deps.config.OUTGOING_WEBHOOK_TIMEOUT_SECONDS,
        allowedHosts: parseAllowedHosts(deps.config.OUTGOING_WEBHOOK_ALLOWED_HOSTS),
      });
    } catch (error) {
      if (error instanceof DisallowedAddressError) {
        deps.logger.warn({ bot_id: bot.id, host: error.host }, 'outgoing webhook to a disallowed address refused');
        await failWithMessage(deps, trigger, 'Third party responded with 407');
        await notifyBotOwner(deps, trigger, { status: 407 });
        continue;
      }
      // A timeout or a connection that failed: Zulip retries those (request_retry).
      if (!lastAttempt) throw error;
      const failureMessage =
        error instanceof RequestTimeoutError ? error.message : 'A connection error occurred. Is my bot server down?';
      deps.logger.warn({ err: error, bot_id: bot.id, message_id: message.id }, 'outgoing webhook retries exhausted');
      await failWithMessage(deps, trigger, 'Bot is unavailable');
      await notifyBotOwner(deps, trigger, { failureMessage });
      continue;
    }
    deps.logger.info(
      { bot_id: bot.id, message_id: message.id, status: response.status, ms: Date.now() - started },
      'outgoing webhook called',
    );
    if (response.status < 200 || response.status >= 300) {
      await failWithMessage(deps, trigger, `Third party responded with ${response.status}`);
      await notifyBotOwner(deps, trigger, {
        status: response.status,
        responseContent: response.body.length > 0 ? pythonRepr(response.body, true) : undefined,
      });
      continue;
    }
    const text = response.body.toString('utf8');
    try {
      let answer: unknown;
      try {
        answer = JSON.parse(text);
      } catch {
        throw new JsonableError('Invalid JSON in response');
      }
      const reply = replyOf(answer, slack);
      if (reply) await sendReply(deps, trigger, reply.content, reply.widgetContent);
    } catch (error) {
      // A reply the server refused (a 4xx) is the service's mistake, told as Zulip tells it;
      // anything else (the messages service unreachable) is retried.
      if (!(error instanceof JsonableError) || error.status >= 500) throw error;
      await failWithMessage(deps, trigger, error.message);
      await notifyBotOwner(deps, trigger, {
        responseContent: pythonRepr(text, false),
        failureMessage: `The outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> ${error.message}`,
      });
    }
  }
  return 'done';
}

export const outgoingWebhookProcessor: JobProcessor<typeof JOB_QUEUES.outgoingWebhook> = {
  queue: JOB_QUEUES.outgoingWebhook,
  concurrency: 8,
  process: processOutgoingWebhook,
};
