// Shared pieces of the messages service's tests.
import type { Stack } from '@teamchat/stack';

/** An event on the intake (transient events such as typing are only there; committed ones: captureEvents). */
export interface OutboxEvent {
  event: Record<string, any> & { type: string };
  users: (number | ({ id: number } & Record<string, unknown>))[];
  /** Local echo of a sent message, beside the event. */
  echo?: { queueId: string; localId: string };
}

export const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

/** Ids of the users an event goes to (recipients may carry per-user fields), sorted. */
export function recipientIds(event: OutboxEvent): number[] {
  return sorted(event.users.map((user) => (typeof user === 'number' ? user : user.id)));
}

export async function userMessageFlags(stack: Stack, messageId: number): Promise<Map<number, number>> {
  const rows = await stack.db.userMessage.findMany({ where: { message_id: messageId } });
  return new Map(rows.map((row) => [row.user_profile_id, row.flags]));
}

/**
 * Many channel messages at once, straight in the database (a fixture: the send path has its
 * own tests), each with an unread user_message row for every recipient. Returns their ids.
 */
export async function bulkChannelMessages(
  stack: Stack,
  input: { senderId: number; streamId: number; topic?: string; count: number; recipientIds: number[] },
): Promise<number[]> {
  const rows = await stack.db.$queryRaw<{ id: number }[]>`
    INSERT INTO message (realm_id, sender_id, stream_id, topic, content, rendered_content)
    SELECT ${stack.realm.id}, ${input.senderId}, ${input.streamId}, ${input.topic ?? 'bulk'}, 'message ' || g, '<p>message ' || g || '</p>'
    FROM generate_series(1, ${input.count}) g
    RETURNING id`;
  const ids = rows.map((row) => row.id).sort((a, b) => a - b);
  await stack.db.$executeRaw`
    INSERT INTO user_message (user_profile_id, message_id, flags)
    SELECT u, m, 0 FROM unnest(${input.recipientIds}::int[]) u CROSS JOIN unnest(${ids}::int[]) m`;
  return ids;
}

/** The id of the newest entry on the realm's intake stream (transient events are only there). */
export async function intakeMark(stack: Stack): Promise<string> {
  const key = stack.deps.bus.keys.intakeStream(stack.deps.bus.partitionOf(stack.realm.id));
  const newest = (await stack.redis.xrevrange(key, '+', '-', 'COUNT', 1)) as [string, string[]][];
  return newest[0]?.[0] ?? '0-0';
}

/** Events published to the realm's intake stream after `mark`, oldest first. */
export async function intakeSince(stack: Stack, mark: string, type?: string): Promise<OutboxEvent[]> {
  const key = stack.deps.bus.keys.intakeStream(stack.deps.bus.partitionOf(stack.realm.id));
  const entries = (await stack.redis.xrange(key, `(${mark}`, '+')) as [string, string[]][];
  return entries
    .map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]) as OutboxEvent & { realmId: number })
    .filter((entry) => entry.realmId === stack.realm.id && (type === undefined || entry.event.type === type))
    .map(({ event, users }) => ({ event, users }));
}

/** Many plain active members at once, straight in the database (for audience-size tests). */
export async function bulkUsers(stack: Stack, count: number, prefix: string): Promise<number[]> {
  const rows = await stack.db.$queryRaw<{ id: number }[]>`
    INSERT INTO user_profile (realm_id, email, delivery_email, full_name)
    SELECT ${stack.realm.id}, ${prefix} || g || '@example.com', ${prefix} || g || '@example.com', 'Crowd ' || g
    FROM generate_series(1, ${count}) g
    RETURNING id`;
  return rows.map((row) => row.id);
}
