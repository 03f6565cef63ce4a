// /users/me/subscriptions and friends: parse, call one action, answer.
import {
  JsonableError,
  LIST_LIMITS,
  optional,
  param,
  pathInt,
  required,
  sortedByName,
  v,
  type AuthedContext,
} from '@teamchat/core';
import { transaction } from '@teamchat/db';
import { accessStreamById, API_STREAM_GROUP_SETTINGS, loadActor, SERVER_LIMITS, viewerOf } from '@teamchat/domain';
import { doAddSubscriptions, type SubscribeInput } from '../actions/subscribe';
import { doChangeSubscriptionProperties } from '../actions/subscription-properties';
import { doRemoveSubscriptions } from '../actions/unsubscribe';
import type { ChannelsDeps } from '../deps';
import {
  groupSettingValueParam,
  includeSubscribersParam,
  principalsParam,
  retentionDaysParam,
  topicsPolicyParam,
} from '../lib/params';
import { subscriptionDicts } from '../lib/subscription-dicts';
import { checkColor } from '../actions/subscription-properties';

type Ctx = AuthedContext<ChannelsDeps>;

/** The entries that were given. */
export function definedValues<T>(values: Record<string, T | undefined>): Record<string, T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Record<string, T>;
}

/** One entry of `subscriptions` / `add`: extra keys are ignored, as Zulip's pydantic model does. */
const channelRequest = v.refine(
  v.object(
    { name: v.str() },
    { color: v.str(), description: v.str({ maxLength: SERVER_LIMITS.max_stream_description_length }) },
    { allowExtra: true },
  ),
  (value, varName) => {
    if (value.color !== undefined) checkColor(`${varName}.color`, value.color);
  },
);

/** Channels one request may name: each costs lookups, rows and events in one transaction. */
const channelsLimit = { maxLength: LIST_LIMITS.channelsPerSubscriptionRequest };
const channelRequests = v.list(channelRequest, channelsLimit);
const channelNames = v.list(v.str(), channelsLimit);

/** GET /users/me/subscriptions */
export async function listSubscriptions({ deps, params, requester }: Ctx) {
  const { include_subscribers } = params.parse({ include_subscribers: optional(includeSubscribersParam, false) });
  const subs = await deps.db.subscription.findMany({
    where: { user_profile_id: requester.userId, active: true, stream: { is_archived: false } },
    include: { stream: true },
  });
  // By name, as Zulip lists them (clients show them in this order).
  const byName = sortedByName(subs, (sub) => sub.stream.name);
  return { subscriptions: await subscriptionDicts(deps.db, byName, include_subscribers) };
}

function parseSubscribe(ctx: Ctx): SubscribeInput {
  const parsed = ctx.params.parse({
    subscriptions: required(param.json(channelRequests)),
    invite_only: optional(param.bool(), false),
    is_web_public: optional(param.bool(), false),
    is_default_stream: optional(param.bool(), false),
    history_public_to_subscribers: optional(param.json(v.nullable(v.bool()))),
    message_retention_days: optional(retentionDaysParam),
    topics_policy: optional(topicsPolicyParam),
    principals: optional(principalsParam),
    authorization_errors_fatal: optional(param.bool(), true),
    announce: optional(param.bool(), false),
    folder_id: optional(param.json(v.nullable(v.id()))),
  });
  const groupSettings = definedValues(
    ctx.params.parse(
      Object.fromEntries(API_STREAM_GROUP_SETTINGS.map((name) => [name, optional(groupSettingValueParam)])),
    ),
  );
  return {
    subscriptions: parsed.subscriptions,
    principals: parsed.principals ?? [],
    inviteOnly: parsed.invite_only,
    isWebPublic: parsed.is_web_public,
    isDefaultStream: parsed.is_default_stream,
    historyPublicToSubscribers: parsed.history_public_to_subscribers ?? null,
    messageRetentionDays: parsed.message_retention_days ?? null,
    retentionGiven: parsed.message_retention_days !== undefined,
    topicsPolicy: parsed.topics_policy ?? null,
    groupSettings,
    folderId: parsed.folder_id ?? null,
    authorizationErrorsFatal: parsed.authorization_errors_fatal,
    announce: parsed.announce,
  };
}

/** POST /users/me/subscriptions: subscribe, creating the channels that do not exist. */
export async function subscribe(ctx: Ctx) {
  const input = parseSubscribe(ctx);
  const { user } = await loadActor(ctx.deps.db, ctx.requester.userId);
  return { ...(await doAddSubscriptions(ctx.deps, user, input)) };
}

/** DELETE /users/me/subscriptions */
export async function unsubscribe({ deps, params, requester }: Ctx) {
  const { subscriptions, principals } = params.parse({
    subscriptions: required(param.json(channelNames)),
    principals: optional(principalsParam),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  return { ...(await doRemoveSubscriptions(deps, user, subscriptions, principals ?? null)) };
}

/** PATCH /users/me/subscriptions: add and delete in one transaction (Zulip's compose_views). */
export async function updateSubscriptions(ctx: Ctx) {
  const { add, delete: remove } = ctx.params.parse({
    add: optional(param.json(channelRequests), []),
    delete: optional(param.json(channelNames), []),
  });
  if (add.length === 0 && remove.length === 0)
    throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
  const { user } = await loadActor(ctx.deps.db, ctx.requester.userId);
  const addInput: SubscribeInput = {
    subscriptions: add,
    principals: [],
    inviteOnly: false,
    isWebPublic: false,
    isDefaultStream: false,
    historyPublicToSubscribers: null,
    messageRetentionDays: null,
    retentionGiven: false,
    topicsPolicy: null,
    groupSettings: {},
    folderId: null,
    authorizationErrorsFatal: true,
  };
  return transaction(ctx.deps.db, async (tx) => {
    const added = add.length
      ? await doAddSubscriptions(ctx.deps, user, addInput, tx)
      : { subscribed: {}, already_subscribed: {} };
    const removed = remove.length
      ? await doRemoveSubscriptions(ctx.deps, user, remove, null, tx)
      : { removed: [], not_removed: [] };
    return { ...added, ...removed };
  });
}

/** POST /users/me/subscriptions/properties */
export async function updateSubscriptionProperties({ deps, params, requester }: Ctx) {
  const { subscription_data } = params.parse({
    subscription_data: required(
      param.json(
        v.list(v.object({ stream_id: v.id(), property: v.str(), value: v.union(v.bool(), v.str()) }), channelsLimit),
      ),
    ),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  await doChangeSubscriptionProperties(deps, user, subscription_data);
}

/** GET /users/{user_id}/subscriptions/{stream_id} */
export async function getSubscriptionStatus({ deps, req, requester }: Ctx) {
  const userId = pathInt(req, 'user_id');
  const streamId = pathInt(req, 'stream_id');
  const { user } = await loadActor(deps.db, requester.userId);
  const target = await deps.db.userProfile.findFirst({ where: { id: userId, realm_id: user.realm_id } });
  if (!target) throw new JsonableError('No such user');
  await accessStreamById(deps.db, viewerOf(user), streamId, {
    requireContentAccess: false,
    requireActiveChannel: true,
  });
  const sub = await deps.db.subscription.findUnique({
    where: { user_profile_id_stream_id: { user_profile_id: userId, stream_id: streamId } },
  });
  return { is_subscribed: sub?.active ?? false };
}
