import { JsonableError, optional, param, pathInt, type AuthedContext } from '@teamchat/core';
import { checkEmojiRequest, emojiDataFor, loadActor, MAX_STATUS_TEXT_LENGTH, userStatusOf } from '@teamchat/domain';
import { doUpdateUserStatus, type StatusChange } from '../actions/user-status';
import type { UsersDeps } from '../deps';
import { accessUserById, requireHuman } from '../lib/access';

/** POST /users/me/status (Zulip's update_user_status_backend; humans only). */
export async function updateOwnStatus({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { away, status_text, emoji_name, emoji_code, reaction_type } = params.parse({
    away: optional(param.bool()),
    status_text: optional(param.string({ strip: true, maxLength: MAX_STATUS_TEXT_LENGTH })),
    emoji_name: optional(param.string()),
    emoji_code: optional(param.string()),
    reaction_type: optional(param.string()),
  });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireHuman(actor);
  if (away === undefined && status_text === undefined && emoji_name === undefined)
    throw new JsonableError('Client did not pass any new values.');

  const change: StatusChange = { away, statusText: status_text };
  if (emoji_name === '') {
    // An empty name clears the emoji, whatever code or type came with it.
    change.emoji = { name: '', code: '', reactionType: 'unicode_emoji' };
  } else if (emoji_name !== undefined) {
    let code = emoji_code;
    let type = reaction_type;
    if (code === undefined || type === undefined) {
      // Simple clients name the emoji only; the code and type are looked up by name.
      const data = await emojiDataFor(deps.db, actor.realm_id, emoji_name);
      code ??= data.emoji_code;
      type ??= data.reaction_type;
    }
    await checkEmojiRequest(deps.db, actor.realm_id, emoji_name, code, type);
    change.emoji = { name: emoji_name, code, reactionType: type };
  } else if (emoji_code || reaction_type) {
    throw new JsonableError('Client must pass emoji_name if they pass either emoji_code or reaction_type.');
  }
  await doUpdateUserStatus(deps, actor, change);
  return {};
}

/** GET /users/{user_id}/status: {} when the user set nothing. */
export async function getUserStatus({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const userId = pathInt(req, 'user_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  const target = await accessUserById(deps.db, actor, userId, { forAdmin: false });
  return { status: await userStatusOf(deps.db, target) };
}
