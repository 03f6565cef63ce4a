import { JsonableError, optional, param, pathInt, required, type AuthedContext } from '@teamchat/core';
import { loadActor, MAX_SNIPPET_TITLE_LENGTH, SERVER_LIMITS, userSavedSnippets } from '@teamchat/domain';
import { doCreateSavedSnippet, doDeleteSavedSnippet, doEditSavedSnippet } from '../actions/saved-snippets';
import type { UsersDeps } from '../deps';

// Both are stripped; empty ones are refused in Zulip 10's words.
const titleType = param.string({ strip: true, maxLength: MAX_SNIPPET_TITLE_LENGTH });
const contentType = param.string({ strip: true, maxLength: SERVER_LIMITS.max_message_length });

function checkNotEmpty(title: string | undefined, content: string | undefined): void {
  if (title === '') throw new JsonableError('Title cannot be empty.');
  if (content === '') throw new JsonableError('Content cannot be empty.');
}

/** GET /saved_snippets */
export async function getSavedSnippets({ deps, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  return { saved_snippets: await userSavedSnippets(deps.db, actor.id) };
}

/** POST /saved_snippets */
export async function createSavedSnippet({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { title, content } = params.parse({ title: required(titleType), content: required(contentType) });
  checkNotEmpty(title, content);
  const { user: actor } = await loadActor(deps.db, requester.userId);
  return { saved_snippet_id: await doCreateSavedSnippet(deps, actor, title, content) };
}

/** PATCH /saved_snippets/{saved_snippet_id}: nothing to change answers success without an event. */
export async function editSavedSnippet({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const snippetId = pathInt(req, 'saved_snippet_id');
  const { title, content } = params.parse({ title: optional(titleType), content: optional(contentType) });
  checkNotEmpty(title, content);
  const { user: actor } = await loadActor(deps.db, requester.userId);
  if (title === undefined && content === undefined) return {};
  await doEditSavedSnippet(deps, actor, snippetId, { title, content });
  return {};
}

/** DELETE /saved_snippets/{saved_snippet_id} */
export async function deleteSavedSnippet({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const snippetId = pathInt(req, 'saved_snippet_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  await doDeleteSavedSnippet(deps, actor, snippetId);
  return {};
}
