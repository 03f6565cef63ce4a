// Reading channels: by name, with the access checks of updates and deletes.
import { JsonableError } from '@teamchat/core';
import { lockForChange, type Stream, type TxClient, type UserProfile } from '@teamchat/db';
import {
  canAdministerChannel,
  hasContentAccess,
  INVALID_CHANNEL_ID,
  loadViewerContext,
  STREAM_COLORS,
  streamSettingGroups,
  viewerOf,
  type ViewerContext,
} from '@teamchat/domain';

type Reader = Pick<TxClient, '$queryRaw' | 'stream' | 'groupSetting'>;

/** Channels of the realm named `names`, compared case-insensitively (Zulip's bulk_get_streams), keyed by lower-cased name. */
export async function streamsByName(db: Reader, realmId: number, names: string[]): Promise<Map<string, Stream>> {
  if (names.length === 0) return new Map();
  const lowered = [...new Set(names.map((name) => name.toLowerCase()))];
  const streams = await db.$queryRaw<
    Stream[]
  >`SELECT * FROM stream WHERE realm_id = ${realmId} AND lower(name) = ANY(${lowered}::text[])`;
  return new Map(streams.map((stream) => [stream.name.toLowerCase(), stream]));
}

export async function streamByName(db: Reader, realmId: number, name: string): Promise<Stream | undefined> {
  return (await streamsByName(db, realmId, [name.trim()])).get(name.trim().toLowerCase());
}

export class CannotAdministerChannelError extends JsonableError {
  constructor() {
    super('You do not have permission to administer this channel.');
  }
}

export interface ChannelForUpdate {
  stream: Stream;
  settings: Record<string, number>;
  viewer: ViewerContext;
  subscribed: boolean;
  contentAccess: boolean;
}

/** Serialises changes to one channel (concurrent updates apply one after the other). */
export function lockStream(db: Pick<TxClient, '$queryRaw'>, streamId: number): Promise<void> {
  return lockForChange(db, 'stream', streamId);
}

/**
 * A channel the user may administer (Zulip's access_stream_for_delete_or_update_requiring_
 * metadata_access): organisation administrators, or members of can_administer_channel_group.
 * Someone who can read the channel but not administer it is told so; anyone else gets
 * "Invalid channel ID", so private channels do not leak. Archived channels are included.
 */
export async function accessStreamForUpdate(
  db: Reader,
  user: UserProfile,
  streamId: number,
): Promise<ChannelForUpdate> {
  const stream = await db.stream.findFirst({ where: { id: streamId, realm_id: user.realm_id } });
  if (!stream) throw new JsonableError(INVALID_CHANNEL_ID);
  const [viewer, settingsByStream] = await Promise.all([
    loadViewerContext(db, viewerOf(user)),
    streamSettingGroups(db, [stream.id]),
  ]);
  const settings = settingsByStream.get(stream.id)!;
  const contentAccess = hasContentAccess(viewer, stream, settings);
  if (!canAdministerChannel(viewer, settings)) {
    if (contentAccess) throw new CannotAdministerChannelError();
    throw new JsonableError(INVALID_CHANNEL_ID);
  }
  return { stream, settings, viewer, subscribed: viewer.subscribedStreamIds.has(stream.id), contentAccess };
}

// Colours handed to new subscriptions, each user's unused ones first (as Zulip's pick_colors).
export function pickColors(usedColors: Set<string>, count: number): string[] {
  const unused = STREAM_COLORS.filter((color) => !usedColors.has(color));
  const colors: string[] = [];
  for (let i = 0; i < count; i++) colors.push(unused[i] ?? STREAM_COLORS[(usedColors.size + i) % STREAM_COLORS.length]);
  return colors;
}
