import { InvalidArgumentError, LIST_LIMITS, param, pathInt, required, v, type AuthedContext } from '@teamchat/core';
import { draftDict } from '@teamchat/domain';
import { checkDraftsEnabled, doCreateDrafts, doDeleteDraft, doEditDraft, type DraftInput } from '../actions/drafts';
import type { MessagesDeps } from '../deps';

const nonBlank = v.refine(v.str({ allowNullBytes: true }), (value, name) => {
  if (value.trim() === '') throw new InvalidArgumentError(`${name} cannot be blank`);
});

/** A draft's content and topic: the action refuses NUL in Zulip's words ("Message must not contain null bytes"). */
const ACTION_REFUSES_NUL = { allowNullBytes: true };

/** A draft object as clients send it: id is set by the server, timestamp optional. */
const draftValidator: v.Validator<DraftInput> = v.object(
  {
    type: v.literal('', 'stream', 'private'),
    to: v.list(v.id(), { maxLength: LIST_LIMITS.directMessageRecipients }),
    topic: v.str({ allowNullBytes: true }),
    content: nonBlank,
  },
  {
    // Zulip takes an int or a float here.
    timestamp: v.timestamp({ fractional: true }),
  },
);

/** GET /drafts */
export async function getDrafts({ deps, requester }: AuthedContext<MessagesDeps>) {
  const { user } = await checkDraftsEnabled(deps, requester.userId);
  const drafts = await deps.db.draft.findMany({
    where: { user_profile_id: user.id },
    orderBy: [{ last_edit_time: 'asc' }, { id: 'asc' }],
  });
  return { count: drafts.length, drafts: drafts.map(draftDict) };
}

/** POST /drafts */
export async function createDrafts({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const { drafts } = params.parse({
    drafts: required(
      param.json(v.list(draftValidator, { maxLength: LIST_LIMITS.draftsPerRequest }), ACTION_REFUSES_NUL),
    ),
  });
  return { ids: await doCreateDrafts(deps, requester.userId, drafts) };
}

/** PATCH /drafts/{draft_id} */
export async function editDraft({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const draftId = pathInt(req, 'draft_id');
  const { draft } = params.parse({ draft: required(param.json(draftValidator, ACTION_REFUSES_NUL)) });
  await doEditDraft(deps, requester.userId, draftId, draft);
  return {};
}

/** DELETE /drafts/{draft_id} */
export async function deleteDraft({ deps, requester, req }: AuthedContext<MessagesDeps>) {
  await doDeleteDraft(deps, requester.userId, pathInt(req, 'draft_id'));
  return {};
}
