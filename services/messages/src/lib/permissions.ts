// Who may send what (Zulip's access_stream_for_send_message and check_can_send_direct_message).

import { JsonableError } from '@teamchat/core';
import type { Stream, TxClient, UserProfile } from '@teamchat/db';
import { anyUserInGroup, isGuest, realmSettingGroup, SystemGroup } from '@teamchat/domain';

type Reader = Pick<
  TxClient,
  | '$queryRaw'
  | 'subscription'
  | 'stream'
  | 'groupSetting'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
  | 'userProfile'
  | 'userMessage'
  | 'message'
>;

type Sender = Pick<UserProfile, 'id' | 'role' | 'is_bot' | 'bot_owner_id' | 'realm_id'>;

/** A user's can_send_message_group membership and subscription in a channel. */
export interface PostingRights {
  canSend: boolean;
  subscribed: boolean;
}

/** can_send_message_group membership and subscription of one user, in one query. */
async function postingRights(db: Reader, userId: number, streamId: number): Promise<PostingRights> {
  const [row] = await db.$queryRaw<{ can_send: boolean; subscribed: boolean }[]>`
    WITH RECURSIVE groups(id) AS (
      SELECT gs.group_id FROM group_setting gs
      WHERE gs.owner_kind = 'stream' AND gs.owner_id = ${streamId} AND gs.name = 'can_send_message_group'
      UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
    )
    SELECT
      EXISTS (
        SELECT 1 FROM user_group_membership m JOIN groups ON m.user_group_id = groups.id
        JOIN user_profile u ON u.id = m.user_profile_id AND u.is_active
        WHERE m.user_profile_id = ${userId}
      ) AS can_send,
      EXISTS (SELECT 1 FROM subscription s WHERE s.user_profile_id = ${userId} AND s.stream_id = ${streamId} AND s.active) AS subscribed`;
  return { canSend: row.can_send, subscribed: row.subscribed };
}

/** Zulip's access_stream_for_send_message: posting permission, archived channels, private channels. */
export async function checkCanSendToStream(db: Reader, sender: Sender, stream: Stream): Promise<void> {
  const own = await postingRights(db, sender.id, stream.id);
  // A bot may post where its owner may.
  const owner =
    sender.is_bot && sender.bot_owner_id !== null ? await postingRights(db, sender.bot_owner_id, stream.id) : null;
  checkPostingRights(sender, stream, own, owner);
}

/** checkCanSendToStream on rights already read (the send's one statement, send-context.ts). */
export function checkPostingRights(
  sender: Sender,
  stream: Stream,
  own: PostingRights,
  owner: PostingRights | null,
): void {
  if (!own.canSend && !owner?.canSend) throw new JsonableError('You do not have permission to post in this channel.');
  // Made only when thrown: an error captures a stack trace, too dear for every send.
  const refused = () => new JsonableError(`Not authorized to send to channel '${stream.name}'`);
  if (stream.is_archived) throw refused();
  if (stream.realm_id !== sender.realm_id) throw new JsonableError('User not authorized for this query');
  if (stream.is_web_public) return;
  if (!(stream.invite_only || isGuest(sender.role))) return;
  if (own.subscribed || owner?.subscribed) return;
  throw refused();
}

/**
 * Zulip's check_can_send_direct_message: someone in the conversation must hold
 * direct_message_permission_group, and starting a new conversation needs
 * direct_message_initiator_group.
 */
export async function checkCanSendDirectMessage(
  db: Reader,
  sender: Sender,
  recipients: Pick<UserProfile, 'id' | 'is_bot'>[],
  dmKey: string,
): Promise<void> {
  if (sender.is_bot) return;
  if (recipients.every((user) => user.is_bot || user.id === sender.id)) return;
  // Every realm has both settings (made with the realm).
  const permission = (await realmSettingGroup(db, sender.realm_id, 'direct_message_permission_group'))!;
  const everyone = [...new Set([sender.id, ...recipients.map((user) => user.id)])];
  if (!(await anyUserInGroup(db, permission.id, everyone))) {
    throw new JsonableError(
      permission.name === SystemGroup.NOBODY
        ? 'Direct messages are disabled in this organization.'
        : 'This conversation does not include any users who can authorize it.',
    );
  }
  const initiator = (await realmSettingGroup(db, sender.realm_id, 'direct_message_initiator_group'))!;
  if (await anyUserInGroup(db, initiator.id, [sender.id])) return;
  const previous = await db.message.findFirst({
    where: { realm_id: sender.realm_id, dm_key: dmKey },
    select: { id: true },
  });
  if (!previous) throw new JsonableError('You do not have permission to initiate direct message conversations.');
}
