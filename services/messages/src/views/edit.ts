import { JsonableError, optional, param, pathInt, v, type AuthedContext } from '@teamchat/core';
import { doDeleteMessage } from '../actions/delete-message';
import { doUpdateMessage } from '../actions/edit-message';
import type { MessagesDeps } from '../deps';
import { editHistory } from '../lib/edit-history';

/** PATCH /messages/{message_id} */
export async function updateMessage({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const parsed = params.parse({
    topic: optional(param.string({ allowNullBytes: true }), undefined, { aliases: ['subject'] }),
    propagate_mode: optional(param.enumString('change_one', 'change_later', 'change_all'), 'change_one'),
    send_notification_to_old_thread: optional(param.bool(), false),
    send_notification_to_new_thread: optional(param.bool(), true),
    content: optional(param.string({ allowNullBytes: true })),
    stream_id: optional(param.json(v.id())),
  });
  return doUpdateMessage(deps, requester.userId, messageId, {
    topic: parsed.topic,
    propagateMode: parsed.propagate_mode as 'change_one' | 'change_later' | 'change_all',
    content: parsed.content,
    streamId: parsed.stream_id,
    sendNotificationToOldThread: parsed.send_notification_to_old_thread,
    sendNotificationToNewThread: parsed.send_notification_to_new_thread,
  });
}

/** GET /messages/{message_id}/history */
export async function getMessageHistory({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const parsed = params.parse({ allow_empty_topic_name: optional(param.bool(), false) });
  const history = await editHistory(deps, requester.userId, messageId, parsed.allow_empty_topic_name);
  if (history === null) throw new JsonableError('Message edit history is disabled in this organization');
  return { message_history: history };
}

/** DELETE /messages/{message_id} */
export async function deleteMessage({ deps, requester, req }: AuthedContext<MessagesDeps>) {
  await doDeleteMessage(deps, requester.userId, pathInt(req, 'message_id'));
  return {};
}
