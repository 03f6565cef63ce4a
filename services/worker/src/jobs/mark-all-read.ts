// Mark all as read (Zulip's do_mark_all_as_read), for POST /mark_all_as_read of the messages
// service. Batches of `batchSize` unread rows, newest first; each batch is one statement
// that marks its rows and writes its update_message_flags event to the outbox, so a worker that
// dies mid-job loses at most an uncommitted batch. When BullMQ hands the stalled job to another
// worker, it simply continues with what is still unread: nothing is marked or announced twice.
import type { Job } from 'bullmq';
import { JOB_QUEUES, type MarkAllReadJobData, type OutboxRow } from '@teamchat/bus';
import { Prisma } from '@teamchat/db';
import { MessageFlag } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import type { JobProcessor } from './processor';

const READ = MessageFlag.read;

/**
 * One batch as one statement (so one transaction): mark the newest unread rows read and write
 * the update_message_flags event listing them to the outbox; then publish it (the outbox relay
 * publishes it if this process dies first).
 */
async function markBatchRead(deps: BaseDeps, data: MarkAllReadJobData, published: Promise<void>[]): Promise<number> {
  // The unread partial index (user_profile_id, message_id) WHERE (flags & 1) = 0 serves the
  // newest-first scan. FOR UPDATE re-checks that condition on rows another transaction changed
  // while we waited for them, so concurrent runs never mark (or announce) a row twice.
  const outbox = deps.bus.outboxWrite({
    realmId: data.realmId,
    event: {
      type: 'update_message_flags',
      op: 'add',
      operation: 'add',
      flag: 'read',
      messages: Prisma.sql`jsonb_agg(message_id ORDER BY message_id)`,
      all: false,
    },
    users: [data.userId],
    from: Prisma.sql`batch HAVING count(*) > 0`,
  });
  const rows = await deps.db.$queryRaw<{ count: number; outbox: OutboxRow | null }[]>(Prisma.sql`
    WITH batch AS (
      UPDATE user_message um SET flags = um.flags | ${READ}
      FROM (
        SELECT id FROM user_message
        WHERE user_profile_id = ${data.userId} AND (flags & ${READ}) = 0
        ORDER BY message_id DESC LIMIT ${data.batchSize}
        FOR UPDATE
      ) selected
      WHERE um.id = selected.id
      RETURNING um.message_id
    ), event AS (${outbox.sql})
    SELECT (SELECT count(*) FROM batch)::int AS count,
      CASE WHEN event.id IS NULL THEN NULL
        ELSE jsonb_build_object('id', event.id, 'xid', event.xid, 'payload', event.payload) END AS outbox
    FROM (SELECT 1) AS one LEFT JOIN event ON TRUE`);
  const [row] = rows;
  // Not awaited before the next batch: one Redis connection keeps the events in order.
  if (row.outbox) published.push(outbox.publish(row.outbox));
  return row.count;
}

/** Progress (rows marked so far) is reported at most this often. */
const PROGRESS_INTERVAL_MS = 250;

export async function markAllRead(job: Job<MarkAllReadJobData>, deps: BaseDeps): Promise<{ marked: number }> {
  const data = job.data;
  const published: Promise<void>[] = [];
  let marked = 0;
  let reported = Date.now();
  for (;;) {
    const count = await markBatchRead(deps, data, published);
    if (count === 0) break;
    marked += count;
    if (Date.now() - reported >= PROGRESS_INTERVAL_MS || data.pauseMs > 0) {
      await job.updateProgress({ marked });
      reported = Date.now();
    }
    if (data.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, data.pauseMs));
  }
  await Promise.all(published);
  await job.updateProgress({ marked });
  if (marked > 0) await removePushNotifications(deps, data);
  return { marked };
}

/** The push notifications the user's phones show for messages now read are removed (push-removal, packages/notifications). */
async function removePushNotifications(deps: BaseDeps, data: MarkAllReadJobData): Promise<void> {
  const active = MessageFlag.active_mobile_push_notification;
  const rows = await deps.db.$queryRaw<{ message_id: number }[]>(Prisma.sql`
    SELECT message_id FROM user_message
    WHERE user_profile_id = ${data.userId} AND (flags & ${active}) <> 0 AND (flags & ${READ}) <> 0`);
  if (rows.length === 0) return;
  await deps.jobs.enqueuePushRemovals([
    { realmId: data.realmId, userId: data.userId, messageIds: rows.map((row) => row.message_id) },
  ]);
}

export const markAllReadProcessor: JobProcessor<typeof JOB_QUEUES.markAllRead> = {
  queue: JOB_QUEUES.markAllRead,
  concurrency: 4,
  process: markAllRead,
};
