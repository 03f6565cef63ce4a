// Register state of the channels domain (Zulip's fetch_initial_state_data for subscription,
// stream, default_streams, user_topic, muted_topics and channel_folder).

import { sortedByName } from '@teamchat/core';
import type { Stream, Subscription } from '@teamchat/db';
import {
  channelFolderDict,
  hasMetadataAccess,
  loadViewerContext,
  Role,
  streamApiDicts,
  streamSettingGroups,
  subscriberFields,
  STREAM_COLORS,
  subscriptionProperties,
  viewerOf,
  webPublicChannelsWhere,
  type ApiStream,
} from '@teamchat/domain';
import { perRegister, type StateContext, type StateSection } from '../registry';
import { realmWidePart } from '../realm-wide';

interface VisibleChannels {
  streams: Stream[];
  subscriptions: Subscription[];
  /** The API objects of `streams`, by id. */
  dicts: Map<number, ApiStream>;
}

/** The realm's channels the user can see exist; archived ones only for clients that handle them. */
async function readVisibleChannels(ctx: StateContext): Promise<VisibleChannels> {
  const includeArchived = Boolean(ctx.options.capabilities.archived_channels);
  const [candidates, subscriptions, viewer] = await Promise.all([
    ctx.db.stream.findMany({
      where: { realm_id: ctx.realm.id, ...(includeArchived ? {} : { is_archived: false }) },
      orderBy: { id: 'asc' },
    }),
    ctx.db.subscription.findMany({ where: { user_profile_id: ctx.user.id }, orderBy: { stream_id: 'asc' } }),
    loadViewerContext(ctx.db, viewerOf(ctx.user)),
  ]);
  const settings = await streamSettingGroups(
    ctx.db,
    candidates.map((stream) => stream.id),
  );
  const streams = candidates.filter((stream) => hasMetadataAccess(viewer, stream, settings.get(stream.id)));
  return { streams, subscriptions, dicts: await streamApiDicts(ctx.db, streams) };
}

/** The subscription and stream sections both need them. */
const visibleChannels = perRegister(readVisibleChannels);

/** The user's topic settings with their channels' names (user_topic and the legacy muted_topics). */
const userTopics = perRegister((ctx) =>
  ctx.db.userTopic.findMany({
    where: { user_profile_id: ctx.user.id },
    include: { stream: { select: { name: true } } },
    orderBy: { id: 'asc' },
  }),
);

/**
 * A spectator's channel lists (Zulip's get_web_public_subs): every web-public channel, as a
 * subscription a new user would have (notifications on, colours in order), and no others.
 */
async function spectatorSubscriptions(ctx: StateContext) {
  const streams = await ctx.db.stream.findMany({ where: webPublicChannelsWhere(ctx.realm.id), orderBy: { id: 'asc' } });
  const dicts = await streamApiDicts(ctx.db, streams);
  return {
    subscriptions: streams.map((stream, index) => ({
      ...dicts.get(stream.id)!,
      ...subscriptionProperties({
        color: STREAM_COLORS[index % STREAM_COLORS.length],
        pin_to_top: false,
        is_muted: false,
        desktop_notifications: true,
        audible_notifications: true,
        push_notifications: true,
        email_notifications: true,
        wildcard_mentions_notify: true,
      }),
    })),
    unsubscribed: [],
    never_subscribed: [],
  };
}

const subscriptionSection: StateSection = {
  eventType: 'subscription',
  async fetch(ctx) {
    if (ctx.spectator) return spectatorSubscriptions(ctx);
    const { streams, subscriptions, dicts } = await visibleChannels(ctx);
    const byId = new Map(streams.map((stream) => [stream.id, stream]));
    const subByStream = new Map(subscriptions.map((sub) => [sub.stream_id, sub]));
    const subscribers = await subscriberFields(
      ctx.db,
      streams.map((stream) => stream.id),
      ctx.options.includeSubscribers,
    );
    const withSubscribers = (id: number) => ({ ...dicts.get(id)!, ...(subscribers.get(id) ?? {}) });
    // A subscription survives losing access to a private channel; it is then not shown.
    // Each list by channel name, as Zulip's gather_subscriptions_helper orders them.
    const byName = (sub: Subscription) => byId.get(sub.stream_id)!.name;
    const subscribed = sortedByName(
      subscriptions.filter((sub) => sub.active && byId.has(sub.stream_id)),
      byName,
    );
    const unsubscribed = sortedByName(
      subscriptions.filter((sub) => !sub.active && byId.has(sub.stream_id)),
      byName,
    );
    return {
      subscriptions: subscribed.map((sub) => ({ ...withSubscribers(sub.stream_id), ...subscriptionProperties(sub) })),
      unsubscribed: unsubscribed.map((sub) => ({ ...withSubscribers(sub.stream_id), ...subscriptionProperties(sub) })),
      never_subscribed: sortedByName(
        streams.filter((stream) => !subByStream.has(stream.id)),
        (stream) => stream.name,
      ).map((stream) => withSubscribers(stream.id)),
    };
  },
};

const streamSection: StateSection = {
  eventType: 'stream',
  async fetch(ctx) {
    if (ctx.options.includeStreams === false) return {};
    const { streams, dicts } = await visibleChannels(ctx);
    return { streams: streams.map((stream) => dicts.get(stream.id)!) };
  },
};

const defaultStreamsSection: StateSection = {
  eventType: 'default_streams',
  async fetch(ctx) {
    // Zulip pretends a guest's or spectator's organisation has none (they could not see them all).
    if (ctx.spectator || ctx.user.role === Role.GUEST) return { realm_default_streams: [] };
    const rows = await ctx.db.stream.findMany({
      where: { realm_id: ctx.realm.id, is_default: true, is_archived: false },
      select: { id: true },
      orderBy: { id: 'asc' },
    });
    return { realm_default_streams: rows.map((row) => row.id) };
  },
};

/** Default channel groups are not offered: the list is always empty. */
const defaultStreamGroupsSection: StateSection = {
  eventType: 'default_stream_groups',
  async fetch() {
    return { realm_default_stream_groups: [] };
  },
};

const userTopicSection: StateSection = {
  eventType: 'user_topic',
  async fetch(ctx) {
    const rows = await userTopics(ctx);
    return {
      user_topics: rows.map((row) => ({
        stream_id: row.stream_id,
        topic_name: row.topic_name,
        last_updated: Math.floor(row.last_updated.getTime() / 1000),
        visibility_policy: row.visibility_policy,
      })),
    };
  },
};

/** The deprecated muted_topics list: [channel name, topic, muted at] of every muted topic. */
const mutedTopicsSection: StateSection = {
  eventType: 'muted_topics',
  async fetch(ctx) {
    const muted = (await userTopics(ctx)).filter((row) => row.visibility_policy === 1);
    return {
      muted_topics: muted.map((row) => [
        row.stream.name,
        row.topic_name,
        Math.floor(row.last_updated.getTime() / 1000),
      ]),
    };
  },
};

const channelFolderSection: StateSection = {
  eventType: 'channel_folder',
  async fetch(ctx) {
    const folders = await realmWidePart(ctx, 'channel-folders', async () => {
      const rows = await ctx.db.channelFolder.findMany({ where: { realm_id: ctx.realm.id }, orderBy: { id: 'asc' } });
      return rows.map(channelFolderDict);
    });
    return { channel_folders: folders };
  },
};

export const CHANNEL_SECTIONS: StateSection[] = [
  subscriptionSection,
  streamSection,
  defaultStreamsSection,
  defaultStreamGroupsSection,
  userTopicSection,
  mutedTopicsSection,
  channelFolderSection,
];
