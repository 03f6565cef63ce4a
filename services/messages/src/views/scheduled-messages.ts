import { JsonableError, optional, param, pathInt, required, v, type AuthedContext } from '@teamchat/core';
import { undeliveredScheduledMessages } from '@teamchat/domain';
import {
  checkDeliveryTime,
  doDeleteScheduledMessage,
  doDeliverScheduledMessage,
  doEditScheduledMessage,
  doScheduleMessage,
} from '../actions/scheduled-messages';
import type { MessagesDeps } from '../deps';
import { defaultReadBySender, sendingClientName } from '../lib/client';

const recipientId = v.id();

/** Zulip's extract_stream_id: one channel id. */
function channelIdOf(raw: string): number {
  const trimmed = raw.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) throw new JsonableError('Invalid data type for channel ID');
  return recipientId(Number(trimmed), 'to');
}

/** Zulip's extract_direct_message_recipient_ids: a JSON list of user ids, without repeats. */
function recipientIdsOf(raw: string): number[] {
  let decoded: unknown;
  try {
    decoded = JSON.parse(raw);
  } catch {
    decoded = raw;
  }
  if (!Array.isArray(decoded)) throw new JsonableError('Invalid data type for recipients');
  for (const item of decoded) {
    if (typeof item !== 'number' || !Number.isInteger(item))
      throw new JsonableError('Recipient list may only contain user IDs');
  }
  return [...new Set((decoded as number[]).map((id) => recipientId(id, 'to')))];
}

const parseTo = (type: 'stream' | 'private', raw: string) =>
  type === 'stream' ? channelIdOf(raw) : recipientIdsOf(raw);

/** "direct"/"channel" are the newer names of "private"/"stream". */
const recipientType = (type: string): 'stream' | 'private' =>
  type === 'stream' || type === 'channel' ? 'stream' : 'private';

/** A delivery time as Unix seconds the database can hold. */
const timestamp = param.timestamp();

/** GET /scheduled_messages */
export async function getScheduledMessages({ deps, requester }: AuthedContext<MessagesDeps>) {
  return { scheduled_messages: await undeliveredScheduledMessages(deps.db, requester.userId) };
}

/** POST /scheduled_messages */
export async function createScheduledMessage({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    type: required(param.enumString('direct', 'private', 'stream', 'channel')),
    to: required(param.string({ allowNullBytes: true })),
    topic: optional(param.string({ allowNullBytes: true }), undefined, { aliases: ['subject'] }),
    content: required(param.string({ allowNullBytes: true })),
    scheduled_delivery_timestamp: required(timestamp),
    read_by_sender: optional(param.bool()),
  });
  const deliverAt = checkDeliveryTime(parsed.scheduled_delivery_timestamp);
  const type = recipientType(parsed.type);
  const sendingClient = sendingClientName(req, undefined);
  const id = await doScheduleMessage(deps, requester, {
    address:
      type === 'stream'
        ? { type, streamId: channelIdOf(parsed.to), topic: parsed.topic }
        : { type, to: recipientIdsOf(parsed.to) },
    content: parsed.content,
    deliverAt,
    readBySender: parsed.read_by_sender,
    sendingClient,
    defaultReadBySender: defaultReadBySender(sendingClient),
  });
  return { scheduled_message_id: id };
}

/** PATCH /scheduled_messages/{scheduled_message_id} */
export async function updateScheduledMessage({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const id = pathInt(req, 'scheduled_message_id');
  const parsed = params.parse({
    type: optional(param.enumString('direct', 'private', 'stream', 'channel')),
    to: optional(param.string({ allowNullBytes: true })),
    topic: optional(param.string({ allowNullBytes: true }), undefined, { aliases: ['subject'] }),
    content: optional(param.string({ allowNullBytes: true })),
    scheduled_delivery_timestamp: optional(timestamp),
  });
  if (Object.values(parsed).every((value) => value === undefined)) throw new JsonableError('Nothing to change');
  const type = parsed.type === undefined ? undefined : recipientType(parsed.type);
  if (type !== undefined && parsed.to === undefined)
    throw new JsonableError('Recipient required when updating type of scheduled message.');
  if (type === 'stream' && parsed.topic === undefined)
    throw new JsonableError('Topic required when updating scheduled message type to stream.');
  const deliverAt =
    parsed.scheduled_delivery_timestamp === undefined
      ? undefined
      : checkDeliveryTime(parsed.scheduled_delivery_timestamp);
  await doEditScheduledMessage(deps, requester, id, {
    type,
    to: parsed.to,
    topic: parsed.topic,
    content: parsed.content,
    deliverAt,
    sendingClient: sendingClientName(req, undefined),
    parseTo,
  });
  return {};
}

/** DELETE /scheduled_messages/{scheduled_message_id} */
export async function deleteScheduledMessage({ deps, requester, req }: AuthedContext<MessagesDeps>) {
  await doDeleteScheduledMessage(deps, requester, pathInt(req, 'scheduled_message_id'));
  return {};
}

/**
 * POST /internal/scheduled_messages/{id}/deliver: the worker's delivery of a due scheduled
 * message, as its sender (no gateway rule reaches /internal: only a service's token does).
 */
export async function deliverScheduledMessage({ deps, requester, req }: AuthedContext<MessagesDeps>) {
  return doDeliverScheduledMessage(deps, requester.userId, pathInt(req, 'scheduled_message_id'));
}
