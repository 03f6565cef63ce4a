// DELETE /streams/{stream_id}: archiving a channel (Zulip's do_deactivate_stream). Its messages
// and subscriptions stay; it stops being a default channel.
import { JsonableError } from '@teamchat/core';
import { transaction, type UserProfile } from '@teamchat/db';
import { metadataAccessUserIds } from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';
import { sendStreamDeletionEvent, sendStreamUpdateEvent } from './channel-events';
import { accessStreamForUpdate, lockStream } from '../lib/streams';
import { sendDefaultStreamsEvent } from './default-streams';

export async function doArchiveStream(deps: ChannelsDeps, user: UserProfile, streamId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const db = tx.db;
    const channel = await accessStreamForUpdate(db, user, streamId);
    await lockStream(db, streamId);
    const stream = await db.stream.findUniqueOrThrow({ where: { id: streamId } });
    if (stream.is_archived) throw new JsonableError('Channel is already deactivated');
    // Who could see it before it goes.
    const audience = await metadataAccessUserIds(db, stream, channel.settings);
    const archived = await db.stream.update({
      where: { id: stream.id },
      data: { is_archived: true, is_default: false },
    });
    if (stream.is_default) await sendDefaultStreamsEvent(deps, tx, stream.realm_id);
    await sendStreamUpdateEvent(deps, tx, archived, 'is_archived', true, audience);
    await sendStreamDeletionEvent(deps, tx, [archived], audience);
  });
}
