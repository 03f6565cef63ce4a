// Scheduled messages' reads and the checks a message to schedule passes (Zulip's check_message
// as check_schedule_message and edit_scheduled_message run it): the same address, permission,
// topic and mention rules as sending, without the write.

import { JsonableError, ResourceNotFoundError, type Requester } from '@teamchat/core';
import { Prisma, type ScheduledMessage, type TxClient } from '@teamchat/db';
import {
  activeSubscriberIds,
  dmKey,
  inaccessibleUserIds,
  loadActor,
  loadMarkdownData,
  renderMessageMarkdown,
  SERVER_LIMITS,
  truncateText,
} from '@teamchat/domain';
import { normalizeBody } from '../actions/send-message';
import type { MessagesDeps } from '../deps';
import { checkMentions } from './mentions';
import { checkCanSendDirectMessage, checkCanSendToStream } from './permissions';
import { checkTopicInput, checkTopicsPolicy, streamForSending, usersForRecipients } from './recipients';

export const SCHEDULED_MESSAGE_NOT_FOUND = 'Scheduled message does not exist';

/** Zulip's access_scheduled_message: the sender's own scheduled message (locked when asked), else 404. */
export async function accessScheduledMessage(
  db: Pick<TxClient, '$queryRaw'>,
  userId: number,
  id: number,
  options: { lock?: boolean } = {},
): Promise<ScheduledMessage> {
  const lock = options.lock ? Prisma.sql`FOR UPDATE` : Prisma.empty;
  const [row] = await db.$queryRaw<ScheduledMessage[]>`
    SELECT * FROM scheduled_message
    WHERE id = ${id} AND sender_id = ${userId} AND delivery_type = 1 ${lock}`;
  if (!row) throw new ResourceNotFoundError(SCHEDULED_MESSAGE_NOT_FOUND);
  return row;
}

/** Where a message to schedule goes, as the API gives it. */
export type ScheduledAddress =
  { type: 'stream'; streamId: number; topic: string | undefined } | { type: 'private'; to: number[] };

/** The columns of a checked message to schedule. */
export interface CheckedScheduledMessage {
  type: 'stream' | 'private';
  stream_id: number | null;
  to: number[];
  topic: string;
  content: string;
  rendered_content: string;
}

/**
 * Checks a message as sending it now would (in Zulip's order: address, body, channel or
 * recipients, then the mentions its rendering holds) and returns what to store.
 */
export async function checkScheduledMessage(
  deps: Pick<MessagesDeps, 'db'>,
  requester: Requester,
  address: ScheduledAddress,
  rawContent: string,
): Promise<CheckedScheduledMessage> {
  const db = deps.db;
  let topicInput = '';
  if (address.type === 'stream') {
    if (address.topic === undefined) throw new JsonableError('Missing topic');
    topicInput = checkTopicInput(address.topic);
  } else if (address.to.length === 0) {
    throw new JsonableError('Message must have recipients');
  }
  const recipients = address.type === 'private' ? await usersForRecipients(db, requester.realmId, address.to) : [];
  const content = normalizeBody(rawContent);
  const { user: sender, realm } = await loadActor(db, requester.userId);
  const viewer = { id: sender.id, realm_id: sender.realm_id, role: sender.role };
  const rendering = renderMessageMarkdown(content, await loadMarkdownData(db, viewer, content));
  if (address.type === 'stream') {
    const topic = truncateText(topicInput, SERVER_LIMITS.max_topic_length, '...');
    const stream = await streamForSending(db, requester.realmId, address.streamId);
    await checkCanSendToStream(db, sender, stream);
    checkTopicsPolicy(realm, stream, topic);
    await checkMentions(
      db,
      sender,
      {
        streamId: stream.id,
        topic,
        subscriberCount: async () => (await activeSubscriberIds(db, [stream.id])).get(stream.id)!.length,
      },
      rendering,
    );
    return { type: 'stream', stream_id: stream.id, to: [], topic, content, rendered_content: rendering.html };
  }
  for (const user of recipients) {
    if (!user.is_active) throw new JsonableError(`'${user.email}' is no longer using Zulip.`);
  }
  if ((await inaccessibleUserIds(db, viewer, recipients)).size > 0) {
    throw new JsonableError('You do not have permission to access some of the recipients.');
  }
  await checkCanSendDirectMessage(db, sender, recipients, dmKey([sender.id, ...recipients.map((user) => user.id)]));
  await checkMentions(db, sender, null, rendering);
  const to = [...new Set(recipients.map((user) => user.id))].sort((a, b) => a - b);
  return { type: 'private', stream_id: null, to, topic: '', content, rendered_content: rendering.html };
}
