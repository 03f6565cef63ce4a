import { param, pathInt, required, v, type AuthedContext } from '@teamchat/core';
import { loadActor } from '@teamchat/domain';
import {
  doAddLinkifier,
  doRemoveLinkifier,
  doReorderLinkifiers,
  doUpdateLinkifier,
  linkifierDict,
  realmLinkifiers,
} from '../actions/linkifiers';
import type { UsersDeps } from '../deps';
import { requireAdministrator } from '../lib/access';

/** GET /realm/linkifiers */
export async function listLinkifiers({ deps, requester }: AuthedContext<UsersDeps>) {
  return { linkifiers: (await realmLinkifiers(deps.db, requester.realmId)).map(linkifierDict) };
}

/** GET /realm/filters: the legacy form, [pattern, url_template, id] per linkifier. */
export async function listLinkifiersLegacy({ deps, requester }: AuthedContext<UsersDeps>) {
  return { filters: (await realmLinkifiers(deps.db, requester.realmId)).map((l) => [l.pattern, l.url_template, l.id]) };
}

const linkifierParams = {
  pattern: required(param.string()),
  url_template: required(param.string()),
};

/** POST /realm/filters (administrators). */
export async function createLinkifier({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const { pattern, url_template } = params.parse(linkifierParams);
  return { id: await doAddLinkifier(deps, actor.realm_id, pattern, url_template) };
}

/** PATCH /realm/filters/{filter_id} (administrators). */
export async function updateLinkifier({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const id = pathInt(req, 'filter_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const { pattern, url_template } = params.parse(linkifierParams);
  await doUpdateLinkifier(deps, actor.realm_id, id, pattern, url_template);
  return {};
}

/** DELETE /realm/filters/{filter_id} (administrators). */
export async function deleteLinkifier({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const id = pathInt(req, 'filter_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  await doRemoveLinkifier(deps, actor.realm_id, id);
  return {};
}

/** PATCH /realm/linkifiers (administrators). */
export async function reorderLinkifiers({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const { ordered_linkifier_ids } = params.parse({ ordered_linkifier_ids: required(param.json(v.list(v.id()))) });
  await doReorderLinkifiers(deps, actor.realm_id, ordered_linkifier_ids);
  return {};
}
