// Subscribing users to channels, creating the channels that do not exist yet
// (Zulip's add_subscriptions_backend, list_to_streams, create_stream_if_needed, bulk_add_subscriptions).

import { appendTo, JsonableError, LIST_LIMITS, OrganizationOwnerRequiredError } from '@teamchat/core';
import type { Stream, Tx, UserProfile } from '@teamchat/db';
import {
  channelsUserCannotAddSubscribersTo,
  checkStreamName,
  getSystemBot,
  groupSettingIds,
  type GroupSettingValue,
  hasContentAccess,
  isAdministrator,
  isGuest,
  isOwner,
  loadViewerContext,
  metadataAccessUserIds,
  realmSettings,
  renderMarkdown,
  silentMentionSyntax,
  STREAM_GROUP_SETTING_DEFAULTS,
  streamSettingGroups,
  systemGroupId,
  unsubscribedMetadataAccessUserIds,
  viewerOf,
  writeInternalMessage,
} from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';
import { sendPeerEvent, sendStreamCreationEvent } from './channel-events';
import {
  DELETE_PERMISSION_SETTINGS,
  holderGroupFor,
  nobodyGroupId,
  normaliseSettingValue,
} from '../lib/group-settings';
import { singleLineDescription } from '../lib/names';
import {
  canCreatePrivateChannels,
  canCreatePublicChannels,
  canCreateWebPublicChannels,
  canSetDeleteMessagePolicy,
  canSetTopicsPolicy,
  webPublicChannelsEnabled,
} from '../lib/permissions';
import { pickColors, streamsByName } from '../lib/streams';
import { subscriptionDicts, type SubscriptionDict } from '../lib/subscription-dicts';
import { inTransaction } from '../lib/transactions';
import { usersByPrincipals } from '../lib/users';
import { sendDefaultStreamsEvent } from './default-streams';

export interface ChannelRequest {
  name: string;
  color?: string;
  description?: string;
}

export interface SubscribeInput {
  subscriptions: ChannelRequest[];
  principals: (string | number)[];
  /** Settings of channels this request creates. */
  inviteOnly: boolean;
  isWebPublic: boolean;
  isDefaultStream: boolean;
  historyPublicToSubscribers: boolean | null;
  /** null: the organisation's setting; -1: forever. `retentionGiven` says whether the client chose it. */
  messageRetentionDays: number | null;
  retentionGiven: boolean;
  topicsPolicy: string | null;
  groupSettings: Record<string, GroupSettingValue>;
  folderId: number | null;
  authorizationErrorsFatal: boolean;
  /** Announce the channels this request creates in the organisation's new-channel announcements channel. */
  announce?: boolean;
}

export interface SubscribeResult {
  subscribed: Record<string, string[]>;
  already_subscribed: Record<string, string[]>;
  unauthorized?: string[];
}

export async function doAddSubscriptions(
  deps: ChannelsDeps,
  user: UserProfile,
  input: SubscribeInput,
  outer?: Tx,
): Promise<SubscribeResult> {
  if (isGuest(user.role)) throw new JsonableError('Not allowed for guest users');
  const requests = input.subscriptions.map((request) => ({
    ...request,
    name: request.name.trim(),
    description: request.description === undefined ? undefined : singleLineDescription(request.description),
  }));
  for (const request of requests) checkStreamName(request.name);

  return inTransaction(deps.db, outer, async (tx) => {
    const db = tx.db;
    const names = requests.map((request) => request.name);
    let existing = await streamsByName(db, user.realm_id, names);
    if (names.some((name) => !existing.has(name.toLowerCase()))) {
      // Channel names are unique case-insensitively: creations in a realm go one at a time.
      await db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('teamchat:stream-create'), ${user.realm_id})`;
      existing = await streamsByName(db, user.realm_id, names);
    }
    const missing = uniqueByName(requests.filter((request) => !existing.has(request.name.toLowerCase())));
    const existingStreams = [
      ...new Set(
        names
          .map((name) => existing.get(name.toLowerCase()))
          .filter((stream): stream is Stream => stream !== undefined),
      ),
    ];
    checkNewChannelCount(missing.length);

    if (
      input.folderId !== null &&
      !(await db.channelFolder.findFirst({ where: { id: input.folderId, realm_id: user.realm_id } }))
    ) {
      throw new JsonableError('Invalid channel folder ID');
    }

    const subscribers = input.principals.length ? await usersByPrincipals(db, user.realm_id, input.principals) : [user];
    checkSubscriptionChangeCount(subscribers.length * (existingStreams.length + missing.length));
    const subscribingOthers = subscribers.some((subscriber) => subscriber.id !== user.id);

    // Existing channels: the requester needs content access; to add others, permission to do so.
    const viewer = await loadViewerContext(db, viewerOf(user));
    const settingsByStream = await streamSettingGroups(
      db,
      existingStreams.map((stream) => stream.id),
    );
    const authorized: Stream[] = [];
    const unauthorized: Stream[] = [];
    for (const stream of existingStreams) {
      (hasContentAccess(viewer, stream, settingsByStream.get(stream.id)) ? authorized : unauthorized).push(stream);
    }
    if (unauthorized.length && input.authorizationErrorsFatal) {
      throw new JsonableError(`Unable to access channel (${unauthorized[0].name}).`);
    }
    if (
      subscribingOthers &&
      (
        await channelsUserCannotAddSubscribersTo(db, viewerOf(user), authorized, {
          ctx: viewer,
          settings: settingsByStream,
        })
      ).length
    ) {
      throw new JsonableError('Insufficient permission');
    }

    if (missing.length) await checkCreationAllowed(deps, tx, user, input);
    const created: Stream[] = [];
    for (const request of missing) created.push(await createStream(deps, tx, user, request, input));
    if (input.isDefaultStream && created.length) {
      await db.stream.updateMany({
        where: { id: { in: created.map((stream) => stream.id) } },
        data: { is_default: true },
      });
      await sendDefaultStreamsEvent(deps, tx, user.realm_id);
    }

    const colorByName = new Map(
      requests.filter((r) => r.color !== undefined).map((r) => [r.name.toLowerCase(), r.color!]),
    );
    const { added, already } = await bulkAddSubscriptions(
      deps,
      tx,
      [...authorized, ...created],
      subscribers,
      colorByName,
    );

    if (input.announce && created.length) await announceNewChannels(deps, tx, user, created);

    const result: SubscribeResult = { subscribed: {}, already_subscribed: {} };
    for (const { userId, stream } of added) (result.subscribed[String(userId)] ??= []).push(stream.name);
    for (const { userId, stream } of already) (result.already_subscribed[String(userId)] ??= []).push(stream.name);
    if (!input.authorizationErrorsFatal) result.unauthorized = unauthorized.map((stream) => stream.name);
    return result;
  });
}

/**
 * The notification bot tells the organisation's new-channel announcements channel (when it has
 * one, not archived) of the channels a request with `announce` created, in the request's
 * transaction (Zulip's send_messages_for_new_subscribers). The creator gets it already read.
 */
async function announceNewChannels(deps: ChannelsDeps, tx: Tx, user: UserProfile, created: Stream[]): Promise<void> {
  const realm = await tx.db.realm.findUniqueOrThrow({ where: { id: user.realm_id } });
  const announcementsId = realmSettings(realm).realm_new_stream_announcements_stream_id;
  if (typeof announcementsId !== 'number' || announcementsId < 0) return;
  const stream = await tx.db.stream.findFirst({
    where: { id: announcementsId, realm_id: realm.id, is_archived: false },
  });
  if (!stream) return;
  const links = created.map((channel) => `#**${channel.name}**`).join(', ');
  const content =
    created.length > 1
      ? `${silentMentionSyntax(user)} created the following channels: ${links}.`
      : `${silentMentionSyntax(user)} created a new channel ${links}.`;
  const written = await writeInternalMessage(tx.db, {
    realm,
    sender: await getSystemBot(tx.db),
    to: { stream, topic: 'new channels' },
    content,
    actingUser: viewerOf(user),
    readBy: [user.id],
  });
  for (const { event, users } of written.events) await deps.bus.sendEventOnCommit(tx, realm.id, event, users);
}

/**
 * Each creation writes the channel, its group settings and its events in the request's
 * transaction: a bounded number keeps that transaction well inside its timeout.
 */
function checkNewChannelCount(count: number): void {
  const max = LIST_LIMITS.channelsCreatedPerRequest;
  if (count > max) throw new JsonableError(`Too many new channels requested (maximum ${max}).`);
}

/** Subscriptions (users × channels) one request adds or removes: rows and events in one transaction. */
export function checkSubscriptionChangeCount(count: number): void {
  const max = LIST_LIMITS.subscriptionChangesPerRequest;
  if (count > max) throw new JsonableError(`Too many subscriptions requested (maximum ${max}).`);
}

function uniqueByName(requests: ChannelRequest[]): ChannelRequest[] {
  const seen = new Set<string>();
  return requests.filter((request) => !seen.has(request.name.toLowerCase()) && seen.add(request.name.toLowerCase()));
}

/** Zulip's check_channel_creation_permissions plus the checks of the requested settings. */
async function checkCreationAllowed(
  deps: ChannelsDeps,
  tx: Tx,
  user: UserProfile,
  input: SubscribeInput,
): Promise<void> {
  const db = tx.db;
  if (input.inviteOnly && !(await canCreatePrivateChannels(db, user)))
    throw new JsonableError('Insufficient permission');
  if (!input.inviteOnly && !(await canCreatePublicChannels(db, user)))
    throw new JsonableError('Insufficient permission');
  if (input.isDefaultStream && !isAdministrator(user.role)) throw new JsonableError('Insufficient permission');
  if (input.inviteOnly && input.isDefaultStream) throw new JsonableError('A default channel cannot be private.');
  if (input.isWebPublic) {
    if (!(await webPublicChannelsEnabled(db, user.realm_id, deps.env.WEB_PUBLIC_STREAMS_ENABLED))) {
      throw new JsonableError('Web-public channels are not enabled.');
    }
    if (!(await canCreateWebPublicChannels(db, user))) throw new JsonableError('Insufficient permission');
    if (input.inviteOnly) throw new JsonableError('Invalid parameters');
  }
  if (input.retentionGiven && input.messageRetentionDays !== null && !isOwner(user.role))
    throw new OrganizationOwnerRequiredError();
  if (input.topicsPolicy !== null && input.topicsPolicy !== 'inherit' && !(await canSetTopicsPolicy(db, user))) {
    throw new JsonableError('Insufficient permission');
  }
  const nobody = await nobodyGroupId(db, user.realm_id);
  for (const [name, value] of Object.entries(input.groupSettings)) {
    if (
      DELETE_PERMISSION_SETTINGS.has(name) &&
      normaliseSettingValue(value, nobody) !== nobody &&
      !(await canSetDeleteMessagePolicy(db, user))
    ) {
      throw new JsonableError('Insufficient permission');
    }
  }
}

/** Zulip's create_stream_if_needed for a name known not to exist; sends the stream creation event. */
async function createStream(
  deps: ChannelsDeps,
  tx: Tx,
  user: UserProfile,
  request: ChannelRequest,
  input: SubscribeInput,
): Promise<Stream> {
  const db = tx.db;
  const description = request.description ?? '';
  const stream = await db.stream.create({
    data: {
      realm_id: user.realm_id,
      name: request.name,
      description,
      rendered_description: renderMarkdown(description),
      invite_only: input.inviteOnly,
      is_web_public: input.isWebPublic,
      // Public channels always share their history; private ones protect it unless asked.
      history_public_to_subscribers: input.inviteOnly ? (input.historyPublicToSubscribers ?? false) : true,
      message_retention_days: input.messageRetentionDays,
      topics_policy: input.topicsPolicy ?? 'inherit',
      folder_id: input.folderId,
      creator_id: user.id,
    },
  });
  const nobody = await nobodyGroupId(db, user.realm_id);
  for (const [name, holder] of Object.entries(STREAM_GROUP_SETTING_DEFAULTS)) {
    const requested = input.groupSettings[name];
    let groupId: number;
    if (requested !== undefined) {
      groupId = await holderGroupFor(db, user.realm_id, name, normaliseSettingValue(requested, nobody));
    } else if (holder === 'creator') {
      groupId = await holderGroupFor(db, user.realm_id, name, { direct_members: [user.id], direct_subgroups: [] });
    } else {
      groupId = await systemGroupId(db, user.realm_id, holder);
    }
    await db.groupSetting.create({
      data: { realm_id: user.realm_id, owner_kind: 'stream', owner_id: stream.id, name, group_id: groupId },
    });
  }
  const settings = await groupSettingIds(db, 'stream', stream.id);
  await sendStreamCreationEvent(deps, tx, stream, await unsubscribedMetadataAccessUserIds(db, stream, settings));
  return stream;
}

interface SubscriptionChange {
  userId: number;
  stream: Stream;
}

/**
 * Subscribes `users` to `streams` (new rows, or reactivating old ones with their settings),
 * then sends Zulip's events: stream creation for those who could not see a private channel
 * (or a public one, for guests), subscription add to each new subscriber, peer_add to the rest.
 */
export async function bulkAddSubscriptions(
  deps: ChannelsDeps,
  tx: Tx,
  streams: Stream[],
  users: UserProfile[],
  colorByName: Map<string, string> = new Map(),
): Promise<{ added: SubscriptionChange[]; already: SubscriptionChange[] }> {
  const db = tx.db;
  const added: SubscriptionChange[] = [];
  const already: SubscriptionChange[] = [];
  if (streams.length === 0 || users.length === 0) return { added, already };
  const streamIds = streams.map((stream) => stream.id);
  const userIds = users.map((user) => user.id);
  const existing = await db.subscription.findMany({
    where: { user_profile_id: { in: userIds }, stream_id: { in: streamIds } },
  });
  const usedColors = await db.subscription.findMany({
    where: { user_profile_id: { in: userIds } },
    select: { user_profile_id: true, color: true },
  });

  // By user: filtering the whole lists for each user would be quadratic in a bulk subscribe.
  const existingOf = new Map<number, typeof existing>();
  for (const sub of existing) appendTo(existingOf, sub.user_profile_id, sub);
  const colorsOf = new Map<number, string[]>();
  for (const row of usedColors) appendTo(colorsOf, row.user_profile_id, row.color);

  const toCreate: { user_profile_id: number; stream_id: number; color: string }[] = [];
  const toActivate: number[] = [];
  for (const user of users) {
    const mine = existingOf.get(user.id) ?? [];
    const fresh = streams.filter((stream) => !mine.some((sub) => sub.stream_id === stream.id));
    const colors = pickColors(new Set(colorsOf.get(user.id)), fresh.length);
    fresh.forEach((stream, i) => {
      toCreate.push({
        user_profile_id: user.id,
        stream_id: stream.id,
        color: colorByName.get(stream.name.toLowerCase()) ?? colors[i],
      });
      added.push({ userId: user.id, stream });
    });
    for (const sub of mine) {
      const stream = streams.find((candidate) => candidate.id === sub.stream_id)!;
      if (sub.active) {
        already.push({ userId: user.id, stream });
      } else {
        toActivate.push(sub.id);
        added.push({ userId: user.id, stream });
      }
    }
  }
  if (added.length === 0) return { added, already };
  await db.subscription.createMany({ data: toCreate });
  if (toActivate.length)
    await db.subscription.updateMany({ where: { id: { in: toActivate } }, data: { active: true } });

  const settingsByStream = await streamSettingGroups(db, streamIds);
  for (const stream of streams) {
    const newUserIds = added.filter((change) => change.stream.id === stream.id).map((change) => change.userId);
    if (newUserIds.length === 0) continue;
    // Those who could not see the channel before need it to exist before their subscription does.
    const alreadyAware = new Set(
      await unsubscribedMetadataAccessUserIds(db, stream, settingsByStream.get(stream.id)!, newUserIds),
    );
    await sendStreamCreationEvent(
      deps,
      tx,
      stream,
      newUserIds.filter((id) => !alreadyAware.has(id)),
    );
  }

  // The new subscriptions of every user in one read, their channels' objects built once: per
  // user, a bulk subscribe of many users would cost a few queries each.
  const addedKeys = new Set(added.map((change) => `${change.userId}:${change.stream.id}`));
  const newSubs = (
    await db.subscription.findMany({
      where: { user_profile_id: { in: userIds }, stream_id: { in: streamIds } },
      include: { stream: true },
      orderBy: [{ user_profile_id: 'asc' }, { stream_id: 'asc' }],
    })
  ).filter((sub) => addedKeys.has(`${sub.user_profile_id}:${sub.stream_id}`));
  const newDicts = await subscriptionDicts(db, newSubs, true);
  const dictsOf = new Map<number, SubscriptionDict[]>();
  newSubs.forEach((sub, index) => appendTo(dictsOf, sub.user_profile_id, newDicts[index]));
  for (const user of users) {
    const dicts = dictsOf.get(user.id);
    if (!dicts) continue;
    await deps.bus.sendEventOnCommit(tx, user.realm_id, { type: 'subscription', op: 'add', subscriptions: dicts }, [
      user.id,
    ]);
  }

  for (const stream of streams) {
    const newUserIds = added.filter((change) => change.stream.id === stream.id).map((change) => change.userId);
    if (newUserIds.length === 0) continue;
    const audience = await metadataAccessUserIds(db, stream, settingsByStream.get(stream.id)!);
    await sendPeerEvent(deps, tx, stream.realm_id, 'peer_add', stream.id, newUserIds, audience);
  }
  return { added, already };
}
