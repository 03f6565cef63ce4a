// What a message's mentions mean, shared by sending and editing: the permissions that depend
// on what was actually mentioned (wildcards in big channels or topics, user groups), and the
// users who get the mention flags.

import { JsonableError } from '@teamchat/core';
import type { TxClient, UserProfile } from '@teamchat/db';
import {
  hasRealmPermission,
  hasUserGroupPermission,
  recursiveGroupMemberIds,
  type RenderingResult,
} from '@teamchat/domain';

/** Zulip's Realm.WILDCARD_MENTION_THRESHOLD. */
const WILDCARD_MENTION_THRESHOLD = 15;

type Reader = Parameters<typeof hasRealmPermission>[0] & Pick<TxClient, '$queryRaw' | 'userGroup'>;

/** Who took part in a topic: its senders and those who reacted in it (topic wildcard mentions reach them). */
export async function topicParticipantIds(
  db: Pick<TxClient, '$queryRaw'>,
  streamId: number,
  topic: string,
): Promise<Set<number>> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT m.sender_id AS id FROM message m WHERE m.stream_id = ${streamId} AND lower(m.topic) = lower(${topic})
    UNION
    SELECT r.user_profile_id FROM reaction r JOIN message m ON m.id = r.message_id
    WHERE m.stream_id = ${streamId} AND lower(m.topic) = lower(${topic})`;
  return new Set(rows.map((row) => row.id));
}

export interface ChannelMentionContext {
  streamId: number;
  topic: string;
  /** Active subscribers of the channel (asked only when the message has a channel wildcard). */
  subscriberCount(): Promise<number>;
}

/**
 * Checks the sender may use the mentions `rendering` holds (null channel: a direct message)
 * and answers who is mentioned (group members included) and who takes part in the topic.
 */
export async function checkMentions(
  db: Reader,
  sender: UserProfile,
  channel: ChannelMentionContext | null,
  rendering: RenderingResult,
): Promise<{ mentioned: Set<number>; topicParticipants: Set<number> }> {
  let topicParticipants = new Set<number>();
  if (channel !== null) {
    if (
      rendering.streamWildcard &&
      (await channel.subscriberCount()) > WILDCARD_MENTION_THRESHOLD &&
      !(await hasRealmPermission(db, sender, 'can_mention_many_users_group'))
    ) {
      throw new JsonableError('You do not have permission to use channel wildcard mentions in this channel.', {
        code: 'STREAM_WILDCARD_MENTION_NOT_ALLOWED',
      });
    }
    if (rendering.topicWildcard) {
      topicParticipants = await topicParticipantIds(db, channel.streamId, channel.topic);
      topicParticipants.add(sender.id);
      if (
        topicParticipants.size > WILDCARD_MENTION_THRESHOLD &&
        !(await hasRealmPermission(db, sender, 'can_mention_many_users_group'))
      ) {
        throw new JsonableError('You do not have permission to use topic wildcard mentions in this topic.', {
          code: 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED',
        });
      }
    }
  }
  const mentioned = new Set(rendering.mentionedUserIds);
  if (rendering.mentionedGroupIds.size > 0) {
    const groups = await db.userGroup.findMany({
      where: { id: { in: [...rendering.mentionedGroupIds] } },
      select: { id: true, name: true },
    });
    for (const group of groups) {
      if (!(await hasUserGroupPermission(db, sender, group.id, 'can_mention_group'))) {
        throw new JsonableError(`You are not allowed to mention user group '${group.name}'.`);
      }
      for (const memberId of await recursiveGroupMemberIds(db, group.id)) mentioned.add(memberId);
    }
  }
  return { mentioned, topicParticipants };
}
