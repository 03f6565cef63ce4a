// A channel's first_message_id, kept right when messages leave it (moved or deleted); an action
// helper, as it sends the stream update event (events are sent only from actions/).
import type { Stream, Tx } from '@teamchat/db';
import { metadataAccessUserIds } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';

/**
 * Recomputes channels' first_message_id, with a stream update event when it changes: to
 * `audience` when given (a deletion tells those it tells about the deleted message, as Zulip's
 * check_update_first_message_id and the worker's delete-topic job do), else to everyone who
 * can see the channel.
 */
export async function refreshFirstMessageIds(
  deps: MessagesDeps,
  tx: Tx,
  streams: Stream[],
  audience?: number[],
): Promise<void> {
  const db = tx.db;
  for (const stream of streams) {
    const [row] = await db.$queryRaw<
      { first: number | null }[]
    >`SELECT min(id)::int AS first FROM message WHERE stream_id = ${stream.id}`;
    const first = row?.first ?? null;
    if (first === stream.first_message_id) continue;
    await db.stream.update({ where: { id: stream.id }, data: { first_message_id: first } });
    await deps.bus.sendEventOnCommit(
      tx,
      stream.realm_id,
      {
        type: 'stream',
        op: 'update',
        property: 'first_message_id',
        value: first,
        stream_id: stream.id,
        name: stream.name,
      },
      audience ?? (await metadataAccessUserIds(db, stream)),
    );
  }
}
