// Typing notifications (Zulip's zerver/actions/typing.py): transient events, no stored state.
import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import type { UserProfile } from '@teamchat/db';
import {
  accessStreamById,
  dmParticipants,
  loadActor,
  normalizeTopicInput,
  userSettings,
  viewerOf,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { realmMessageSettings } from '../lib/context';
import { accessMessage } from '../lib/messages';
import { checkCanSendToStream } from '../lib/permissions';

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS. */
const MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS = 100;

export type TypingOp = 'start' | 'stop';

const receivesTyping = (user: UserProfile) =>
  user.is_active && userSettings(user).receives_typing_notifications === true;

/** Active subscribers who want typing notifications; none for channels above the size limit. */
async function channelTypingAudience(deps: MessagesDeps, streamId: number): Promise<number[]> {
  const subscribers = await deps.db.userProfile.findMany({
    where: { is_active: true, subscriptions: { some: { stream_id: streamId, active: true } } },
  });
  if (subscribers.length > MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS) return [];
  return subscribers.filter(receivesTyping).map((user) => user.id);
}

export async function doSendChannelTyping(
  deps: MessagesDeps,
  userId: number,
  op: TypingOp,
  streamId: number,
  topicInput: string,
): Promise<void> {
  const { user } = await loadActor(deps.db, userId);
  if (!userSettings(user).send_stream_typing_notifications)
    throw new JsonableError('User has disabled typing notifications for channel messages');
  const { stream } = await accessStreamById(deps.db, viewerOf(user), streamId);
  if (stream.is_archived) throw new JsonableError('Invalid channel ID');
  await checkCanSendToStream(deps.db, user, stream);
  const event: ZulipEventOf<'typing'> = {
    type: 'typing',
    message_type: 'stream',
    op,
    sender: { user_id: user.id, email: user.email },
    stream_id: stream.id,
    topic: normalizeTopicInput(topicInput),
  };
  await deps.bus.sendTransientEvent(user.realm_id, event, await channelTypingAudience(deps, stream.id));
}

export async function doSendDirectTyping(
  deps: MessagesDeps,
  userId: number,
  op: TypingOp,
  to: number[],
): Promise<void> {
  const { user } = await loadActor(deps.db, userId);
  if (!userSettings(user).send_private_typing_notifications)
    throw new JsonableError('User has disabled typing notifications for direct messages');
  const ids = to.includes(user.id) ? [...to] : [...to, user.id];
  const users = await deps.db.userProfile.findMany({ where: { realm_id: user.realm_id, id: { in: ids } } });
  const byId = new Map(users.map((candidate) => [candidate.id, candidate]));
  // One unknown id rejects the whole request: a partial list would name another conversation.
  const recipients = ids.map((id) => byId.get(id) ?? raise(`Invalid user ID ${id}`));
  const event: ZulipEventOf<'typing'> = {
    type: 'typing',
    message_type: 'direct',
    op,
    sender: { user_id: user.id, email: user.email },
    recipients: recipients.map((recipient) => ({ user_id: recipient.id, email: recipient.email })),
  };
  await deps.bus.sendTransientEvent(
    user.realm_id,
    event,
    recipients.filter(receivesTyping).map((recipient) => recipient.id),
  );
}

/** Typing while editing a message one may edit (Zulip's send_message_edit_notification_backend). */
export async function doSendMessageEditTyping(
  deps: MessagesDeps,
  userId: number,
  op: TypingOp,
  messageId: number,
): Promise<void> {
  const { user, realm } = await loadActor(deps.db, userId);
  const { message } = await accessMessage(deps.db, viewerOf(user), messageId);
  const settings = realmMessageSettings(realm);
  if (!settings.allow_message_editing) throw new JsonableError('Your organization has turned off message editing');
  if (message.sender_id !== user.id) throw new JsonableError("You don't have permission to edit this message");
  if (
    settings.message_content_edit_limit_seconds !== null &&
    Date.now() - message.date_sent.getTime() > settings.message_content_edit_limit_seconds * 1000
  ) {
    throw new JsonableError('The time limit for editing this message has passed');
  }
  const base = { type: 'typing_edit_message', op, sender_id: user.id, message_id: message.id } as const;
  if (message.stream_id !== null) {
    if (!userSettings(user).send_stream_typing_notifications)
      throw new JsonableError('User has disabled typing notifications for channel messages');
    const event: ZulipEventOf<'typing_edit_message'> = {
      ...base,
      recipient: { type: 'channel', channel_id: message.stream_id, topic: message.topic },
    };
    await deps.bus.sendTransientEvent(user.realm_id, event, await channelTypingAudience(deps, message.stream_id));
    return;
  }
  if (!userSettings(user).send_private_typing_notifications)
    throw new JsonableError('User has disabled typing notifications for direct messages');
  const participantIds = dmParticipants(message.dm_key!);
  const participants = await deps.db.userProfile.findMany({ where: { id: { in: participantIds } } });
  const event: ZulipEventOf<'typing_edit_message'> = {
    ...base,
    recipient: { type: 'direct', user_ids: participantIds },
  };
  await deps.bus.sendTransientEvent(
    user.realm_id,
    event,
    participants.filter(receivesTyping).map((participant) => participant.id),
  );
}

function raise(msg: string): never {
  throw new JsonableError(msg);
}
