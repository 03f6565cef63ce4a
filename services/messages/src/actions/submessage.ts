// Submessages (Zulip's zerver/views/submessage.py and zerver/actions/submessage.py): a vote, a
// new option or task on a widget, from anyone who can read the message. One transaction locks
// the message row (so the first-submessage rule and concurrent votes are decided one at a time),
// checks access, the sender rule and the widget's data, writes the row and sends the
// `submessage` event after commit to everyone who has the message.

import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError, type Requester } from '@teamchat/core';
import { transaction, type TxClient } from '@teamchat/db';
import { messageActionAudience } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { accessMessageForUpdate } from '../lib/messages';
import { checkPollData, checkTodoData, widgetTypeOf } from '../lib/widgets';

export interface SubmessageInput {
  messageId: number;
  msgType: string;
  content: string;
}

/**
 * The first submessage of a message must be its sender's (Zulip's verify_submessage_sender):
 * others may only add to a widget the sender set up.
 */
async function checkSubmessageSender(
  db: Pick<TxClient, 'subMessage'>,
  message: { id: number; sender_id: number },
  senderId: number,
): Promise<void> {
  if (message.sender_id === senderId) return;
  const started = await db.subMessage.findFirst({
    where: { message_id: message.id, sender_id: message.sender_id },
    select: { id: true },
  });
  if (!started) throw new JsonableError('You cannot attach a submessage to this message.');
}

/** POST /submessage (Zulip's process_submessage + do_add_submessage). */
export async function doAddSubmessage(deps: MessagesDeps, requester: Requester, input: SubmessageInput): Promise<void> {
  const viewer = { id: requester.userId, realm_id: requester.realmId, role: requester.role };
  await transaction(deps.db, async (tx) => {
    const { message, stream } = await accessMessageForUpdate(tx.db, viewer, input.messageId);
    await checkSubmessageSender(tx.db, message, viewer.id);

    let data: unknown;
    try {
      data = JSON.parse(input.content);
    } catch {
      throw new JsonableError('Invalid json for submessage');
    }
    // Only a poll's and a to-do list's data have rules; anything else is stored as sent.
    const widgetType = await widgetTypeOf(tx.db, message.id);
    const isWidgetAuthor = message.sender_id === viewer.id;
    if (widgetType === 'poll') checkPollData(data, isWidgetAuthor);
    if (widgetType === 'todo') checkTodoData(data, isWidgetAuthor);

    const submessage = await tx.db.subMessage.create({
      data: { message_id: message.id, sender_id: viewer.id, msg_type: input.msgType, content: input.content },
      select: { id: true },
    });
    const event: ZulipEventOf<'submessage'> = {
      type: 'submessage',
      msg_type: input.msgType,
      message_id: message.id,
      submessage_id: submessage.id,
      sender_id: viewer.id,
      content: input.content,
    };
    const users = await messageActionAudience(tx.db, [message.id], stream);
    await deps.bus.sendEventOnCommit(tx, viewer.realm_id, event, users);
  });
}
