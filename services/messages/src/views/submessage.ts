import { JsonableError, param, required, v, type AuthedContext } from '@teamchat/core';
import { doAddSubmessage } from '../actions/submessage';
import type { MessagesDeps } from '../deps';

/** POST /submessage (Zulip's process_submessage): a widget's vote, option or task. */
export async function addSubmessage({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    message_id: required(param.json(v.id())),
    msg_type: required(param.string()),
    content: required(param.string()),
  });
  // Stored as text, which PostgreSQL refuses with a NUL in it (content must parse as JSON,
  // which has none).
  if (parsed.msg_type.includes('\u0000')) throw new JsonableError('msg_type contains NULL (0x00) characters.');
  await doAddSubmessage(deps, requester, {
    messageId: parsed.message_id,
    msgType: parsed.msg_type,
    content: parsed.content,
  });
  return {};
}
