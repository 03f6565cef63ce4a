// Deleting a topic (a BullMQ job, packages/bus/src/jobs.ts) and per-topic visibility (user_topic).
import { createHash } from 'node:crypto';
import { JOB_QUEUES, type DeleteTopicJobData } from '@teamchat/bus';
import { JsonableError, OrganizationAdministratorRequiredError } from '@teamchat/core';
import { transaction, type Tx, type UserProfile } from '@teamchat/db';
import { accessStreamById, INVALID_CHANNEL_ID, isAdministrator, viewerOf, VisibilityPolicy } from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';

/** One job per (channel, topic): a repeated request joins the running job. */
export function deleteTopicJobId(job: DeleteTopicJobData): string {
  const topicKey = createHash('sha1').update(job.topic.toLowerCase()).digest('hex').slice(0, 16);
  return `delete-topic-${job.streamId}-${topicKey}${job.onlyReceivedBy === null ? '' : `-u${job.onlyReceivedBy}`}`;
}

/**
 * Deletes the topic's messages in batches in the worker and waits up to the budget.
 * Returns whether everything is gone (complete) or the job goes on in the background.
 */
export async function doDeleteTopic(
  deps: ChannelsDeps,
  user: UserProfile,
  streamId: number,
  topic: string,
): Promise<boolean> {
  if (!isAdministrator(user.role)) throw new OrganizationAdministratorRequiredError();
  const { stream } = await accessStreamById(deps.db, viewerOf(user), streamId, { requireActiveChannel: true });
  const job: DeleteTopicJobData = {
    realmId: user.realm_id,
    streamId: stream.id,
    topic,
    actingUserId: user.id,
    onlyReceivedBy: stream.history_public_to_subscribers ? null : user.id,
  };
  return deps.jobs.runWithBudget(
    JOB_QUEUES.deleteTopic,
    deleteTopicJobId(job),
    job,
    deps.config.DELETE_TOPIC_BUDGET_MS,
  );
}

/**
 * Sets the user's policy for a topic (messages or not). Removing a policy (0) needs only the
 * channel to exist, so one can clean up after losing access (Zulip's
 * access_stream_to_remove_visibility_policy_by_id). No change, no event.
 */
export async function doSetUserTopicVisibility(
  deps: ChannelsDeps,
  user: UserProfile,
  streamId: number,
  topic: string,
  policy: number,
): Promise<void> {
  if (policy === VisibilityPolicy.INHERIT) {
    if (!(await deps.db.stream.findFirst({ where: { id: streamId, realm_id: user.realm_id } })))
      throw new JsonableError(INVALID_CHANNEL_ID);
  } else {
    await accessStreamById(deps.db, viewerOf(user), streamId, { requireActiveChannel: true });
  }
  await transaction(deps.db, async (tx) => {
    const db = tx.db;
    const [existing] = await db.$queryRaw<{ id: number; visibility_policy: number }[]>`
      SELECT id, visibility_policy FROM user_topic
      WHERE user_profile_id = ${user.id} AND stream_id = ${streamId} AND lower(topic_name) = lower(${topic})
      FOR UPDATE`;
    const now = new Date();
    if (policy === VisibilityPolicy.INHERIT) {
      if (!existing) return;
      await db.userTopic.delete({ where: { id: existing.id } });
    } else if (existing) {
      if (existing.visibility_policy === policy) return;
      await db.userTopic.update({ where: { id: existing.id }, data: { visibility_policy: policy, last_updated: now } });
    } else {
      await db.userTopic.create({
        data: {
          user_profile_id: user.id,
          stream_id: streamId,
          topic_name: topic,
          visibility_policy: policy,
          last_updated: now,
        },
      });
    }
    await sendUserTopicEvents(deps, tx, user, streamId, topic, policy, now);
  });
}

async function sendUserTopicEvents(
  deps: ChannelsDeps,
  tx: Tx,
  user: UserProfile,
  streamId: number,
  topic: string,
  policy: number,
  at: Date,
): Promise<void> {
  // The deprecated muted_topics event carries the whole list of muted topics.
  const muted = await tx.db.$queryRaw<{ name: string; topic_name: string; last_updated: Date }[]>`
    SELECT s.name, ut.topic_name, ut.last_updated FROM user_topic ut JOIN stream s ON s.id = ut.stream_id
    WHERE ut.user_profile_id = ${user.id} AND ut.visibility_policy = ${VisibilityPolicy.MUTED} ORDER BY ut.id`;
  await deps.bus.sendEventOnCommit(
    tx,
    user.realm_id,
    {
      type: 'muted_topics',
      muted_topics: muted.map((row) => [row.name, row.topic_name, Math.floor(row.last_updated.getTime() / 1000)]),
    },
    [user.id],
  );
  await deps.bus.sendEventOnCommit(
    tx,
    user.realm_id,
    {
      type: 'user_topic',
      stream_id: streamId,
      topic_name: topic,
      last_updated: Math.floor(at.getTime() / 1000),
      visibility_policy: policy,
    },
    [user.id],
  );
}
