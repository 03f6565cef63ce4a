// Who a message goes to: the `to` parameter in its many historical forms (Zulip's
// extract_stream_indicator / extract_private_recipients / Addressee), resolved to a channel
// or to users, with Zulip's errors.

import { JsonableError } from '@teamchat/core';
import type { Realm, Stream, TxClient, UserProfile } from '@teamchat/db';
import {
  checkStreamName,
  EMPTY_TOPIC_DISPLAY_NAME,
  escapeHtml,
  normalizeTopicInput,
  unprintablePosition,
} from '@teamchat/domain';

export type StreamIndicator = string | number;
export type PrivateRecipients = string[] | number[];

/** A channel by name or id: a raw name, a JSON string, a JSON id, or a one-element JSON list. */
export function extractStreamIndicator(raw: string): StreamIndicator {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return raw;
  }
  if (Array.isArray(data)) {
    if (data.length !== 1) throw new JsonableError('Expected exactly one channel');
    data = data[0];
  }
  if (typeof data === 'string') return data;
  if (typeof data === 'number' && Number.isInteger(data)) return data;
  throw new JsonableError('Invalid data type for channel');
}

/** Direct-message recipients: a JSON list of ids or emails, or comma-separated emails. */
export function extractPrivateRecipients(raw: string): PrivateRecipients {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    data = raw;
  }
  if (typeof data === 'string') data = data.split(',');
  if (!Array.isArray(data)) throw new JsonableError('Invalid data type for recipients');
  if (data.length === 0) return [];
  const mixed = () => new JsonableError('Recipient lists may contain emails or user IDs, but not both.');
  if (typeof data[0] === 'string') {
    if (data.some((item) => typeof item !== 'string')) throw mixed();
    return [...new Set((data as string[]).map((email) => email.trim()))].filter(Boolean);
  }
  if (typeof data[0] !== 'number' || !Number.isInteger(data[0]))
    throw new JsonableError('Invalid data type for recipients');
  if (data.some((item) => typeof item !== 'number' || !Number.isInteger(item))) throw mixed();
  return [...new Set(data as number[])];
}

/** Zulip's check_string_is_printable for a (normalized) topic. */
export function checkTopicPrintable(topic: string): void {
  const position = unprintablePosition(topic);
  if (position !== null) throw new JsonableError(`Invalid character in topic, at position ${position}!`);
}

/** A channel topic as given: stripped, display names of the empty topic mapped to "". */
export function checkTopicInput(topic: string): string {
  const normalized = normalizeTopicInput(topic.trim());
  checkTopicPrintable(normalized);
  return normalized;
}

/** The channel's topics_policy, or the realm's where the channel inherits it. */
function topicsPolicyOf(realm: Pick<Realm, 'topics_policy'>, stream: Pick<Stream, 'topics_policy'>): string {
  return stream.topics_policy === 'inherit' ? realm.topics_policy : stream.topics_policy;
}

/**
 * Whether the channel's topics_policy allows the (truncated) topic. `checkEmptyTopic: false`
 * skips the disable_empty_topic rule (an edit that neither changes the topic nor moves channels).
 */
export function checkTopicsPolicy(
  realm: Pick<Realm, 'topics_policy'>,
  stream: Pick<Stream, 'topics_policy'>,
  topic: string,
  options: { checkEmptyTopic?: boolean } = {},
): void {
  const policy = topicsPolicyOf(realm, stream);
  if ((options.checkEmptyTopic ?? true) && policy === 'disable_empty_topic' && topic === '') {
    throw new JsonableError(
      `Sending messages to the ${EMPTY_TOPIC_DISPLAY_NAME} topic is not allowed in this channel.`,
    );
  }
  if (policy === 'empty_topic_only' && topic !== '') {
    throw new JsonableError(`Only the ${EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.`);
  }
}

type Reader = Pick<TxClient, 'stream' | 'userProfile'>;

/** Zulip's STREAM_DOES_NOT_EXIST for a channel named by id or by (trimmed) name. */
export function streamDoesNotExist(indicator: StreamIndicator): JsonableError {
  if (typeof indicator === 'number') {
    return new JsonableError(`Channel with ID '${indicator}' does not exist`, {
      code: 'STREAM_DOES_NOT_EXIST',
      data: { stream_id: indicator },
    });
  }
  return new JsonableError(`Channel '${escapeHtml(indicator)}' does not exist`, {
    code: 'STREAM_DOES_NOT_EXIST',
    data: { stream: escapeHtml(indicator) },
  });
}

/** The channel to send to; a channel that does not exist is STREAM_DOES_NOT_EXIST. */
export async function streamForSending(db: Reader, realmId: number, indicator: StreamIndicator): Promise<Stream> {
  if (typeof indicator === 'number') {
    const stream = await db.stream.findFirst({ where: { id: indicator, realm_id: realmId } });
    if (!stream) throw streamDoesNotExist(indicator);
    return stream;
  }
  const name = indicator.trim();
  checkStreamName(name);
  const stream = await db.stream.findFirst({
    where: { realm_id: realmId, name: { equals: name, mode: 'insensitive' } },
  });
  if (!stream) throw streamDoesNotExist(name);
  return stream;
}

/** Users named by email or id, in the realm; the first unknown one is Zulip's error. */
export async function usersForRecipients(
  db: Reader,
  realmId: number,
  recipients: PrivateRecipients,
): Promise<UserProfile[]> {
  if (recipients.length === 0) return [];
  if (typeof recipients[0] === 'number') {
    const ids = recipients as number[];
    const users = await db.userProfile.findMany({ where: { realm_id: realmId, id: { in: ids } } });
    const byId = new Map(users.map((user) => [user.id, user]));
    return ids.map((id) => byId.get(id) ?? raise(`Invalid user ID ${id}`));
  }
  const emails = recipients as string[];
  const users = await db.userProfile.findMany({
    where: {
      realm_id: realmId,
      OR: emails.map((email) => ({ email: { equals: email, mode: 'insensitive' as const } })),
    },
  });
  const byEmail = new Map(users.map((user) => [user.email.toLowerCase(), user]));
  return emails.map((email) => byEmail.get(email.toLowerCase()) ?? raise(`Invalid email '${email}'`));
}

function raise(msg: string): never {
  throw new JsonableError(msg);
}
