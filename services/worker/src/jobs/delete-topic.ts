// delete-topic: deletes a topic's messages for the channels service (POST /streams/{id}/delete_topic).
//
// Batches of 100 messages, newest first (Zulip's delete_in_topic); each batch is one atomic
// statement that also writes its delete_message event to the outbox, so a crash between
// batches loses nothing and repeats nothing: a restarted job finds the messages that are left.
// When the channel's oldest message goes, first_message_id moves (a stream update event);
// uploads only these messages linked go to the uploads clean-up job; phones showing a push
// notification of one of them are told to remove it; once the topic is gone, the stale
// per-topic visibility rows are reset.

import type { Job } from 'bullmq';
import { JOB_QUEUES, type DeleteTopicJobData, type OutboxRow } from '@teamchat/bus';
import { Prisma, sqlPool, transaction } from '@teamchat/db';
import { MessageFlag, messageActionAudienceSql, type MessageActionStream } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import type { JobProcessor } from './processor';

export const DELETE_TOPIC_BATCH_SIZE = 100;
/** How often the job reports its progress (deleted messages so far), in batches. */
const PROGRESS_EVERY_BATCHES = 10;

/** The batch to delete next: the topic's newest messages (for protected history, those the administrator received). */
function batchQuery(data: DeleteTopicJobData): Prisma.Sql {
  const received =
    data.onlyReceivedBy === null
      ? Prisma.empty
      : Prisma.sql`JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${data.onlyReceivedBy}`;
  return Prisma.sql`
    SELECT m.id, m.topic FROM message m ${received}
    WHERE m.stream_id = ${data.streamId} AND lower(m.topic) = lower(${data.topic})
    ORDER BY m.id DESC LIMIT ${DELETE_TOPIC_BATCH_SIZE} FOR UPDATE OF m`;
}

interface BatchResult {
  deleted: number;
  /** Publishes the batch's events and hands its orphaned uploads to the clean-up job. */
  afterCommit(): Promise<void>;
}

/**
 * Deletes one batch: how many messages went (0: the topic is done), and what to do now that
 * it is committed.
 *
 * The whole batch is ONE SQL statement, atomic on its own: lock the batch, find who hears of it
 * (messageActionAudienceSql) and which uploads only they link (attachmentsOrphanedBy's query, inlined), delete
 * them (user_message, reactions and attachment links cascade), move first_message_id if the
 * channel's oldest message goes, and write the delete_message (and stream update) events to
 * the outbox. After it commits they are published (and the relay sends them if that publish
 * fails). One round trip per batch instead of a transaction of seven.
 */
async function deleteBatch(
  deps: BaseDeps,
  data: DeleteTopicJobData,
  stream: MessageActionStream,
): Promise<BatchResult> {
  const audience = Prisma.sql`audience.users`;
  const deleteEvent = deps.bus.outboxWrite({
    realmId: data.realmId,
    event: {
      type: 'delete_message',
      message_ids: Prisma.sql`(SELECT jsonb_agg(id ORDER BY id) FROM batch)`,
      message_type: 'stream',
      stream_id: data.streamId,
      topic: Prisma.sql`(SELECT topic FROM batch ORDER BY id DESC LIMIT 1)`,
    },
    users: audience,
    from: Prisma.sql`audience WHERE EXISTS (SELECT 1 FROM batch) AND jsonb_array_length(audience.users) > 0`,
  });
  const streamEvent = deps.bus.outboxWrite({
    realmId: data.realmId,
    event: {
      type: 'stream',
      op: 'update',
      property: 'first_message_id',
      value: Prisma.sql`first_moved.first_message_id`,
      stream_id: data.streamId,
      name: Prisma.sql`first_moved.name`,
    },
    users: audience,
    from: Prisma.sql`first_moved, audience WHERE jsonb_array_length(audience.users) > 0`,
  });
  const statement = Prisma.sql`
    WITH batch AS (${batchQuery(data)}),
    -- Who hears of the deletion: the messages service's rule (messageActionAudience), and the
    -- deleting administrator, as Zulip's do_delete_messages with acting_user.
    recipients AS (
      ${messageActionAudienceSql(Prisma.sql`ARRAY(SELECT id FROM batch)`, stream)}
      UNION SELECT ${data.actingUserId}::int
    ),
    orphans AS (
      SELECT DISTINCT am.attachment_id AS id FROM attachment_message am JOIN batch ON am.message_id = batch.id
      WHERE NOT EXISTS (
        SELECT 1 FROM attachment_message other
        WHERE other.attachment_id = am.attachment_id AND other.message_id NOT IN (SELECT id FROM batch)
      )
    ),
    -- The phones to tell, read before the delete cascades (every part of one statement sees the
    -- same snapshot).
    shown AS (
      SELECT user_profile_id, array_agg(message_id ORDER BY message_id) AS message_ids FROM user_message
      WHERE message_id = ANY(ARRAY(SELECT id FROM batch))
        AND (flags & ${MessageFlag.active_mobile_push_notification}) <> 0
      GROUP BY user_profile_id
    ),
    -- = ANY(ARRAY(...)): an index scan of the 100 ids (a join with the CTE may scan the table).
    removed AS (DELETE FROM message m WHERE m.id = ANY(ARRAY(SELECT id FROM batch)) RETURNING m.id),
    audience AS (SELECT coalesce(jsonb_agg(id ORDER BY id), '[]'::jsonb) AS users FROM recipients),
    delete_event AS (${deleteEvent.sql}),
    first_moved AS (
      UPDATE stream s SET first_message_id = (
        SELECT m.id FROM message m
        WHERE m.stream_id = ${data.streamId} AND m.id NOT IN (SELECT id FROM batch)
        ORDER BY m.id LIMIT 1)
      WHERE s.id = ${data.streamId} AND s.first_message_id IN (SELECT id FROM batch)
      RETURNING s.first_message_id, s.name
    ),
    stream_event AS (${streamEvent.sql})
    SELECT
      (SELECT count(*)::int FROM removed) AS deleted,
      (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM orphans) AS orphans,
      (SELECT coalesce(jsonb_agg(shown), '[]') FROM shown) AS shown,
      (SELECT to_jsonb(e) FROM delete_event e) AS delete_row,
      (SELECT to_jsonb(e) FROM stream_event e) AS stream_row`;
  // Hundreds of these run in a row: a named statement on the pool under Prisma (see sqlPool).
  type BatchRow = {
    deleted: number;
    orphans: number[];
    shown: { user_profile_id: number; message_ids: number[] }[];
    delete_row: OutboxRow | null;
    stream_row: OutboxRow | null;
  };
  const { rows } = await sqlPool(deps.db).query<BatchRow>({
    // One name per statement text (the batch query's and the audience's shapes).
    name: `delete-topic-batch${data.onlyReceivedBy === null ? '' : '-received'}${stream.history_public_to_subscribers ? '' : '-protected'}`,
    text: statement.text,
    values: statement.values,
  });
  const result = rows[0];
  return {
    deleted: result.deleted,
    async afterCommit() {
      if (result.delete_row) await deleteEvent.publish(result.delete_row);
      if (result.stream_row) await streamEvent.publish(result.stream_row);
      if (result.orphans.length) {
        const cleanup = deps.jobs.queue(JOB_QUEUES.uploadsCleanup);
        await cleanup.add(JOB_QUEUES.uploadsCleanup, { attachmentIds: result.orphans });
      }
      await deps.jobs.enqueuePushRemovals(
        result.shown.map((row) => ({
          realmId: data.realmId,
          userId: row.user_profile_id,
          messageIds: row.message_ids,
          deleted: true,
        })),
      );
    },
  };
}

/**
 * The topic no longer exists: reset everyone's visibility policy for it (for protected
 * history, only for those left with no message of it).
 */
async function resetStaleUserTopics(deps: BaseDeps, data: DeleteTopicJobData): Promise<void> {
  await transaction(deps.db, async (tx) => {
    let rows = await tx.db.$queryRaw<{ id: number; user_profile_id: number; topic_name: string }[]>`
      SELECT id, user_profile_id, topic_name FROM user_topic
      WHERE stream_id = ${data.streamId} AND lower(topic_name) = lower(${data.topic}) FOR UPDATE`;
    if (rows.length && data.onlyReceivedBy !== null) {
      const stillReading = await tx.db.$queryRaw<{ id: number }[]>`
        SELECT DISTINCT um.user_profile_id AS id FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE m.stream_id = ${data.streamId} AND lower(m.topic) = lower(${data.topic})
          AND um.user_profile_id = ANY(${rows.map((row) => row.user_profile_id)}::int[])`;
      const keep = new Set(stillReading.map((row) => row.id));
      rows = rows.filter((row) => !keep.has(row.user_profile_id));
    }
    if (rows.length === 0) return;
    await tx.db.$executeRaw`DELETE FROM user_topic WHERE id = ANY(${rows.map((row) => row.id)}::int[])`;
    const now = Math.floor(Date.now() / 1000);
    for (const row of rows) {
      await deps.bus.sendEventOnCommit(
        tx,
        data.realmId,
        {
          type: 'user_topic',
          stream_id: data.streamId,
          topic_name: row.topic_name,
          last_updated: now,
          visibility_policy: 0,
        },
        [row.user_profile_id],
      );
    }
  });
}

export async function processDeleteTopic(job: Job<DeleteTopicJobData>, deps: BaseDeps): Promise<{ deleted: number }> {
  const data = job.data;
  const stream = await deps.db.stream.findUnique({
    where: { id: data.streamId },
    select: { id: true, invite_only: true, history_public_to_subscribers: true },
  });
  if (!stream) return { deleted: 0 };
  // A resumed job continues the count of the attempt that crashed (as last reported).
  let deleted = typeof job.progress === 'number' ? job.progress : 0;
  // Each batch's Redis work (its events; progress every few batches) overlaps the next batch's
  // statement, one batch behind.
  let previous: Promise<unknown> = Promise.resolve();
  for (let batches = 1; ; batches++) {
    const batch = await deleteBatch(deps, data, stream);
    await previous;
    if (batch.deleted === 0) break;
    deleted += batch.deleted;
    const progress = deleted;
    const reportsProgress = batches % PROGRESS_EVERY_BATCHES === 0;
    previous = batch.afterCommit().then(() => (reportsProgress ? job.updateProgress(progress) : undefined));
  }
  await job.updateProgress(deleted);
  await resetStaleUserTopics(deps, data);
  return { deleted };
}

export const deleteTopicProcessor: JobProcessor<typeof JOB_QUEUES.deleteTopic> = {
  queue: JOB_QUEUES.deleteTopic,
  concurrency: 2,
  process: processDeleteTopic,
};
