// Saved snippets (Zulip's do_create/edit/delete_saved_snippet): each change goes to the
// owner's clients as a saved_snippets event (add and update carry the whole snippet).

import type { ZulipEventOf } from '@teamchat/bus';
import { ResourceNotFoundError } from '@teamchat/core';
import { transaction, type Tx, type UserProfile } from '@teamchat/db';
import { savedSnippetDict } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;
type User = Pick<UserProfile, 'id' | 'realm_id'>;

const SNIPPET_NOT_FOUND = 'Saved snippet does not exist.';

async function notify(deps: Deps, tx: Tx, user: User, event: ZulipEventOf<'saved_snippets'>): Promise<void> {
  await deps.bus.sendEventOnCommit(tx, user.realm_id, event, [user.id]);
}

export async function doCreateSavedSnippet(deps: Deps, user: User, title: string, content: string): Promise<number> {
  return transaction(deps.db, async (tx) => {
    const snippet = await tx.db.savedSnippet.create({
      data: { realm_id: user.realm_id, user_profile_id: user.id, title, content },
    });
    await notify(deps, tx, user, { type: 'saved_snippets', op: 'add', saved_snippet: savedSnippetDict(snippet) });
    return snippet.id;
  });
}

export async function doEditSavedSnippet(
  deps: Deps,
  user: User,
  snippetId: number,
  change: { title?: string; content?: string },
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const updated = await tx.db.savedSnippet.updateMany({
      where: { id: snippetId, user_profile_id: user.id },
      data: change,
    });
    if (updated.count === 0) throw new ResourceNotFoundError(SNIPPET_NOT_FOUND);
    const snippet = await tx.db.savedSnippet.findUniqueOrThrow({ where: { id: snippetId } });
    await notify(deps, tx, user, { type: 'saved_snippets', op: 'update', saved_snippet: savedSnippetDict(snippet) });
  });
}

export async function doDeleteSavedSnippet(deps: Deps, user: User, snippetId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const removed = await tx.db.savedSnippet.deleteMany({ where: { id: snippetId, user_profile_id: user.id } });
    if (removed.count === 0) throw new ResourceNotFoundError(SNIPPET_NOT_FOUND);
    await notify(deps, tx, user, { type: 'saved_snippets', op: 'remove', saved_snippet_id: snippetId });
  });
}
