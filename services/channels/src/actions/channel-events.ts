// The `stream` events of channel actions, in Zulip's shapes (zerver/lib/streams.py, actions/streams.py).
import type { Stream, Tx } from '@teamchat/db';
import { streamApiDicts } from '@teamchat/domain';
import type { EventBus, EventSettingValue, ZulipEventOf } from '@teamchat/bus';

type Deps = { bus: EventBus };

export async function sendStreamCreationEvent(deps: Deps, tx: Tx, stream: Stream, userIds: number[]): Promise<void> {
  if (userIds.length === 0) return;
  const dict = (await streamApiDicts(tx.db, [stream])).get(stream.id)!;
  await deps.bus.sendEventOnCommit(tx, stream.realm_id, { type: 'stream', op: 'create', streams: [dict] }, userIds);
}

export async function sendStreamDeletionEvent(deps: Deps, tx: Tx, streams: Stream[], userIds: number[]): Promise<void> {
  if (userIds.length === 0 || streams.length === 0) return;
  const event: ZulipEventOf<'stream'> = {
    type: 'stream',
    op: 'delete',
    streams: streams.map((stream) => ({ stream_id: stream.id })),
    stream_ids: streams.map((stream) => stream.id),
  };
  await deps.bus.sendEventOnCommit(tx, streams[0].realm_id, event, userIds);
}

/** The fields a stream update event may carry beside its property's new value. */
export type StreamUpdateExtra = Partial<
  Pick<ZulipEventOf<'stream', 'update'>, 'rendered_description' | 'history_public_to_subscribers' | 'is_web_public'>
>;

export async function sendStreamUpdateEvent(
  deps: Deps,
  tx: Tx,
  stream: Pick<Stream, 'id' | 'realm_id' | 'name'>,
  property: string,
  value: EventSettingValue,
  userIds: number[],
  extra: StreamUpdateExtra = {},
): Promise<void> {
  const event: ZulipEventOf<'stream', 'update'> = {
    type: 'stream',
    op: 'update',
    stream_id: stream.id,
    name: stream.name,
    property,
    value,
    ...extra,
  };
  await deps.bus.sendEventOnCommit(tx, stream.realm_id, event, userIds);
}

/** peer_add / peer_remove: who joined or left, for everyone else tracking the subscriber list. */
export async function sendPeerEvent(
  deps: Deps,
  tx: Tx,
  realmId: number,
  op: 'peer_add' | 'peer_remove',
  streamId: number,
  userIds: number[],
  audience: number[],
): Promise<void> {
  const changed = new Set(userIds);
  const recipients = audience.filter((id) => !changed.has(id));
  if (userIds.length === 0 || recipients.length === 0) return;
  await deps.bus.sendEventOnCommit(
    tx,
    realmId,
    { type: 'subscription', op, stream_ids: [streamId], user_ids: [...userIds].sort((a, b) => a - b) },
    recipients,
  );
}
