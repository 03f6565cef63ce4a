// Changing personal message flags (Zulip's do_update_message_flags and the mark-as-read
// actions). Rows are locked in message_id order so concurrent updates cannot deadlock; the
// update_message_flags event lists exactly the messages whose flag changed.

import type { OutboxRow, ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { Prisma, transaction, type Tx, type TxClient } from '@teamchat/db';
import {
  fetchMessageRange,
  messageRangeQuery,
  rangeEnds,
  type CompiledNarrow,
  type RangeRequest,
  dmParticipants,
  hasMessageAccess,
  HISTORICAL_FLAGS,
  MENTION_FLAGS_MASK,
  MESSAGE_FLAG_NAMES,
  MessageFlag,
  NON_API_FLAGS,
  NON_EDITABLE_FLAGS,
  type MessageFlagName,
  type Viewer,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';

export type FlagOperation = 'add' | 'remove';

/** Checks flag and operation with Zulip's errors, in Zulip's order; returns the flag's bit. */
export function checkFlagUpdate(flag: string, operation: string): number {
  if (!MESSAGE_FLAG_NAMES.includes(flag as MessageFlagName) || NON_API_FLAGS.has(flag))
    throw new JsonableError(`Invalid flag: '${flag}'`);
  if (NON_EDITABLE_FLAGS.has(flag)) throw new JsonableError(`Flag not editable: '${flag}'`);
  if (operation !== 'add' && operation !== 'remove')
    throw new JsonableError(`Invalid message flag operation: '${operation}'`);
  return MessageFlag[flag as MessageFlagName];
}

/** The update_message_flags event a flag statement wrote to the outbox (its messages computed by the statement). */
type FlagsOutboxRow = OutboxRow & { payload: { event: { messages: number[] } } };

/**
 * The outbox row of a flag statement: the update_message_flags event for the viewer, listing
 * the messages `updated` (a SQL expression over `from`) in `order`.
 */
function flagsEvent(
  deps: MessagesDeps,
  viewer: Viewer,
  operation: FlagOperation,
  flag: string,
  from: Prisma.Sql,
  order: Prisma.Sql,
) {
  return deps.bus.outboxWrite({
    realmId: viewer.realm_id,
    event: {
      type: 'update_message_flags',
      op: operation,
      operation,
      flag,
      messages: Prisma.sql`COALESCE(jsonb_agg(message_id ORDER BY ${order}), '[]'::jsonb)`,
      all: false,
    },
    users: [viewer.id],
    from,
  });
}

export interface FlagUpdateResult {
  /** Messages whose flag changed, in request order. */
  changed: number[];
  /** Channels whose messages were left read because the user is not subscribed. */
  ignoredChannelIds: number[];
}

/**
 * The common case as one statement (so one transaction): lock the rows in message_id order,
 * change the flag where it differs, and write the event listing what changed to the outbox;
 * then publish it (the outbox relay covers a failure).
 */
async function updateReceivedFlags(
  deps: MessagesDeps,
  viewer: Viewer,
  operation: FlagOperation,
  flag: string,
  bit: number,
  ids: number[],
): Promise<number[]> {
  const adding = operation === 'add';
  const differs = adding ? Prisma.sql`= 0` : Prisma.sql`<> 0`;
  const outbox = flagsEvent(
    deps,
    viewer,
    operation,
    flag,
    Prisma.sql`changed`,
    Prisma.sql`array_position(${ids}::int[], message_id)`,
  );
  const [row] = await deps.db.$queryRaw<FlagsOutboxRow[]>(Prisma.sql`
    WITH locked AS (
      SELECT id FROM user_message
      WHERE user_profile_id = ${viewer.id} AND message_id = ANY(${ids}::int[]) AND (flags & ${bit}) ${differs}
      ORDER BY message_id FOR UPDATE
    ), changed AS (
      UPDATE user_message um SET flags = ${adding ? Prisma.sql`um.flags | ${bit}` : Prisma.sql`um.flags & ${~bit}`}
      FROM locked WHERE um.id = locked.id AND (um.flags & ${bit}) ${differs}
      RETURNING um.message_id
    )
    ${outbox.sql}`);
  await outbox.publish(row);
  return row.payload.event.messages;
}

export interface RangeFlagUpdate {
  processedIds: { first: number | null; last: number | null; count: number };
  updatedCount: number;
  foundOldest: boolean;
  foundNewest: boolean;
  ignoredChannelIds: number[];
}

/**
 * The flag over a narrow's range (POST /messages/flags/narrow). Marking unread goes through
 * doUpdateMessageFlags (channels to skip, details to report); everything else is one statement:
 * the range query, the locked update, historical rows for readable messages never received
 * (the range only holds messages the viewer may read), and the event.
 */
export async function doUpdateFlagsOverRange(
  deps: MessagesDeps,
  viewer: Viewer,
  narrow: CompiledNarrow,
  request: RangeRequest,
  operation: FlagOperation,
  flag: string,
): Promise<RangeFlagUpdate> {
  if (flag === 'read' && operation === 'remove') {
    const range = await fetchMessageRange(deps.db, narrow, request);
    checkFlagUpdate(flag, operation);
    const ids = range.rows.map((row) => row.id);
    const result = await doUpdateMessageFlags(deps, viewer, operation, flag, ids);
    return {
      processedIds: { first: ids[0] ?? null, last: ids.at(-1) ?? null, count: ids.length },
      updatedCount: result.changed.length,
      foundOldest: range.foundOldest,
      foundNewest: range.foundNewest,
      ignoredChannelIds: result.ignoredChannelIds,
    };
  }
  const range = await messageRangeQuery(deps.db, narrow, request);
  const bit = checkFlagUpdate(flag, operation);
  const adding = operation === 'add';
  const target = adding ? bit : 0;
  const differs = adding ? Prisma.sql`= 0` : Prisma.sql`<> 0`;
  const needHistorical = (HISTORICAL_FLAGS & bit) !== target;
  const outbox = flagsEvent(
    deps,
    viewer,
    operation,
    flag,
    Prisma.sql`(SELECT message_id FROM changed UNION ALL SELECT message_id FROM historical) AS updated`,
    Prisma.sql`message_id`,
  );
  const [row] = await deps.db.$queryRaw<
    {
      processed: number;
      first_id: number | null;
      last_id: number | null;
      before_count: number;
      after_count: number;
      outbox: FlagsOutboxRow;
    }[]
  >(Prisma.sql`
    WITH range AS MATERIALIZED (${range.sql}),
    locked AS (
      SELECT um.id FROM user_message um JOIN range r ON r.id = um.message_id
      WHERE um.user_profile_id = ${viewer.id} AND (um.flags & ${bit}) ${differs}
      ORDER BY um.message_id FOR UPDATE OF um
    ), changed AS (
      UPDATE user_message um SET flags = ${adding ? Prisma.sql`um.flags | ${bit}` : Prisma.sql`um.flags & ${~bit}`}
      FROM locked WHERE um.id = locked.id AND (um.flags & ${bit}) ${differs}
      RETURNING um.message_id
    ), historical AS (
      INSERT INTO user_message (user_profile_id, message_id, flags)
      SELECT ${viewer.id}, r.id, ${(HISTORICAL_FLAGS & ~bit) | target}::int FROM range r WHERE ${needHistorical} AND NOT r.received
      ON CONFLICT DO NOTHING
      RETURNING message_id
    ), event AS (${outbox.sql})
    SELECT (SELECT count(*) FROM range)::int AS processed, (SELECT min(id) FROM range) AS first_id, (SELECT max(id) FROM range) AS last_id,
      (SELECT count(*) FROM range WHERE side = 'before')::int AS before_count, (SELECT count(*) FROM range WHERE side = 'after')::int AS after_count,
      jsonb_build_object('id', event.id, 'xid', event.xid, 'payload', event.payload) AS outbox
    FROM event`);
  await outbox.publish(row.outbox);
  if (flag === 'read' && adding) removePushNotifications(deps, viewer, row.outbox.payload.event.messages);
  return {
    processedIds: { first: row.first_id, last: row.last_id, count: row.processed },
    updatedCount: row.outbox.payload.event.messages.length,
    ...rangeEnds(range, row.before_count, row.after_count),
    ignoredChannelIds: [],
  };
}

/** Zulip's do_update_message_flags for `messageIds`, one transaction. */
export async function doUpdateMessageFlags(
  deps: MessagesDeps,
  viewer: Viewer,
  operation: FlagOperation,
  flag: string,
  messageIds: number[],
  options: { allReceived?: boolean } = {},
): Promise<FlagUpdateResult> {
  const bit = checkFlagUpdate(flag, operation);
  const adding = operation === 'add';
  const target = adding ? bit : 0;
  let ids = [...new Set(messageIds)];
  const markingUnread = flag === 'read' && !adding;
  if (!markingUnread && (options.allReceived || (HISTORICAL_FLAGS & bit) === target)) {
    // No historical rows to create and no channels to skip.
    const changed = await updateReceivedFlags(deps, viewer, operation, flag, bit, ids);
    if (flag === 'read' && adding) removePushNotifications(deps, viewer, changed);
    return { changed, ignoredChannelIds: [] };
  }
  return transaction(deps.db, async (tx) => {
    let ignoredChannelIds: number[] = [];
    if (flag === 'read' && !adding && ids.length > 0) {
      // Unread channel messages must be in channels the user is subscribed to. Only this
      // realm's: another realm's message goes on to the access check and is refused exactly
      // like one that does not exist.
      const unsubscribed = await tx.db.$queryRaw<{ id: number; stream_id: number }[]>`
        SELECT m.id, m.stream_id FROM message m
        WHERE m.id = ANY(${ids}::int[]) AND m.stream_id IS NOT NULL AND m.realm_id = ${viewer.realm_id}
          AND m.stream_id NOT IN (SELECT s.stream_id FROM subscription s WHERE s.user_profile_id = ${viewer.id} AND s.active)`;
      const skipped = new Set(unsubscribed.map((row) => row.id));
      ignoredChannelIds = [...new Set(unsubscribed.map((row) => row.stream_id))].sort((a, b) => a - b);
      ids = ids.filter((id) => !skipped.has(id));
    }

    const inserted = new Set<number>();
    // `allReceived`: the ids come from the viewer's own user_message rows (a narrow's range).
    if ((HISTORICAL_FLAGS & bit) !== target && ids.length > 0 && !options.allReceived) {
      // Flags on messages the user can read but never received live on new "historical" rows.
      const existing = await tx.db.$queryRaw<{ message_id: number }[]>`
        SELECT message_id FROM user_message WHERE user_profile_id = ${viewer.id} AND message_id = ANY(${ids}::int[])`;
      const have = new Set(existing.map((row) => row.message_id));
      const missing = ids.filter((id) => !have.has(id));
      if (missing.length > 0) {
        const messages = await tx.db.message.findMany({
          where: { id: { in: missing }, realm_id: viewer.realm_id },
          select: { id: true, realm_id: true, stream_id: true },
        });
        if (messages.length !== missing.length) throw new JsonableError('Invalid message(s)');
        for (const message of messages) {
          if (!(await hasMessageAccess(tx.db, viewer, message))) throw new JsonableError('Invalid message(s)');
        }
        const flags = (HISTORICAL_FLAGS & ~bit) | target;
        await tx.db.$executeRaw`
          INSERT INTO user_message (user_profile_id, message_id, flags)
          SELECT ${viewer.id}, id, ${flags} FROM unnest(${missing}::int[]) AS t(id)`;
        for (const id of missing) inserted.add(id);
      }
    }

    const updated = await tx.db.$queryRaw<{ message_id: number }[]>(Prisma.sql`
      WITH locked AS (
        SELECT id FROM user_message
        WHERE user_profile_id = ${viewer.id} AND message_id = ANY(${ids}::int[]) AND (flags & ${bit}) ${adding ? Prisma.sql`= 0` : Prisma.sql`<> 0`}
        ORDER BY message_id FOR UPDATE
      )
      UPDATE user_message um SET flags = ${adding ? Prisma.sql`um.flags | ${bit}` : Prisma.sql`um.flags & ${~bit}`}
      FROM locked WHERE um.id = locked.id AND (um.flags & ${bit}) ${adding ? Prisma.sql`= 0` : Prisma.sql`<> 0`}
      RETURNING um.message_id`);
    const changedSet = new Set([...updated.map((row) => row.message_id), ...inserted]);
    const changed = ids.filter((id) => changedSet.has(id));

    const details =
      flag === 'read' && !adding ? { message_details: await unreadMessageDetails(tx.db, viewer.id, changed) } : {};
    await deps.bus.sendEventOnCommit(
      tx,
      viewer.realm_id,
      { type: 'update_message_flags', op: operation, operation, flag, messages: changed, all: false, ...details },
      [viewer.id],
    );
    return { changed, ignoredChannelIds };
  });
}

/** The message_details of an update_message_flags event: what a client needs to count a message unread again. */
type MessageDetails = NonNullable<ZulipEventOf<'update_message_flags'>['message_details']>;

/**
 * What clients need to put newly unread messages into their unread_msgs (Zulip's
 * format_unread_message_details).
 */
export async function unreadMessageDetails(
  db: Pick<TxClient, '$queryRaw'>,
  userId: number,
  ids: number[],
): Promise<MessageDetails> {
  if (ids.length === 0) return {};
  const rows = await db.$queryRaw<
    { id: number; stream_id: number | null; topic: string; dm_key: string | null; flags: number; muted: boolean }[]
  >`
    SELECT m.id, m.stream_id, m.topic, m.dm_key, um.flags,
      (COALESCE(s.is_muted, FALSE) OR EXISTS (
        SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = ${userId} AND ut.stream_id = m.stream_id
          AND lower(ut.topic_name) = lower(m.topic) AND ut.visibility_policy = 1)) AS muted
    FROM message m JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${userId}
    LEFT JOIN subscription s ON s.stream_id = m.stream_id AND s.user_profile_id = ${userId}
    WHERE m.id = ANY(${ids}::int[])`;
  const details: MessageDetails = {};
  for (const row of rows) {
    const direct = (row.flags & (MessageFlag.mentioned | MessageFlag.group_mentioned)) !== 0;
    const wildcard =
      (row.flags & (MENTION_FLAGS_MASK & ~(MessageFlag.mentioned | MessageFlag.group_mentioned))) !== 0 && !row.muted;
    const detail: MessageDetails[string] =
      row.stream_id !== null
        ? { type: 'stream', stream_id: row.stream_id, topic: row.topic, unmuted_stream_msg: !row.muted }
        : { type: 'private', user_ids: dmParticipants(row.dm_key!).filter((id) => id !== userId) };
    if (direct || wildcard) detail.mentioned = true;
    details[String(row.id)] = detail;
  }
  return details;
}

/** Marks the user's unread messages matching `condition` read, with one event (Zulip's do_mark_stream_messages_as_read). */
async function markReadWhere(tx: Tx, deps: MessagesDeps, viewer: Viewer, condition: Prisma.Sql): Promise<number[]> {
  const rows = await tx.db.$queryRaw<{ message_id: number }[]>(Prisma.sql`
    WITH locked AS (
      SELECT um.id FROM user_message um JOIN message m ON m.id = um.message_id
      WHERE um.user_profile_id = ${viewer.id} AND (um.flags & ${MessageFlag.read}) = 0 AND ${condition}
      ORDER BY um.message_id FOR UPDATE OF um
    )
    UPDATE user_message um SET flags = um.flags | ${MessageFlag.read}
    FROM locked WHERE um.id = locked.id AND (um.flags & ${MessageFlag.read}) = 0
    RETURNING um.message_id`);
  const ids = rows.map((row) => row.message_id).sort((a, b) => a - b);
  tx.onCommit(() => removePushNotifications(deps, viewer, ids));
  if (ids.length > 0) {
    await deps.bus.sendEventOnCommit(
      tx,
      viewer.realm_id,
      { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: ids, all: false },
      [viewer.id],
    );
  }
  return ids;
}

export async function doMarkStreamAsRead(
  deps: MessagesDeps,
  viewer: Viewer,
  streamId: number,
  topic?: string,
): Promise<number> {
  const condition =
    topic === undefined || topic === ''
      ? Prisma.sql`m.stream_id = ${streamId}`
      : Prisma.sql`m.stream_id = ${streamId} AND lower(m.topic) = lower(${topic})`;
  return transaction(deps.db, async (tx) => (await markReadWhere(tx, deps, viewer, condition)).length);
}

/**
 * Messages just read whose push notifications the user's phones show (flag
 * active_mobile_push_notification): the worker's push-removal job tells the phones to remove
 * them (packages/notifications). After the commit, and never failing the request.
 */
function removePushNotifications(deps: MessagesDeps, viewer: Viewer, messageIds: number[]): void {
  if (messageIds.length === 0) return;
  const active = MessageFlag.active_mobile_push_notification;
  void deps.db
    .$queryRaw<{ message_id: number }[]>(
      Prisma.sql`SELECT message_id FROM user_message WHERE user_profile_id = ${viewer.id}
        AND message_id = ANY(${messageIds}::int[]) AND (flags & ${active}) <> 0`,
    )
    .then(async (rows) => {
      if (rows.length === 0) return;
      await deps.jobs.enqueuePushRemovals([
        { realmId: viewer.realm_id, userId: viewer.id, messageIds: rows.map((row) => row.message_id) },
      ]);
    })
    .catch((error) =>
      deps.logger.warn({ err: error, user_id: viewer.id }, 'enqueueing push notification removals failed'),
    );
}
