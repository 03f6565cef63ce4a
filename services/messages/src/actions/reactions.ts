// Emoji reactions (Zulip's zerver/actions/reactions.py and views/reactions.py): one transaction
// that locks the message row, checks access and the emoji, writes the reaction (and, for a
// reader without a user_message row, a historical one so later events reach them), and sends
// the `reaction` event after commit to everyone who has the message.

import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { Prisma, transaction, type Stream, type Tx } from '@teamchat/db';
import {
  checkEmojiRequest,
  emojiDataFor,
  loadActor,
  messageActionAudience,
  MessageFlag,
  viewerOf,
  type Actor,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { accessMessageForUpdate } from '../lib/messages';

export interface AddReactionInput {
  emojiName: string;
  emojiCode: string | undefined;
  reactionType: string | undefined;
}

export interface RemoveReactionInput {
  emojiName: string | undefined;
  emojiCode: string | undefined;
  reactionType: string;
}

type Reaction = { emoji_name: string; emoji_code: string; reaction_type: string };

async function notifyReaction(
  deps: MessagesDeps,
  tx: Tx,
  actor: Actor,
  message: { id: number },
  stream: Stream | null,
  reaction: Reaction,
  op: 'add' | 'remove',
) {
  const users = await messageActionAudience(tx.db, [message.id], stream);
  const { user } = actor;
  const event: ZulipEventOf<'reaction'> = {
    type: 'reaction',
    op,
    user_id: user.id,
    user: { user_id: user.id, email: user.email, full_name: user.full_name },
    message_id: message.id,
    emoji_name: reaction.emoji_name,
    emoji_code: reaction.emoji_code,
    reaction_type: reaction.reaction_type,
  };
  await deps.bus.sendEventOnCommit(tx, user.realm_id, event, users);
}

/** POST /messages/{message_id}/reactions (Zulip's check_add_reaction). */
export async function doAddReaction(
  deps: MessagesDeps,
  userId: number,
  messageId: number,
  input: AddReactionInput,
): Promise<void> {
  const actor = await loadActor(deps.db, userId);
  await transaction(deps.db, async (tx) => {
    const { message, received, stream } = await accessMessageForUpdate(tx.db, viewerOf(actor.user), messageId);
    let { emojiName, emojiCode, reactionType } = input;
    if (emojiCode === undefined || reactionType === undefined) {
      const data = await emojiDataFor(tx.db, actor.user.realm_id, emojiName);
      emojiCode ??= data.emoji_code;
      reactionType ??= data.reaction_type;
    }
    const sameEmoji = await tx.db.reaction.findMany({
      where: { message_id: message.id, emoji_code: emojiCode, reaction_type: reactionType },
      orderBy: { id: 'asc' },
    });
    if (sameEmoji.some((reaction) => reaction.user_profile_id === userId)) {
      throw new JsonableError('Reaction already exists.', { code: 'REACTION_ALREADY_EXISTS' });
    }
    if (sameEmoji.length > 0) {
      // A vote for an existing reaction: its name wins, unchecked (it may be a since-removed emoji).
      emojiName = sameEmoji[0].emoji_name;
    } else {
      await checkEmojiRequest(tx.db, actor.user.realm_id, emojiName, emojiCode, reactionType);
    }
    if (!received) {
      await tx.db.$executeRaw(Prisma.sql`
        INSERT INTO user_message (user_profile_id, message_id, flags) VALUES (${userId}, ${message.id}, ${MessageFlag.read | MessageFlag.historical})
        ON CONFLICT DO NOTHING`);
    }
    const reaction = { emoji_name: emojiName, emoji_code: emojiCode, reaction_type: reactionType };
    await tx.db.reaction.create({ data: { message_id: message.id, user_profile_id: userId, ...reaction } });
    await notifyReaction(deps, tx, actor, message, stream, reaction, 'add');
  });
}

/** DELETE /messages/{message_id}/reactions (Zulip's remove_reaction). */
export async function doRemoveReaction(
  deps: MessagesDeps,
  userId: number,
  messageId: number,
  input: RemoveReactionInput,
): Promise<void> {
  const actor = await loadActor(deps.db, userId);
  await transaction(deps.db, async (tx) => {
    const { message, stream } = await accessMessageForUpdate(tx.db, viewerOf(actor.user), messageId);
    let emojiCode = input.emojiCode;
    if (emojiCode === undefined) {
      if (input.emojiName === undefined)
        throw new JsonableError('At least one of the following arguments must be present: emoji_name, emoji_code');
      emojiCode = (await emojiDataFor(tx.db, actor.user.realm_id, input.emojiName)).emoji_code;
    }
    // No emoji check: the row proves the emoji was valid when added (it may be gone since).
    const existing = await tx.db.reaction.findUnique({
      where: {
        message_id_user_profile_id_emoji_code_reaction_type: {
          message_id: message.id,
          user_profile_id: userId,
          emoji_code: emojiCode,
          reaction_type: input.reactionType,
        },
      },
    });
    if (!existing) throw new JsonableError("Reaction doesn't exist.", { code: 'REACTION_DOES_NOT_EXIST' });
    await tx.db.reaction.delete({ where: { id: existing.id } });
    await notifyReaction(deps, tx, actor, message, stream, existing, 'remove');
  });
}
