import { optional, param, pathInt, required, type AuthedContext } from '@teamchat/core';
import { doAddReaction, doRemoveReaction } from '../actions/reactions';
import type { MessagesDeps } from '../deps';

/** POST /messages/{message_id}/reactions */
export async function addReaction({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const parsed = params.parse({
    emoji_name: required(param.string()),
    emoji_code: optional(param.string()),
    reaction_type: optional(param.string()),
  });
  await doAddReaction(deps, requester.userId, messageId, { emojiName: parsed.emoji_name, emojiCode: parsed.emoji_code, reactionType: parsed.reaction_type });
  return {};
}

/** DELETE /messages/{message_id}/reactions */
export async function removeReaction({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const parsed = params.parse({
    emoji_name: optional(param.string()),
    emoji_code: optional(param.string()),
    reaction_type: optional(param.string(), 'unicode_emoji'),
  });
  await doRemoveReaction(deps, requester.userId, messageId, { emojiName: parsed.emoji_name, emojiCode: parsed.emoji_code, reactionType: parsed.reaction_type });
  return {};
}
