// Who has read a message (Zulip's read_receipts view): the read flag of its recipients,
// honouring everyone's send_read_receipts privacy setting and muting in both directions.

import { JsonableError } from '@teamchat/core';
import type { Realm } from '@teamchat/db';
import { MessageFlag, realmSettings, type Viewer } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { accessMessage } from './messages';

/**
 * The ids of the users who read the message, as Zulip decides: never its sender, nor users who
 * muted the viewer (the viewer could infer the muting from their instant reads) or whom the
 * viewer muted, nor deactivated users, nor those whose send_read_receipts is off. Bots count;
 * the historical flag does not matter; a message marked unread again is not read.
 */
export async function readReceiptUserIds(
  db: MessagesDeps['db'],
  viewer: Viewer,
  realm: Pick<Realm, 'settings'>,
  messageId: number,
): Promise<number[]> {
  const { message } = await accessMessage(db, viewer, messageId);
  if (!realmSettings(realm).realm_enable_read_receipts)
    throw new JsonableError('Read receipts are disabled in this organization.');
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT um.user_profile_id AS id FROM user_message um
    JOIN user_profile u ON u.id = um.user_profile_id
    WHERE um.message_id = ${message.id}
      AND (um.flags & ${MessageFlag.read}) <> 0
      AND u.is_active
      AND u.settings -> 'send_read_receipts' IS DISTINCT FROM 'false'::jsonb
      AND um.user_profile_id <> ${message.sender_id}
      AND NOT EXISTS (
        SELECT 1 FROM muted_user mu
        WHERE (mu.user_profile_id = um.user_profile_id AND mu.muted_user_id = ${viewer.id})
           OR (mu.user_profile_id = ${viewer.id} AND mu.muted_user_id = um.user_profile_id))
    ORDER BY um.user_profile_id`;
  return rows.map((row) => row.id);
}
