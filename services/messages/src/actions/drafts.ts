// Drafts (Zulip's zerver/lib/drafts.py), synchronised to the user's other clients by `drafts`
// events.
import { JsonableError, ResourceNotFoundError } from '@teamchat/core';
import { transaction, type Draft, type TxClient } from '@teamchat/db';
import {
  accessStreamById,
  draftDict,
  loadActor,
  SERVER_LIMITS,
  truncateText,
  userSettings,
  viewerOf,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { normalizeBody } from './send-message';

export interface DraftInput {
  type: '' | 'stream' | 'private';
  to: number[];
  topic: string;
  content: string;
  timestamp?: number;
}

export async function checkDraftsEnabled(deps: MessagesDeps, userId: number) {
  const actor = await loadActor(deps.db, userId);
  if (!userSettings(actor.user).enable_drafts_synchronization)
    throw new JsonableError('User has disabled synchronizing drafts.');
  return actor;
}

type Reader = Pick<
  TxClient,
  | 'userProfile'
  | 'stream'
  | 'subscription'
  | 'groupSetting'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
  | '$queryRaw'
  | 'userMessage'
>;

/** Zulip's further_validated_draft_dict: the columns to store. */
async function validatedDraft(db: Reader, user: { id: number; realm_id: number; role: number }, input: DraftInput) {
  const content = normalizeBody(input.content);
  const timestamp = input.timestamp ?? Date.now() / 1000;
  if (timestamp < 0) throw new JsonableError('Timestamp must not be negative.');
  const lastEditTime = new Date(Math.round(timestamp * 1_000_000) / 1000);
  if (input.type === 'stream') {
    const topic = truncateText(input.topic, SERVER_LIMITS.max_topic_length, '...');
    if (topic.includes('\u0000')) throw new JsonableError('Topic must not contain null bytes');
    if (input.to.length !== 1) throw new JsonableError('Must specify exactly 1 channel ID for channel messages');
    const { stream } = await accessStreamById(db, viewerOf(user), input.to[0]);
    return { type: 'stream', to: [stream.id], topic, content, last_edit_time: lastEditTime };
  }
  if (input.type === 'private' && input.to.length > 0) {
    const ids = [...new Set(input.to)];
    const users = await db.userProfile.findMany({ where: { realm_id: user.realm_id, id: { in: ids } } });
    for (const id of ids)
      if (!users.some((candidate) => candidate.id === id)) throw new JsonableError(`Invalid user ID ${id}`);
    for (const recipient of users)
      if (!recipient.is_active) throw new JsonableError(`'${recipient.email}' is no longer using Zulip.`);
    // The conversation's other participants; a conversation with oneself lists oneself.
    const others = ids.filter((id) => id !== user.id).sort((a, b) => a - b);
    return {
      type: 'private',
      to: others.length ? others : [user.id],
      topic: '',
      content,
      last_edit_time: lastEditTime,
    };
  }
  // Unaddressed (and direct drafts without recipients, as Zulip stores them).
  return { type: '', to: [], topic: '', content, last_edit_time: lastEditTime };
}

export async function doCreateDrafts(deps: MessagesDeps, userId: number, inputs: DraftInput[]): Promise<number[]> {
  const { user } = await checkDraftsEnabled(deps, userId);
  const rows: Awaited<ReturnType<typeof validatedDraft>>[] = [];
  for (const input of inputs) rows.push(await validatedDraft(deps.db, user, input));
  return transaction(deps.db, async (tx) => {
    const drafts: Draft[] = [];
    for (const row of rows) drafts.push(await tx.db.draft.create({ data: { user_profile_id: user.id, ...row } }));
    if (drafts.length > 0) {
      await deps.bus.sendEventOnCommit(
        tx,
        user.realm_id,
        { type: 'drafts', op: 'add', drafts: drafts.map(draftDict) },
        [user.id],
      );
    }
    return drafts.map((draft) => draft.id);
  });
}

export async function doEditDraft(
  deps: MessagesDeps,
  userId: number,
  draftId: number,
  input: DraftInput,
): Promise<void> {
  const { user } = await checkDraftsEnabled(deps, userId);
  const existing = await deps.db.draft.findFirst({ where: { id: draftId, user_profile_id: user.id } });
  if (!existing) throw new ResourceNotFoundError('Draft does not exist');
  const row = await validatedDraft(deps.db, user, input);
  await transaction(deps.db, async (tx) => {
    const draft = await tx.db.draft.update({ where: { id: draftId }, data: row });
    await deps.bus.sendEventOnCommit(tx, user.realm_id, { type: 'drafts', op: 'update', draft: draftDict(draft) }, [
      user.id,
    ]);
  });
}

export async function doDeleteDraft(deps: MessagesDeps, userId: number, draftId: number): Promise<void> {
  const { user } = await checkDraftsEnabled(deps, userId);
  await transaction(deps.db, async (tx) => {
    const deleted = await tx.db.draft.deleteMany({ where: { id: draftId, user_profile_id: user.id } });
    if (deleted.count === 0) throw new ResourceNotFoundError('Draft does not exist');
    await deps.bus.sendEventOnCommit(tx, user.realm_id, { type: 'drafts', op: 'remove', draft_id: draftId }, [user.id]);
  });
}
