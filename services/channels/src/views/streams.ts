// /streams, /get_stream_id, /default_streams: parse, call one action or read, answer.
import {
  JsonableError,
  OrganizationAdministratorRequiredError,
  optional,
  param,
  pathInt,
  required,
  v,
  type AuthedContext,
} from '@teamchat/core';
import {
  accessStreamById,
  activeSubscriberIds,
  API_STREAM_GROUP_SETTINGS,
  hasContentAccess,
  hasMetadataAccess,
  isAdministrator,
  isGuest,
  loadActor,
  loadViewerContext,
  SERVER_LIMITS,
  streamApiDicts,
  streamSettingGroups,
  viewerOf,
} from '@teamchat/domain';
import { doArchiveStream } from '../actions/archive-stream';
import { doChangeDefaultStream } from '../actions/default-streams';
import { doUpdateStream } from '../actions/update-stream';
import type { ChannelsDeps } from '../deps';
import { groupSettingUpdateParam, retentionDaysParam, topicsPolicyParam } from '../lib/params';
import { streamByName } from '../lib/streams';
import { definedValues } from './subscriptions';

type Ctx = AuthedContext<ChannelsDeps>;

/** GET /streams (Zulip's get_streams_for_user). */
export async function listStreams({ deps, params, requester }: Ctx) {
  const options = params.parse({
    include_public: optional(param.bool(), true),
    include_web_public: optional(param.bool(), false),
    include_subscribed: optional(param.bool(), true),
    exclude_archived: optional(param.bool(), true),
    include_all: optional(param.bool(), false),
    include_all_active: optional(param.bool(), false),
    include_default: optional(param.bool(), false),
    include_owner_subscribed: optional(param.bool(), false),
    include_can_access_content: optional(param.bool(), false),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  const candidates = await deps.db.stream.findMany({
    where: { realm_id: user.realm_id, ...(options.exclude_archived ? { is_archived: false } : {}) },
  });
  const viewer = await loadViewerContext(deps.db, viewerOf(user));
  const settings = await streamSettingGroups(
    deps.db,
    candidates.map((stream) => stream.id),
  );
  const ownerStreamIds =
    options.include_owner_subscribed && user.is_bot && user.bot_owner_id !== null
      ? new Set(
          (
            await deps.db.subscription.findMany({
              where: { user_profile_id: user.bot_owner_id, active: true },
              select: { stream_id: true },
            })
          ).map((s) => s.stream_id),
        )
      : new Set<number>();
  const includePublic = options.include_public && !isGuest(user.role);
  const chosen = candidates.filter((stream) => {
    const own = settings.get(stream.id);
    if (options.include_all || options.include_all_active) return hasMetadataAccess(viewer, stream, own);
    if (ownerStreamIds.has(stream.id)) return true;
    if (options.include_can_access_content) return hasContentAccess(viewer, stream, own);
    return (
      (options.include_subscribed && viewer.subscribedStreamIds.has(stream.id)) ||
      (includePublic && !stream.invite_only) ||
      (options.include_web_public && stream.is_web_public && !stream.invite_only && !stream.is_archived)
    );
  });
  const dicts = await streamApiDicts(deps.db, chosen);
  const streams = chosen
    .map((stream) => ({
      ...dicts.get(stream.id)!,
      ...(options.include_default ? { is_default: stream.is_default } : {}),
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { streams };
}

/** GET /streams/{stream_id} */
export async function getStream({ deps, req, requester }: Ctx) {
  const { user } = await loadActor(deps.db, requester.userId);
  const { stream } = await accessStreamById(deps.db, viewerOf(user), pathInt(req, 'stream_id'), {
    requireContentAccess: false,
    requireActiveChannel: true,
  });
  return { stream: (await streamApiDicts(deps.db, [stream])).get(stream.id)! };
}

/**
 * GET /streams/{stream_id}/email_address (Zulip's get_channel_email_address): the address
 * that posts to the channel by email. This server has no email gateway, so, as Zulip without
 * one (EMAIL_GATEWAY_PATTERN unset), the address is empty; `sender_id` would only change it.
 */
export async function getStreamEmailAddress({ deps, params, req, requester }: Ctx) {
  params.parse({ sender_id: optional(param.int()) });
  const { user } = await loadActor(deps.db, requester.userId);
  await accessStreamById(deps.db, viewerOf(user), pathInt(req, 'stream_id'));
  return { email: '' };
}

/** GET /get_stream_id?stream=name */
export async function getStreamId({ deps, params, requester }: Ctx) {
  const { stream: name } = params.parse({ stream: required(param.string()) });
  const { user } = await loadActor(deps.db, requester.userId);
  const error = `Invalid channel name '${name}'`;
  const stream = await streamByName(deps.db, user.realm_id, name);
  if (!stream || stream.is_archived) throw new JsonableError(error);
  try {
    await accessStreamById(deps.db, viewerOf(user), stream.id);
  } catch {
    throw new JsonableError(error);
  }
  return { stream_id: stream.id };
}

/** GET /streams/{stream_id}/members */
export async function getStreamMembers({ deps, req, requester }: Ctx) {
  const { user } = await loadActor(deps.db, requester.userId);
  const { stream } = await accessStreamById(deps.db, viewerOf(user), pathInt(req, 'stream_id'), {
    requireContentAccess: false,
    requireActiveChannel: true,
  });
  return { subscribers: (await activeSubscriberIds(deps.db, [stream.id])).get(stream.id)! };
}

/** PATCH /streams/{stream_id}: every property of the spec's channel update. */
export async function updateStream({ deps, params, req, requester }: Ctx) {
  const streamId = pathInt(req, 'stream_id');
  // python-zulip-api repeats the path's stream_id in the body.
  params.markUsed('stream_id');
  const parsed = params.parse({
    description: optional(param.string({ maxLength: SERVER_LIMITS.max_stream_description_length })),
    new_name: optional(param.string()),
    is_private: optional(param.bool()),
    is_web_public: optional(param.bool()),
    history_public_to_subscribers: optional(param.bool()),
    is_default_stream: optional(param.bool()),
    message_retention_days: optional(retentionDaysParam),
    is_archived: optional(param.bool()),
    folder_id: optional(param.json(v.nullable(v.id()))),
    topics_policy: optional(topicsPolicyParam),
  });
  const groupSettings = definedValues(
    params.parse(
      Object.fromEntries(API_STREAM_GROUP_SETTINGS.map((name) => [name, optional(groupSettingUpdateParam)])),
    ),
  );
  const { user } = await loadActor(deps.db, requester.userId);
  await doUpdateStream(deps, user, streamId, {
    description: parsed.description,
    newName: parsed.new_name,
    isPrivate: parsed.is_private,
    isWebPublic: parsed.is_web_public,
    historyPublicToSubscribers: parsed.history_public_to_subscribers,
    isDefaultStream: parsed.is_default_stream,
    messageRetentionDays: parsed.message_retention_days,
    isArchived: parsed.is_archived,
    folderId: parsed.folder_id,
    topicsPolicy: parsed.topics_policy,
    groupSettings,
  });
}

/** DELETE /streams/{stream_id}: archive. */
export async function archiveStream({ deps, req, requester }: Ctx) {
  const { user } = await loadActor(deps.db, requester.userId);
  await doArchiveStream(deps, user, pathInt(req, 'stream_id'));
}

/** POST /default_streams */
export async function addDefaultStream({ deps, params, requester }: Ctx) {
  const { stream_id } = params.parse({ stream_id: required(param.json(v.id())) });
  const { user } = await loadActor(deps.db, requester.userId);
  if (!isAdministrator(user.role)) throw new OrganizationAdministratorRequiredError();
  const { stream } = await accessStreamById(deps.db, viewerOf(user), stream_id, { requireActiveChannel: true });
  if (stream.invite_only) throw new JsonableError('Private channels cannot be made default.');
  await doChangeDefaultStream(deps, stream, true);
}

/** DELETE /default_streams */
export async function removeDefaultStream({ deps, params, requester }: Ctx) {
  const { stream_id } = params.parse({ stream_id: required(param.json(v.id())) });
  const { user } = await loadActor(deps.db, requester.userId);
  if (!isAdministrator(user.role)) throw new OrganizationAdministratorRequiredError();
  const { stream } = await accessStreamById(deps.db, viewerOf(user), stream_id, {
    requireContentAccess: false,
    requireActiveChannel: true,
  });
  await doChangeDefaultStream(deps, stream, false);
}
