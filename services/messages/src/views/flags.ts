import { JsonableError, LIST_LIMITS, optional, param, required, v, type AuthedContext } from '@teamchat/core';
import { accessStreamById, compileNarrow, loadActor, parseAnchor, parseNarrow, viewerOf } from '@teamchat/domain';
import { doMarkStreamAsRead, doUpdateFlagsOverRange, doUpdateMessageFlags, type FlagOperation } from '../actions/flags';
import { doMarkAllAsRead } from '../actions/mark-all-read';
import type { MessagesDeps } from '../deps';

/** Zulip's MAX_MESSAGES_PER_UPDATE. */
const MAX_MESSAGES_PER_UPDATE = LIST_LIMITS.messagesPerFlagUpdate;

/** POST /messages/flags */
export async function updateMessageFlags({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const { messages, op, flag } = params.parse({
    messages: required(param.json(v.list(v.id(), { maxLength: MAX_MESSAGES_PER_UPDATE }))),
    op: required(param.string()),
    flag: required(param.string()),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  const result = await doUpdateMessageFlags(deps, viewerOf(user), op as FlagOperation, flag, messages);
  // The request's ids, as Zulip answers for backwards compatibility; the skipped channels always,
  // as Zulip 10.2's server answers (empty but for marking unread) and its web app requires.
  return { messages, ignored_because_not_subscribed_channels: result.ignoredChannelIds };
}

/** POST /messages/flags/narrow */
export async function updateMessageFlagsForNarrow({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    anchor: required(param.string()),
    include_anchor: optional(param.bool(), true),
    num_before: required(param.int({ min: 0 })),
    num_after: required(param.int({ min: 0 })),
    narrow: required(param.json((value, name) => parseNarrow(value, name))),
    op: required(param.string()),
    flag: required(param.string()),
  });
  const anchor = parseAnchor(parsed.anchor, false);
  if (parsed.num_before > 0 && parsed.num_after > 0 && !parsed.include_anchor) {
    throw new JsonableError('The anchor can only be excluded at an end of the range');
  }
  // Clamp so num_before + num_after <= 5000, num_before keeping at least half when both are large.
  const numBefore = Math.min(
    parsed.num_before,
    Math.max(MAX_MESSAGES_PER_UPDATE - parsed.num_after, MAX_MESSAGES_PER_UPDATE / 2),
  );
  const numAfter = Math.min(parsed.num_after, MAX_MESSAGES_PER_UPDATE - numBefore);

  const { user } = await loadActor(deps.db, requester.userId);
  const viewer = viewerOf(user);
  const narrow = await compileNarrow(deps.db, viewer, parsed.narrow);
  const result = await doUpdateFlagsOverRange(
    deps,
    viewer,
    narrow,
    { anchor, includeAnchor: parsed.include_anchor, numBefore, numAfter },
    parsed.op as FlagOperation,
    parsed.flag,
  );
  return {
    processed_count: result.processedIds.count,
    updated_count: result.updatedCount,
    first_processed_id: result.processedIds.first,
    last_processed_id: result.processedIds.last,
    found_oldest: result.foundOldest,
    found_newest: result.foundNewest,
    // Always, as Zulip 10.2's server (its web app's answer schema requires it; empty but for
    // marking unread).
    ignored_because_not_subscribed_channels: result.ignoredChannelIds,
  };
}

/** POST /mark_all_as_read */
export async function markAllAsRead({ deps, requester }: AuthedContext<MessagesDeps>) {
  const { user } = await loadActor(deps.db, requester.userId);
  return { complete: await doMarkAllAsRead(deps, user) };
}

/** POST /mark_stream_as_read */
export async function markStreamAsRead({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const { stream_id: streamId } = params.parse({ stream_id: required(param.json(v.id())) });
  const { user } = await loadActor(deps.db, requester.userId);
  await accessStreamById(deps.db, viewerOf(user), streamId);
  await doMarkStreamAsRead(deps, viewerOf(user), streamId);
  return {};
}

/** POST /mark_topic_as_read */
export async function markTopicAsRead({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const { stream_id: streamId, topic_name: topicName } = params.parse({
    stream_id: required(param.json(v.id())),
    topic_name: required(param.string()),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  await accessStreamById(deps.db, viewerOf(user), streamId);
  if (topicName) {
    const exists = await deps.db.$queryRaw<{ found: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE um.user_profile_id = ${user.id} AND m.stream_id = ${streamId} AND lower(m.topic) = lower(${topicName})) AS found`;
    if (!exists[0].found) throw new JsonableError(`No such topic '${topicName}'`);
  }
  await doMarkStreamAsRead(deps, viewerOf(user), streamId, topicName);
  return {};
}
