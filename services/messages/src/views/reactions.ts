import {
  optional,
  param,
  pathInt,
  required,
  RESPONDED,
  sendJson,
  type AuthedContext,
  type ViewResult,
} from '@teamchat/core';
import { emojiDataFile } from '@teamchat/domain';
import { doAddReaction, doRemoveReaction } from '../actions/reactions';
import type { MessagesDeps } from '../deps';

/** GET {EMOJI_DATA_PATH}: the unicode emoji table clients offer in their pickers (a file, no envelope). */
export function getEmojiData({ res }: AuthedContext<MessagesDeps>): ViewResult {
  sendJson(res, 200, emojiDataFile(), { 'Cache-Control': 'public, max-age=86400' });
  return RESPONDED;
}

/** POST /messages/{message_id}/reactions */
export async function addReaction({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const parsed = params.parse({
    emoji_name: required(param.string()),
    emoji_code: optional(param.string()),
    reaction_type: optional(param.string()),
  });
  await doAddReaction(deps, requester.userId, messageId, {
    emojiName: parsed.emoji_name,
    emojiCode: parsed.emoji_code,
    reactionType: parsed.reaction_type,
  });
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
  await doRemoveReaction(deps, requester.userId, messageId, {
    emojiName: parsed.emoji_name,
    emojiCode: parsed.emoji_code,
    reactionType: parsed.reaction_type,
  });
  return {};
}
