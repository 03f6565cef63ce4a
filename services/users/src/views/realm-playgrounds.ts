import { JsonableError, param, pathInt, required, type AuthedContext } from '@teamchat/core';
import { loadActor } from '@teamchat/domain';
import { doAddRealmPlayground, doRemoveRealmPlayground } from '../actions/realm-playgrounds';
import type { UsersDeps } from '../deps';
import { requireAdministrator } from '../lib/access';

/** Zulip's RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH. */
const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;
/**
 * Zulip's pattern for a playground's language, `^[ a-zA-Z0-9_+-./#]*$`: upper case allowed (it
 * names Pygments lexers, "Python"), and its `+-.` is a range, so `,` too. Spaces pass: the
 * value is stripped after it.
 */
const PYGMENTS_LANGUAGE_CHARACTERS = /^[ a-zA-Z0-9_+,\-./#]*$/;

/** POST /realm/playgrounds (administrators). */
export async function addRealmPlayground({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { name, url_template, pygments_language } = params.parse({
    name: required(param.string()),
    url_template: required(param.string()),
    pygments_language: required(param.string({ maxLength: MAX_PYGMENTS_LANGUAGE_LENGTH })),
  });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  if (!PYGMENTS_LANGUAGE_CHARACTERS.test(pygments_language))
    throw new JsonableError('Invalid characters in pygments language');
  const id = await doAddRealmPlayground(deps, actor.realm_id, {
    name: name.trim(),
    pygmentsLanguage: pygments_language.trim(),
    urlTemplate: url_template.trim(),
  });
  return { id };
}

/** DELETE /realm/playgrounds/{playground_id} (administrators). */
export async function removeRealmPlayground({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const playgroundId = pathInt(req, 'playground_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  await doRemoveRealmPlayground(deps, actor.realm_id, playgroundId);
  return {};
}
