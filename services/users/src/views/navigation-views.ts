import { optional, param, required, v, type AuthedContext } from '@teamchat/core';
import {
  doAddNavigationView,
  doRemoveNavigationView,
  doUpdateNavigationView,
  navigationViewDict,
} from '../actions/navigation-views';
import type { UsersDeps } from '../deps';

/** The fragment in the path: it may span several segments ("narrow/is/starred") or be %2F-encoded. */
function pathFragment(ctx: AuthedContext<UsersDeps>): string {
  const raw = ctx.req.params.fragment as unknown;
  const joined = Array.isArray(raw) ? raw.join('/') : String(raw ?? '');
  return v.str({ strip: true, nonEmpty: true })(joined, 'fragment');
}

/** GET /navigation_views */
export async function getNavigationViews({ deps, requester }: AuthedContext<UsersDeps>) {
  const views = await deps.db.navigationView.findMany({
    where: { user_profile_id: requester.userId },
    orderBy: { id: 'asc' },
  });
  return { navigation_views: views.map(navigationViewDict) };
}

/** POST /navigation_views */
export async function addNavigationView({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { fragment, is_pinned, name } = params.parse({
    fragment: required(param.string({ strip: true, nonEmpty: true })),
    is_pinned: required(param.bool()),
    name: optional(param.string({ strip: true, nonEmpty: true })),
  });
  await doAddNavigationView(
    deps,
    { id: requester.userId, realm_id: requester.realmId },
    fragment,
    is_pinned,
    name ?? null,
  );
  return {};
}

/** PATCH /navigation_views/{fragment} */
export async function updateNavigationView(ctx: AuthedContext<UsersDeps>) {
  const fragment = pathFragment(ctx);
  const { is_pinned, name } = ctx.params.parse({
    is_pinned: optional(param.bool()),
    name: optional(param.string({ strip: true, nonEmpty: true })),
  });
  await doUpdateNavigationView(ctx.deps, { id: ctx.requester.userId, realm_id: ctx.requester.realmId }, fragment, {
    isPinned: is_pinned,
    name,
  });
  return {};
}

/** DELETE /navigation_views/{fragment} */
export async function removeNavigationView(ctx: AuthedContext<UsersDeps>) {
  const fragment = pathFragment(ctx);
  await doRemoveNavigationView(ctx.deps, { id: ctx.requester.userId, realm_id: ctx.requester.realmId }, fragment);
  return {};
}
