// Scheduled messages' API shape (Zulip's ScheduledMessage.to_dict), shared by the messages
// service (GET /scheduled_messages, its events) and register's scheduled_messages section.
import type { ScheduledMessage, TxClient } from '@teamchat/db';

/** Zulip's ScheduledMessage.SEND_LATER and REMIND delivery types. */
export const ScheduledMessageDelivery = { sendLater: 1, remind: 2 } as const;

export type ScheduledMessageDict =
  | {
      scheduled_message_id: number;
      type: 'stream';
      to: number;
      topic: string;
      content: string;
      rendered_content: string;
      scheduled_delivery_timestamp: number;
      failed: boolean;
    }
  | {
      scheduled_message_id: number;
      type: 'private';
      to: number[];
      content: string;
      rendered_content: string;
      scheduled_delivery_timestamp: number;
      failed: boolean;
    };

type Row = Pick<
  ScheduledMessage,
  | 'id'
  | 'sender_id'
  | 'type'
  | 'stream_id'
  | 'to'
  | 'topic'
  | 'content'
  | 'rendered_content'
  | 'scheduled_timestamp'
  | 'failed'
>;

/**
 * The API form: a channel message's `to` is the channel id; a direct message's is the other
 * participants, by id (a conversation with oneself lists oneself, as Zulip's get_recipient_ids).
 */
export function scheduledMessageDict(row: Row): ScheduledMessageDict {
  const common = {
    scheduled_message_id: row.id,
    content: row.content,
    rendered_content: row.rendered_content,
    scheduled_delivery_timestamp: Math.floor(row.scheduled_timestamp.getTime() / 1000),
    failed: row.failed,
  };
  if (row.type === 'stream') {
    return { ...common, type: 'stream', to: row.stream_id!, topic: row.topic };
  }
  const others = [...new Set(row.to)].filter((id) => id !== row.sender_id).sort((a, b) => a - b);
  return { ...common, type: 'private', to: others.length ? others : [row.sender_id] };
}

/** A user's undelivered scheduled messages (failed ones included), soonest first: GET /scheduled_messages and register. */
export async function undeliveredScheduledMessages(
  db: Pick<TxClient, 'scheduledMessage'>,
  userId: number,
): Promise<ScheduledMessageDict[]> {
  const rows = await db.scheduledMessage.findMany({
    where: { sender_id: userId, delivered: false, delivery_type: ScheduledMessageDelivery.sendLater },
    orderBy: [{ scheduled_timestamp: 'asc' }, { id: 'asc' }],
  });
  return rows.map(scheduledMessageDict);
}
