import { LIST_LIMITS, param, required, v, type AuthedContext } from '@teamchat/core';
import { loadActor, userAlertWords } from '@teamchat/domain';
import { doAddAlertWords, doRemoveAlertWords } from '../actions/alert-words';
import type { UsersDeps } from '../deps';

/** Zulip's MAX_ALERT_WORD_LENGTH. */
export const MAX_ALERT_WORD_LENGTH = 100;

/** Words one request names, bounded before any is checked (LIST_LIMITS). */
const maxWords = { maxLength: LIST_LIMITS.alertWordsPerRequest };

/** Zulip's clean_alert_words: surrounding whitespace stripped, empty words dropped. */
const cleanAlertWords = (words: string[]) => words.map((word) => word.trim()).filter((word) => word !== '');

/** GET /users/me/alert_words */
export async function listAlertWords({ deps, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  return { alert_words: await userAlertWords(deps.db, actor.id) };
}

/** POST /users/me/alert_words */
export async function addAlertWords({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { alert_words } = params.parse({
    alert_words: required(param.json(v.list(v.str({ maxLength: MAX_ALERT_WORD_LENGTH }), maxWords))),
  });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  return { alert_words: await doAddAlertWords(deps, actor, cleanAlertWords(alert_words)) };
}

/** DELETE /users/me/alert_words (words are matched ignoring case, as sent). */
export async function removeAlertWords({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { alert_words } = params.parse({ alert_words: required(param.json(v.list(v.str(), maxWords))) });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  return { alert_words: await doRemoveAlertWords(deps, actor, alert_words) };
}
