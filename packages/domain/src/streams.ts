// Who may see a channel and its messages (Zulip's access_stream_common and has_message_access),
// who must hear about a change to it, and the channel objects of the API.
//
// Content access: read messages, send, see subscribers. Metadata access: see the channel
// exists and its settings. Public channels: every non-guest has content access; web-public
// channels: everyone. Private channels: subscribers; members of can_add_subscribers_group and
// can_subscribe_group have content access; administrators and members of
// can_administer_channel_group have metadata access. Guests never gain access through a
// group setting (those settings do not allow role:everyone).

import { JsonableError } from '@teamchat/core';
import { Prisma, type ChannelFolder, type Stream, type TxClient } from '@teamchat/db';
import {
  groupSettingApiValues,
  hasRealmPermission,
  isUserInGroup,
  userRecursiveGroupIds,
  type GroupSettingValue,
} from './group-settings';
import { SystemGroup } from './groups';
import { isAdministrator, isAdministratorSql, isGuest, isGuestSql } from './roles';

type Reader = Pick<
  TxClient,
  | '$queryRaw'
  | 'subscription'
  | 'stream'
  | 'groupSetting'
  | 'userMessage'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
  | 'userProfile'
>;

export interface Viewer {
  id: number;
  realm_id: number;
  role: number;
}

export interface StreamAccess {
  subscribed: boolean;
  metadata: boolean;
  content: boolean;
}

export const INVALID_CHANNEL_ID = 'Invalid channel ID';

/** The channel group settings that open a private channel's content to their members. */
export const CONTENT_ACCESS_SETTINGS = ['can_add_subscribers_group', 'can_subscribe_group'] as const;
/** The channel group settings whose members can see a private channel exists. */
export const METADATA_ACCESS_SETTINGS = [
  'can_add_subscribers_group',
  'can_administer_channel_group',
  'can_subscribe_group',
] as const;

export async function isSubscribed(db: Reader, userId: number, streamId: number): Promise<boolean> {
  const sub = await db.subscription.findUnique({
    where: { user_profile_id_stream_id: { user_profile_id: userId, stream_id: streamId } },
    select: { active: true },
  });
  return sub?.active ?? false;
}

/** What the access rule reads about a viewer of one channel. */
export interface StreamAccessFacts {
  role: number;
  subscribed: boolean;
  /** Which of the channel's group settings (by name) hold the viewer, directly or through subgroups. */
  heldSettings: ReadonlySet<string>;
}

const NO_SETTINGS: ReadonlySet<string> = new Set();

/**
 * THE channel-access rule (Zulip's user_has_content_access and check_basic_stream_access in
 * zerver/lib/streams.py): every check in TypeScript asks it, and unsubscribedMetadataAccessSql
 * below states it for many users at once (tests/permissions/channel-access-forms.test.ts holds
 * the two to agreeing for every role and channel kind).
 */
export function decideStreamAccess(
  stream: Pick<Stream, 'invite_only' | 'is_web_public'>,
  viewer: StreamAccessFacts,
): StreamAccess {
  const { subscribed } = viewer;
  const full = { subscribed, metadata: true, content: true };
  if (subscribed || stream.is_web_public) return full;
  // Guests see only their channels and web-public ones: neither role nor group setting opens more.
  if (isGuest(viewer.role)) return { subscribed, metadata: false, content: false };
  if (!stream.invite_only) return full;
  const holdsAny = (names: readonly string[]) => names.some((name) => viewer.heldSettings.has(name));
  if (holdsAny(CONTENT_ACCESS_SETTINGS)) return full;
  if (isAdministrator(viewer.role) || holdsAny(METADATA_ACCESS_SETTINGS)) {
    return { subscribed, metadata: true, content: false };
  }
  return { subscribed, metadata: false, content: false };
}

/** Which of the channel's access-granting settings hold the (active) viewer. */
async function heldAccessSettings(db: Reader, viewerId: number, streamId: number): Promise<Set<string>> {
  const rows = await db.groupSetting.findMany({
    where: { owner_kind: 'stream', owner_id: streamId, name: { in: [...METADATA_ACCESS_SETTINGS] } },
    select: { name: true, group_id: true },
  });
  const membership = new Map<number, Promise<boolean>>();
  const held = new Set<string>();
  for (const row of rows) {
    if (!membership.has(row.group_id)) membership.set(row.group_id, isUserInGroup(db, viewerId, row.group_id));
    if (await membership.get(row.group_id)) held.add(row.name);
  }
  return held;
}

export async function streamAccess(
  db: Reader,
  viewer: Viewer,
  stream: Pick<Stream, 'id' | 'realm_id' | 'invite_only' | 'is_web_public'>,
): Promise<StreamAccess> {
  if (stream.realm_id !== viewer.realm_id) return { subscribed: false, metadata: false, content: false };
  const facts = {
    role: viewer.role,
    subscribed: await isSubscribed(db, viewer.id, stream.id),
    heldSettings: NO_SETTINGS,
  };
  const withoutSettings = decideStreamAccess(stream, facts);
  // Group settings only ever add access: read them only when there is access left to gain.
  if (withoutSettings.content) return withoutSettings;
  return decideStreamAccess(stream, { ...facts, heldSettings: await heldAccessSettings(db, viewer.id, stream.id) });
}

/**
 * The channel `streamId` if the viewer may access it ("Invalid channel ID" otherwise, the
 * same answer as for a channel that does not exist, so private channels do not leak).
 * `requireActiveChannel` refuses archived channels the same way (Zulip's default for reads).
 */
export async function accessStreamById(
  db: Reader,
  viewer: Viewer,
  streamId: number,
  options: { requireContentAccess?: boolean; requireActiveChannel?: boolean } = {},
): Promise<{ stream: Stream; access: StreamAccess }> {
  const stream = await db.stream.findFirst({ where: { id: streamId, realm_id: viewer.realm_id } });
  if (!stream) throw new JsonableError(INVALID_CHANNEL_ID);
  if (options.requireActiveChannel && stream.is_archived) throw new JsonableError(INVALID_CHANNEL_ID);
  const access = await streamAccess(db, viewer, stream);
  if (!((options.requireContentAccess ?? true) ? access.content : access.metadata))
    throw new JsonableError(INVALID_CHANNEL_ID);
  return { stream, access };
}

/**
 * Facts about a message a caller may already hold, so hasMessageAccess does not read them again:
 * whether the viewer has a user_message row for it, and its channel (null: no such channel).
 */
export interface KnownMessageFacts {
  received?: boolean;
  stream?: Stream | null;
}

/**
 * Whether the viewer may read a message (Zulip's has_message_access): a direct message they
 * received; a channel message when they have content access to the channel — and, where the
 * channel protects its history, only one they received while subscribed and still subscribed.
 */
export async function hasMessageAccess(
  db: Reader,
  viewer: Viewer,
  message: { id: number; realm_id: number; stream_id: number | null },
  known: KnownMessageFacts = {},
): Promise<boolean> {
  if (message.realm_id !== viewer.realm_id) return false;
  const received = async () =>
    known.received ??
    (await db.userMessage.findUnique({
      where: { user_profile_id_message_id: { user_profile_id: viewer.id, message_id: message.id } },
      select: { id: true },
    })) !== null;
  if (message.stream_id === null) return received();
  const stream =
    known.stream !== undefined ? known.stream : await db.stream.findUnique({ where: { id: message.stream_id } });
  if (!stream) return false;
  const access = await streamAccess(db, viewer, stream);
  if (stream.invite_only && !stream.history_public_to_subscribers) return access.subscribed && (await received());
  return access.content;
}

// ---------------------------------------------------------------- access for many channels at once

/** Group ids that hold each setting of each channel: streamId → {setting name → group id}. */
export type StreamSettingGroups = Map<number, Record<string, number>>;

export async function streamSettingGroups(
  db: Pick<TxClient, 'groupSetting'>,
  streamIds: number[],
): Promise<StreamSettingGroups> {
  const result: StreamSettingGroups = new Map(streamIds.map((id) => [id, {}]));
  if (streamIds.length === 0) return result;
  const rows = await db.groupSetting.findMany({
    where: { owner_kind: 'stream', owner_id: { in: streamIds } },
    select: { owner_id: true, name: true, group_id: true },
  });
  for (const row of rows) result.get(row.owner_id)![row.name] = row.group_id;
  return result;
}

/** What channel access checks need to know about one user, loaded once. */
export interface ViewerContext {
  viewer: Viewer;
  groupIds: Set<number>;
  subscribedStreamIds: Set<number>;
}

export async function loadViewerContext(db: Pick<TxClient, '$queryRaw'>, viewer: Viewer): Promise<ViewerContext> {
  const [groupIds, subs] = await Promise.all([
    userRecursiveGroupIds(db, viewer.id),
    db.$queryRaw<
      { stream_id: number }[]
    >`SELECT stream_id FROM subscription WHERE user_profile_id = ${viewer.id} AND active`,
  ]);
  return { viewer, groupIds, subscribedStreamIds: new Set(subs.map((row) => row.stream_id)) };
}

type AccessStream = Pick<Stream, 'id' | 'invite_only' | 'is_web_public'>;

function inAnySetting(
  ctx: ViewerContext,
  settings: Record<string, number> | undefined,
  names: readonly string[],
): boolean {
  if (isGuest(ctx.viewer.role) || !settings) return false;
  return names.some((name) => settings[name] !== undefined && ctx.groupIds.has(settings[name]));
}

/** decideStreamAccess with the facts of a loaded ViewerContext (no reads). */
export function streamAccessOf(
  ctx: ViewerContext,
  stream: AccessStream,
  settings: Record<string, number> | undefined,
): StreamAccess {
  const heldSettings = new Set(
    Object.entries(settings ?? {})
      .filter(([, groupId]) => ctx.groupIds.has(groupId))
      .map(([name]) => name),
  );
  return decideStreamAccess(stream, {
    role: ctx.viewer.role,
    subscribed: ctx.subscribedStreamIds.has(stream.id),
    heldSettings,
  });
}

export function hasContentAccess(
  ctx: ViewerContext,
  stream: AccessStream,
  settings: Record<string, number> | undefined,
): boolean {
  return streamAccessOf(ctx, stream, settings).content;
}

export function hasMetadataAccess(
  ctx: ViewerContext,
  stream: AccessStream,
  settings: Record<string, number> | undefined,
): boolean {
  return streamAccessOf(ctx, stream, settings).metadata;
}

/** Administrators administer every channel; others need can_administer_channel_group (never guests). */
export function canAdministerChannel(ctx: ViewerContext, settings: Record<string, number> | undefined): boolean {
  return isAdministrator(ctx.viewer.role) || inAnySetting(ctx, settings, ['can_administer_channel_group']);
}

/** Whether the viewer holds one of the channel's group settings (not through the admin role). */
export function inChannelSetting(
  ctx: ViewerContext,
  settings: Record<string, number> | undefined,
  name: string,
): boolean {
  return inAnySetting(ctx, settings, [name]);
}

// ---------------------------------------------------------------- subscribing others

/**
 * Of channels the user can already access, those they may NOT subscribe other users to (Zulip's
 * get_streams_to_which_user_cannot_add_subscribers), for subscribing others and for invitations
 * (`allowDefaultStreams`: anyone who may invite may invite to a default channel). The realm's
 * can_add_subscribers_group and administrators may add to every channel; others where the
 * channel's can_administer_channel_group or can_add_subscribers_group holds them; guests nowhere.
 * `ctx` and `settings` are read when not given.
 */
export async function channelsUserCannotAddSubscribersTo<S extends Pick<Stream, 'id' | 'is_default'>>(
  db: Pick<TxClient, '$queryRaw' | 'groupSetting'> & Parameters<typeof hasRealmPermission>[0],
  user: Viewer,
  streams: S[],
  options: { allowDefaultStreams?: boolean; ctx?: ViewerContext; settings?: StreamSettingGroups } = {},
): Promise<S[]> {
  if (streams.length === 0) return [];
  if (isGuest(user.role)) return streams;
  if (isAdministrator(user.role) || (await hasRealmPermission(db, user, 'can_add_subscribers_group'))) return [];
  const ctx = options.ctx ?? (await loadViewerContext(db, user));
  const settings =
    options.settings ??
    (await streamSettingGroups(
      db,
      streams.map((stream) => stream.id),
    ));
  return streams.filter((stream) => {
    if (options.allowDefaultStreams && stream.is_default) return false;
    const held = settings.get(stream.id);
    return !canAdministerChannel(ctx, held) && !inChannelSetting(ctx, held, 'can_add_subscribers_group');
  });
}

// ---------------------------------------------------------------- who hears about a channel

/** Active users of the realm; without guests when `nonGuestsOnly`. */
export async function activeRealmUserIds(
  db: Pick<TxClient, '$queryRaw'>,
  realmId: number,
  options: { nonGuestsOnly?: boolean } = {},
): Promise<number[]> {
  const nonGuests = options.nonGuestsOnly ? Prisma.sql`AND NOT ${isGuestSql('u')}` : Prisma.empty;
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT u.id FROM user_profile u WHERE u.realm_id = ${realmId} AND u.is_active ${nonGuests} ORDER BY u.id`;
  return rows.map((row) => row.id);
}

/** Active administrators (and owners) of the realm, bots included. */
export async function realmAdministratorIds(db: Pick<TxClient, '$queryRaw'>, realmId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT u.id FROM user_profile u WHERE u.realm_id = ${realmId} AND u.is_active AND ${isAdministratorSql('u')}
    ORDER BY u.id`;
  return rows.map((row) => row.id);
}

/**
 * SQL: the subscription row `alias` is an active user's active subscription. is_user_active is
 * the user's is_active, kept by triggers whoever writes (migration 20261128100000), so a
 * channel's subscribers are read without probing a user_profile row for each of them.
 */
export function activeSubscriptionSql(alias: string): string {
  return `${alias}.active AND ${alias}.is_user_active`;
}

/** activeSubscriptionSql as a fragment of a Prisma.sql statement. */
export const activeSubscription = (alias: string) => Prisma.raw(activeSubscriptionSql(alias));

/** Active subscribers of each channel. */
export async function activeSubscriberIds(
  db: Pick<TxClient, '$queryRaw'>,
  streamIds: number[],
): Promise<Map<number, number[]>> {
  const result = new Map<number, number[]>(streamIds.map((id) => [id, []]));
  if (streamIds.length === 0) return result;
  const rows = await db.$queryRaw<{ stream_id: number; user_id: number }[]>`
    SELECT s.stream_id, s.user_profile_id AS user_id FROM subscription s
    WHERE s.stream_id = ANY(${streamIds}::int[]) AND ${activeSubscription('s')}
    ORDER BY s.user_profile_id`;
  for (const row of rows) result.get(row.stream_id)!.push(row.user_id);
  return result;
}

/** Whether holding this channel setting lets one read a private channel (so changing it needs that access too). */
export function grantsContentAccess(settingName: string): boolean {
  return (CONTENT_ACCESS_SETTINGS as readonly string[]).includes(settingName);
}

/** Whether holding this channel setting lets one see a private channel (so it may not be role:everyone). */
export function grantsMetadataAccess(settingName: string): boolean {
  return (METADATA_ACCESS_SETTINGS as readonly string[]).includes(settingName);
}

type AudienceStream = Pick<Stream, 'id' | 'realm_id' | 'invite_only' | 'is_web_public'>;
type AudienceReader = Pick<TxClient, '$queryRaw' | 'groupSetting'>;

/**
 * SQL: one SELECT of the ids (`id`) of the realm's active users who can see the channel exists
 * without being subscribed to it: decideStreamAccess's `metadata` for each of them with
 * `subscribed` false, as a statement. Web-public: everyone; public: non-guests; private:
 * administrators and the non-guest members (at any depth) of the metadata-granting settings'
 * groups. `settings`: the channel's setting name → group id.
 */
export function unsubscribedMetadataAccessSql(stream: AudienceStream, settings: Record<string, number>): Prisma.Sql {
  const activeUsers = Prisma.sql`SELECT u.id FROM user_profile u WHERE u.realm_id = ${stream.realm_id} AND u.is_active`;
  if (stream.is_web_public) return activeUsers;
  if (!stream.invite_only) return Prisma.sql`${activeUsers} AND NOT ${isGuestSql('u')}`;
  const groupIds = METADATA_ACCESS_SETTINGS.map((name) => settings[name]).filter(
    (id): id is number => id !== undefined,
  );
  // Two branches rather than one OR, so each reads only its own rows (the realm's administrators
  // through the (realm_id, is_active) index, the groups' members through their memberships).
  return Prisma.sql`
    ${activeUsers} AND ${isAdministratorSql('u')}
    UNION
    SELECT m.user_profile_id FROM user_group_membership m
    JOIN user_profile u ON u.id = m.user_profile_id AND u.is_active AND NOT ${isGuestSql('u')}
    WHERE m.user_group_id IN (
      WITH RECURSIVE groups(id) AS (
        SELECT unnest(${groupIds}::int[])
        UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
      )
      SELECT id FROM groups)`;
}

/**
 * SQL: one SELECT of the ids (`id`) of everyone who can see the channel's settings and
 * subscriber list: unsubscribedMetadataAccessSql's users and the active subscribers.
 */
export function metadataAccessSql(stream: AudienceStream, settings: Record<string, number>): Prisma.Sql {
  return Prisma.sql`
    ${unsubscribedMetadataAccessSql(stream, settings)}
    UNION
    SELECT s.user_profile_id FROM subscription s WHERE s.stream_id = ${stream.id} AND ${activeSubscription('s')}`;
}

async function audienceIds(
  db: AudienceReader,
  stream: AudienceStream,
  settings: Record<string, number> | undefined,
  among: readonly number[] | undefined,
  audienceSql: (stream: AudienceStream, settings: Record<string, number>) => Prisma.Sql,
): Promise<number[]> {
  const holders = settings ?? (await streamSettingGroups(db, [stream.id])).get(stream.id)!;
  const only = among ? Prisma.sql`WHERE id = ANY(${among}::int[])` : Prisma.empty;
  const rows = await db.$queryRaw<
    { id: number }[]
  >`SELECT id FROM (${audienceSql(stream, holders)}) audience ${only} ORDER BY id`;
  return rows.map((row) => row.id);
}

/**
 * Everyone who can see the channel exists without being subscribed to it: who hears that a
 * new channel was created (Zulip's create_stream_if_needed), and, `among` new subscribers, who
 * need not hear of it first. `settings` (setting name → group id) is read when not given.
 */
export function unsubscribedMetadataAccessUserIds(
  db: AudienceReader,
  stream: AudienceStream,
  settings?: Record<string, number>,
  among?: readonly number[],
): Promise<number[]> {
  return audienceIds(db, stream, settings, among, unsubscribedMetadataAccessSql);
}

/**
 * Everyone who can see the channel's settings and subscriber list (Zulip's
 * bulk_can_access_stream_metadata_user_ids and bulk_get_subscriber_peer_info): those above
 * plus its active subscribers (guests included). The ONE audience of `stream` update and
 * delete events and of `subscription` peer_add / peer_remove, whichever service sends them.
 */
export function metadataAccessUserIds(
  db: AudienceReader,
  stream: AudienceStream,
  settings?: Record<string, number>,
): Promise<number[]> {
  return audienceIds(db, stream, settings, undefined, metadataAccessSql);
}

export function sortedUnion(...lists: number[][]): number[] {
  return [...new Set(lists.flat())].sort((a, b) => a - b);
}

// ---------------------------------------------------------------- rule 7: deleting messages in a channel

/**
 * Whether the user may delete any message in the channel: the realm's
 * can_delete_any_message_group or the channel's, with content access to the channel.
 */
export async function canDeleteAnyMessageInChannel(db: Reader, viewer: Viewer, stream: Stream): Promise<boolean> {
  return canDeleteInChannel(db, viewer, stream, 'can_delete_any_message_group');
}

/** The same for one's own messages (can_delete_own_message_group). */
export async function canDeleteOwnMessageInChannel(db: Reader, viewer: Viewer, stream: Stream): Promise<boolean> {
  return canDeleteInChannel(db, viewer, stream, 'can_delete_own_message_group');
}

async function canDeleteInChannel(db: Reader, viewer: Viewer, stream: Stream, settingName: string): Promise<boolean> {
  const access = await streamAccess(db, viewer, stream);
  if (!access.content) return false;
  const settings = await db.groupSetting.findMany({
    where: {
      OR: [
        { owner_kind: 'realm', owner_id: stream.realm_id, name: settingName },
        { owner_kind: 'stream', owner_id: stream.id, name: settingName },
      ],
    },
    select: { group_id: true },
  });
  for (const setting of settings) {
    if (await isUserInGroup(db, viewer.id, setting.group_id)) return true;
  }
  return false;
}

// ---------------------------------------------------------------- API objects

/** The channel settings a client sees, in the order zulip.yaml lists them. */
export const API_STREAM_GROUP_SETTINGS = [
  'can_add_subscribers_group',
  'can_remove_subscribers_group',
  'can_administer_channel_group',
  'can_send_message_group',
  'can_subscribe_group',
  'can_delete_any_message_group',
  'can_delete_own_message_group',
] as const;

/** Legacy stream_post_policy, derived from can_send_message_group (Zulip's SYSTEM_GROUPS_ENUM_MAP). */
const STREAM_POST_POLICY_BY_GROUP: Record<string, number> = {
  [SystemGroup.EVERYONE]: 1,
  [SystemGroup.ADMINISTRATORS]: 2,
  [SystemGroup.FULL_MEMBERS]: 3,
  [SystemGroup.MODERATORS]: 4,
};

/** A channel as the API shows it (zulip.yaml BasicChannel; the stream/subscription events declare it too). */
export type ApiStream = {
  stream_id: number;
  name: string;
  is_archived: boolean;
  description: string;
  date_created: number;
  creator_id: number | null;
  invite_only: boolean;
  rendered_description: string;
  is_web_public: boolean;
  stream_post_policy: number;
  message_retention_days: number | null;
  history_public_to_subscribers: boolean;
  first_message_id: number | null;
  is_recently_active: boolean;
  is_announcement_only: boolean;
  stream_weekly_traffic: number | null;
  folder_id: number | null;
  topics_policy: string;
} & Record<(typeof API_STREAM_GROUP_SETTINGS)[number], GroupSettingValue | null>;

/**
 * The API objects of channels (zulip.yaml BasicChannel, plus the spec's folder_id,
 * topics_policy and channel-level delete permissions), keyed by channel id.
 */
export async function streamApiDicts(db: Reader, streams: Stream[]): Promise<Map<number, ApiStream>> {
  const result = new Map<number, ApiStream>();
  if (streams.length === 0) return result; // e.g. register for a user without subscriptions: no reads
  const settings = await streamSettingGroups(
    db,
    streams.map((stream) => stream.id),
  );
  const groupIds = [...settings.values()].flatMap((byName) => Object.values(byName));
  const [values, named] = await Promise.all([
    groupSettingApiValues(db, groupIds),
    db.userGroup.findMany({
      where: { id: { in: [...new Set(groupIds)] }, is_system_group: true },
      select: { id: true, name: true },
    }),
  ]);
  const systemGroupName = new Map(named.map((group) => [group.id, group.name ?? '']));
  for (const stream of streams) {
    const byName = settings.get(stream.id)!;
    const valueOf = (name: string): GroupSettingValue | null =>
      byName[name] === undefined ? null : (values.get(byName[name]) ?? null);
    const sendGroup = byName.can_send_message_group;
    const postPolicy = STREAM_POST_POLICY_BY_GROUP[systemGroupName.get(sendGroup) ?? ''] ?? 1;
    const dict: ApiStream = {
      stream_id: stream.id,
      name: stream.name,
      is_archived: stream.is_archived,
      description: stream.description,
      date_created: Math.floor(stream.date_created.getTime() / 1000),
      creator_id: stream.creator_id,
      invite_only: stream.invite_only,
      rendered_description: stream.rendered_description,
      is_web_public: stream.is_web_public,
      stream_post_policy: postPolicy,
      message_retention_days: stream.message_retention_days,
      history_public_to_subscribers: stream.history_public_to_subscribers,
      first_message_id: stream.first_message_id,
      is_recently_active: stream.is_recently_active,
      is_announcement_only: postPolicy === 2,
      stream_weekly_traffic: null,
      folder_id: stream.folder_id,
      topics_policy: stream.topics_policy,
      can_add_subscribers_group: valueOf('can_add_subscribers_group'),
      can_remove_subscribers_group: valueOf('can_remove_subscribers_group'),
      can_administer_channel_group: valueOf('can_administer_channel_group'),
      can_send_message_group: valueOf('can_send_message_group'),
      can_subscribe_group: valueOf('can_subscribe_group'),
      can_delete_any_message_group: valueOf('can_delete_any_message_group'),
      can_delete_own_message_group: valueOf('can_delete_own_message_group'),
    };
    result.set(stream.id, dict);
  }
  return result;
}

/** A subscription's own properties (Zulip's Subscription.API_FIELDS plus in_home_view). */
export function subscriptionProperties(sub: {
  color: string;
  pin_to_top: boolean;
  is_muted: boolean;
  desktop_notifications: boolean | null;
  audible_notifications: boolean | null;
  push_notifications: boolean | null;
  email_notifications: boolean | null;
  wildcard_mentions_notify: boolean | null;
}) {
  return {
    color: sub.color,
    pin_to_top: sub.pin_to_top,
    is_muted: sub.is_muted,
    in_home_view: !sub.is_muted,
    desktop_notifications: sub.desktop_notifications,
    audible_notifications: sub.audible_notifications,
    push_notifications: sub.push_notifications,
    email_notifications: sub.email_notifications,
    wildcard_mentions_notify: sub.wildcard_mentions_notify,
  };
}

/** Channels above this size may answer include_subscribers=partial with partial_subscribers. */
export const PARTIAL_SUBSCRIBERS_THRESHOLD = 250;

/**
 * Subscriber lists for `include_subscribers`: full lists, or with "partial" and a large
 * channel, only its bots and the users active in the last 14 days (partial_subscribers).
 */
export async function subscriberFields(
  db: Pick<TxClient, '$queryRaw'>,
  streamIds: number[],
  mode: boolean | 'partial',
): Promise<Map<number, { subscribers: number[] } | { partial_subscribers: number[] }>> {
  const result = new Map<number, { subscribers: number[] } | { partial_subscribers: number[] }>();
  if (!mode || streamIds.length === 0) return result;
  const all = await activeSubscriberIds(db, streamIds);
  const large =
    mode === 'partial' ? streamIds.filter((id) => all.get(id)!.length >= PARTIAL_SUBSCRIBERS_THRESHOLD) : [];
  let partial = new Map<number, number[]>();
  if (large.length) {
    const rows = await db.$queryRaw<{ stream_id: number; user_id: number }[]>`
      SELECT s.stream_id, u.id AS user_id FROM subscription s
      JOIN user_profile u ON u.id = s.user_profile_id
      LEFT JOIN user_presence p ON p.user_profile_id = u.id
      WHERE s.stream_id = ANY(${large}::int[]) AND ${activeSubscription('s')}
        AND (u.is_bot OR u.last_active_at > now() - interval '14 days' OR p.last_active_time > now() - interval '14 days')
      ORDER BY u.id`;
    partial = new Map(large.map((id) => [id, []]));
    for (const row of rows) partial.get(row.stream_id)!.push(row.user_id);
  }
  for (const id of streamIds) {
    result.set(id, partial.has(id) ? { partial_subscribers: partial.get(id)! } : { subscribers: all.get(id)! });
  }
  return result;
}

/** A channel folder as the API shows it (register's channel_folders, GET /channel_folders, events). */
export function channelFolderDict(folder: ChannelFolder) {
  return {
    id: folder.id,
    name: folder.name,
    description: folder.description,
    rendered_description: folder.rendered_description,
    creator_id: folder.creator_id,
    date_created: Math.floor(folder.date_created.getTime() / 1000),
    is_archived: folder.is_archived,
    order: folder.order,
  };
}
