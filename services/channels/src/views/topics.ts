// Topics of a channel, deleting a topic, and per-topic visibility.
import {
  JsonableError,
  optional,
  param,
  pathInt,
  required,
  v,
  type AuthedContext,
  type ViewContext,
} from '@teamchat/core';
import {
  accessStreamById,
  allowsSpectators,
  INVALID_CHANNEL_ID,
  loadActor,
  SERVER_LIMITS,
  spectatorRefused,
  viewerOf,
  VisibilityPolicy,
} from '@teamchat/domain';
import { doDeleteTopic, doSetUserTopicVisibility } from '../actions/topics';
import type { ChannelsDeps } from '../deps';
import { topicNameFromApi } from '../lib/names';
import { streamByName } from '../lib/streams';
import { topicHistory } from '../lib/topics';

type Ctx = AuthedContext<ChannelsDeps>;

/**
 * GET /users/me/{stream_id}/topics. A logged-out visitor (from /json only, as the gateway lets
 * them through) gets a web-public channel's topics, as Zulip's access_web_public_stream allows;
 * unlike Zulip 10.2, only where the organisation admits spectators at all.
 */
export async function getTopics({ deps, params, req, requester, realmId }: ViewContext<ChannelsDeps>) {
  const streamId = pathInt(req, 'stream_id');
  const { allow_empty_topic_name } = params.parse({ allow_empty_topic_name: optional(param.bool(), false) });
  if (!requester) {
    return deps.reads.readFor(realmId, async (db) => {
      const realm = await db.realm.findUnique({ where: { id: realmId } });
      if (!realm || !(await allowsSpectators(db, realm, deps.env.WEB_PUBLIC_STREAMS_ENABLED))) throw spectatorRefused();
      const stream = await db.stream.findFirst({ where: { id: streamId, realm_id: realmId, is_web_public: true } });
      if (!stream) throw new JsonableError(INVALID_CHANNEL_ID);
      return { topics: await topicHistory(db, stream.id, null, allow_empty_topic_name) };
    });
  }
  // A heavy read: the read replica serves it once it has replayed the organisation's last write.
  return deps.reads.readFor(requester.realmId, async (db) => {
    const { user } = await loadActor(db, requester.userId);
    const { stream } = await accessStreamById(db, viewerOf(user), streamId, { requireActiveChannel: true });
    // Protected history: only the topics of messages one received.
    const receivedBy = stream.history_public_to_subscribers ? null : user.id;
    return { topics: await topicHistory(db, stream.id, receivedBy, allow_empty_topic_name) };
  });
}

/** POST /streams/{stream_id}/delete_topic */
export async function deleteTopic({ deps, params, req, requester }: Ctx) {
  const streamId = pathInt(req, 'stream_id');
  const { topic_name } = params.parse({ topic_name: required(param.string()) });
  const { user } = await loadActor(deps.db, requester.userId);
  const complete = await doDeleteTopic(deps, user, streamId, topicNameFromApi(topic_name));
  return { complete };
}

/** POST /user_topics */
export async function updateUserTopic({ deps, params, requester }: Ctx) {
  const { stream_id, topic, visibility_policy } = params.parse({
    stream_id: required(param.json(v.id())),
    topic: required(param.string({ maxLength: SERVER_LIMITS.max_topic_length })),
    visibility_policy: required(param.json(v.literal(0, 1, 2, 3))),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  await doSetUserTopicVisibility(deps, user, stream_id, topicNameFromApi(topic), visibility_policy);
}

/**
 * PATCH /users/me/subscriptions/muted_topics: the endpoint user_topics replaced (feature level
 * 170), still used by python-zulip-api's mute_topic. op "add" mutes, "remove" unmutes.
 */
export async function updateMutedTopic({ deps, params, requester }: Ctx) {
  const { stream_id, stream, topic, op } = params.parse({
    stream_id: optional(param.json(v.id())),
    stream: optional(param.string()),
    topic: required(param.string({ maxLength: SERVER_LIMITS.max_topic_length })),
    op: required(param.enumString('add', 'remove')),
  });
  if (stream_id === undefined && stream === undefined) throw new JsonableError("Missing 'stream_id' argument");
  if (stream_id !== undefined && stream !== undefined)
    throw new JsonableError('Unsupported parameter combination: stream_id, stream');
  const { user } = await loadActor(deps.db, requester.userId);
  let streamId = stream_id;
  if (streamId === undefined) {
    const found = await streamByName(deps.db, user.realm_id, stream!);
    if (!found) throw new JsonableError(op === 'add' ? `Invalid channel name '${stream}'` : 'Topic is not muted');
    streamId = found.id;
  }
  await doSetUserTopicVisibility(
    deps,
    user,
    streamId,
    topicNameFromApi(topic),
    op === 'add' ? VisibilityPolicy.MUTED : VisibilityPolicy.INHERIT,
  );
}
