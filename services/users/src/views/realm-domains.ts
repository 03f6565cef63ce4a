import { JsonableError, param, required, type AuthedContext } from '@teamchat/core';
import { loadActor, realmDomains } from '@teamchat/domain';
import { doAddRealmDomain, doChangeRealmDomain, doRemoveRealmDomain } from '../actions/realm-domains';
import type { UsersDeps } from '../deps';
import { requireOwner } from '../lib/access';

/** The {domain} path segment, as sent (Zulip looks it up unchanged). */
function pathDomain(ctx: AuthedContext<UsersDeps>): string {
  const domain = String(ctx.req.params.domain);
  // PostgreSQL text cannot hold NUL: no such domain, rather than a failed query.
  if (domain.includes('\u0000')) throw new JsonableError(`No entry found for domain ${domain}.`);
  return domain;
}

/** GET /realm/domains (anyone in the organisation). */
export async function listRealmDomains({ deps, requester }: AuthedContext<UsersDeps>) {
  const { user } = await loadActor(deps.db, requester.userId);
  return { domains: await realmDomains(deps.db, user.realm_id) };
}

/** POST /realm/domains (owners). */
export async function createRealmDomain({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireOwner(actor);
  const input = params.parse({ domain: required(param.string()), allow_subdomains: required(param.bool()) });
  const domain = input.domain.trim().toLowerCase();
  const id = await doAddRealmDomain(deps, actor.realm_id, domain, input.allow_subdomains);
  return { new_domain: [id, domain] };
}

/** PATCH /realm/domains/{domain} (owners). */
export async function updateRealmDomain(ctx: AuthedContext<UsersDeps>) {
  const { deps, params, requester } = ctx;
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireOwner(actor);
  const { allow_subdomains } = params.parse({ allow_subdomains: required(param.bool()) });
  await doChangeRealmDomain(deps, actor.realm_id, pathDomain(ctx), allow_subdomains);
  return {};
}

/** DELETE /realm/domains/{domain} (owners). */
export async function deleteRealmDomain(ctx: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(ctx.deps.db, ctx.requester.userId);
  requireOwner(actor);
  await doRemoveRealmDomain(ctx.deps, actor.realm_id, pathDomain(ctx));
  return {};
}
