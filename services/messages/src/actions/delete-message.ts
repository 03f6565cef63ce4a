// Deleting a message (Zulip's delete_message_backend, validate_can_delete_message and
// do_delete_messages): one transaction with the message row locked; user_message rows,
// reactions and upload links go with it (foreign keys cascade). The delete_message event goes
// to everyone who had the message and to the deleting user; a channel's first_message_id moves
// when its oldest message goes (as the delete-topic job does); uploads that only this message
// linked are handed to the uploads clean-up job after commit.

import { JOB_QUEUES, type ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { transaction, type Message, type Stream, type TxClient, type UserProfile } from '@teamchat/db';
import {
  attachmentsOrphanedBy,
  canDeleteAnyMessageInChannel,
  canDeleteOwnMessageInChannel,
  hasRealmPermission,
  loadActor,
  messageActionAudience,
  MessageFlag,
  viewerOf,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { realmMessageSettings } from '../lib/context';
import { accessMessageForUpdate } from '../lib/messages';
import { refreshFirstMessageIds } from './first-message-ids';

const refused = () => new JsonableError("You don't have permission to delete this message");

/** Zulip's validate_can_delete_message. */
async function checkCanDelete(
  db: TxClient,
  user: UserProfile,
  message: Message,
  stream: Stream | null,
  deleteLimitSeconds: number | null,
): Promise<void> {
  const viewer = viewerOf(user);
  if (
    stream !== null
      ? await canDeleteAnyMessageInChannel(db, viewer, stream)
      : await hasRealmPermission(db, user, 'can_delete_any_message_group')
  )
    return;
  if (message.sender_id !== user.id) {
    // One's own bots' messages count as one's own.
    const sender = await db.userProfile.findUnique({
      where: { id: message.sender_id },
      select: { bot_owner_id: true },
    });
    if (sender?.bot_owner_id !== user.id) throw refused();
  }
  const canDeleteOwn =
    stream !== null
      ? await canDeleteOwnMessageInChannel(db, viewer, stream)
      : await hasRealmPermission(db, user, 'can_delete_own_message_group');
  if (!canDeleteOwn) throw refused();
  if (deleteLimitSeconds !== null && Date.now() - message.date_sent.getTime() > deleteLimitSeconds * 1000) {
    throw new JsonableError('The time limit for deleting this message has passed');
  }
}

/** DELETE /messages/{message_id} */
export async function doDeleteMessage(deps: MessagesDeps, userId: number, messageId: number): Promise<void> {
  const { user, realm } = await loadActor(deps.db, userId);
  const settings = realmMessageSettings(realm);
  await transaction(deps.db, async (tx) => {
    const db = tx.db;
    const { message, stream } = await accessMessageForUpdate(db, viewerOf(user), messageId);
    await checkCanDelete(db, user, message, stream, settings.message_content_delete_limit_seconds);

    const audience = new Set(await messageActionAudience(db, [message.id], stream));
    audience.add(user.id);
    const orphans = await attachmentsOrphanedBy(db, [message.id]);
    // Phones showing its push notification are told to remove it (the worker's push-removal).
    const shown = await db.$queryRaw<{ user_profile_id: number }[]>`
      SELECT user_profile_id FROM user_message
      WHERE message_id = ${message.id} AND (flags & ${MessageFlag.active_mobile_push_notification}) <> 0`;
    await db.message.delete({ where: { id: message.id } });
    if (shown.length > 0) {
      tx.onCommit(async () => {
        await deps.jobs.enqueuePushRemovals(
          shown.map((row) => ({
            realmId: realm.id,
            userId: row.user_profile_id,
            messageIds: [message.id],
            deleted: true,
          })),
        );
      });
    }

    const event: ZulipEventOf<'delete_message'> =
      stream !== null
        ? {
            type: 'delete_message',
            message_ids: [message.id],
            message_type: 'stream',
            stream_id: stream.id,
            topic: message.topic,
          }
        : { type: 'delete_message', message_ids: [message.id], message_type: 'private' };
    const recipients = [...audience].sort((a, b) => a - b);
    await deps.bus.sendEventOnCommit(tx, realm.id, event, recipients);
    if (stream !== null && stream.first_message_id === message.id) {
      await refreshFirstMessageIds(deps, tx, [stream], recipients);
    }
    if (orphans.length > 0) {
      tx.onCommit(async () => {
        await deps.jobs.queue(JOB_QUEUES.uploadsCleanup).add(JOB_QUEUES.uploadsCleanup, { attachmentIds: orphans });
      });
    }
  });
}
