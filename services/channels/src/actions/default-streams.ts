// Default channels: the channels new users are subscribed to (stream.is_default).
import { JsonableError } from '@teamchat/core';
import { transaction, type Stream, type Tx } from '@teamchat/db';
import { activeRealmUserIds } from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';

type Deps = Pick<ChannelsDeps, 'bus'>;

export async function defaultStreamIds(db: Tx['db'], realmId: number): Promise<number[]> {
  const rows = await db.stream.findMany({
    where: { realm_id: realmId, is_default: true, is_archived: false },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  return rows.map((row) => row.id);
}

/** Zulip's notify_default_streams: the new list, to every non-guest. */
export async function sendDefaultStreamsEvent(deps: Deps, tx: Tx, realmId: number): Promise<void> {
  const ids = await defaultStreamIds(tx.db, realmId);
  await deps.bus.sendEventOnCommit(
    tx,
    realmId,
    { type: 'default_streams', default_streams: ids },
    await activeRealmUserIds(tx.db, realmId, { nonGuestsOnly: true }),
  );
}

/** Marks a channel default (or not) inside the caller's transaction; no event when nothing changes. */
export async function setDefaultStream(deps: Deps, tx: Tx, stream: Stream, isDefault: boolean): Promise<void> {
  if (stream.is_default === isDefault) return;
  if (isDefault && stream.invite_only) throw new JsonableError('Private channels cannot be made default.');
  await tx.db.stream.update({ where: { id: stream.id }, data: { is_default: isDefault } });
  await sendDefaultStreamsEvent(deps, tx, stream.realm_id);
}

/** POST / DELETE /default_streams. */
export async function doChangeDefaultStream(deps: ChannelsDeps, stream: Stream, isDefault: boolean): Promise<void> {
  await transaction(deps.db, (tx) => setDefaultStream(deps, tx, stream, isDefault));
}
