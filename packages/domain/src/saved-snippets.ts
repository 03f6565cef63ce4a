// Saved snippets (Zulip's SavedSnippet): a user's reusable message texts, in their API form.
import type { SavedSnippet, TxClient } from '@teamchat/db';

/** Zulip's SavedSnippet.MAX_TITLE_LENGTH. */
export const MAX_SNIPPET_TITLE_LENGTH = 60;

export function savedSnippetDict(snippet: Pick<SavedSnippet, 'id' | 'title' | 'content' | 'date_created'>) {
  return {
    id: snippet.id,
    title: snippet.title,
    content: snippet.content,
    date_created: Math.floor(snippet.date_created.getTime() / 1000),
  };
}

/** The user's snippets, oldest first (GET /saved_snippets and register's saved_snippets). */
export async function userSavedSnippets(db: Pick<TxClient, 'savedSnippet'>, userId: number) {
  const rows = await db.savedSnippet.findMany({ where: { user_profile_id: userId }, orderBy: { id: 'asc' } });
  return rows.map(savedSnippetDict);
}
