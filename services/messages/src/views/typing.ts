import { JsonableError, LIST_LIMITS, optional, param, pathInt, required, v, type AuthedContext } from '@teamchat/core';
import { doSendChannelTyping, doSendDirectTyping, doSendMessageEditTyping } from '../actions/typing';
import type { MessagesDeps } from '../deps';

/** POST /typing */
export async function setTypingStatus({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    to: optional(param.json(v.list(v.id(), { maxLength: LIST_LIMITS.directMessageRecipients }))),
    op: required(param.enumString('start', 'stop')),
    type: optional(param.enumString('direct', 'stream', 'channel'), 'direct'),
    stream_id: optional(param.json(v.id())),
    topic: optional(param.string(), undefined, { aliases: ['subject'] }),
  });
  if (parsed.type === 'stream' || parsed.type === 'channel') {
    if (parsed.stream_id === undefined) throw new JsonableError("Missing 'stream_id' argument");
    if (parsed.topic === undefined) throw new JsonableError('Missing topic');
    await doSendChannelTyping(deps, requester.userId, parsed.op, parsed.stream_id, parsed.topic);
    return {};
  }
  if (parsed.to === undefined) throw new JsonableError("Missing 'to' argument");
  if (parsed.to.length === 0) throw new JsonableError("Empty 'to' list");
  await doSendDirectTyping(deps, requester.userId, parsed.op, parsed.to);
  return {};
}

/** POST /messages/{message_id}/typing */
export async function setMessageEditTypingStatus({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const { op } = params.parse({ op: required(param.enumString('start', 'stop')) });
  await doSendMessageEditTyping(deps, requester.userId, op, messageId);
  return {};
}
