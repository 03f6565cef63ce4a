// Navigation views (Zulip's zerver/actions/navigation_views.py): a user's settings for
// built-in views and their own saved views, each announced to that user's clients.

import { JsonableError, ResourceNotFoundError } from '@teamchat/core';
import { transaction, type NavigationView, type Tx } from '@teamchat/db';
import type { BaseDeps } from '@teamchat/runtime';
import { lockUser } from '../lib/locks';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

/** Views the web app has built in: they take no custom name. */
export const BUILT_IN_VIEW_FRAGMENTS = [
  'inbox',
  'recent',
  'feed',
  'drafts',
  'narrow/has/reaction/sender/me',
  'narrow/is/mentioned',
  'narrow/is/starred',
];

export function navigationViewDict(view: NavigationView) {
  return { fragment: view.fragment, is_pinned: view.is_pinned, name: view.name };
}

async function findView(tx: Tx, userId: number, fragment: string): Promise<NavigationView> {
  const view = await tx.db.navigationView.findUnique({
    where: { user_profile_id_fragment: { user_profile_id: userId, fragment } },
  });
  if (!view) throw new ResourceNotFoundError('Navigation view does not exist.');
  return view;
}

async function checkNameFree(tx: Tx, userId: number, name: string): Promise<void> {
  if (await tx.db.navigationView.findFirst({ where: { user_profile_id: userId, name }, select: { id: true } })) {
    throw new JsonableError('Navigation view already exists.');
  }
}

export async function doAddNavigationView(
  deps: Deps,
  user: { id: number; realm_id: number },
  fragment: string,
  isPinned: boolean,
  name: string | null,
): Promise<void> {
  if (BUILT_IN_VIEW_FRAGMENTS.includes(fragment)) {
    if (name !== null) throw new JsonableError('Built-in views cannot have a custom name.');
  } else if (!name) {
    throw new JsonableError('Custom views must have a valid name.');
  }
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, user.id);
    if (
      await tx.db.navigationView.findUnique({
        where: { user_profile_id_fragment: { user_profile_id: user.id, fragment } },
      })
    ) {
      throw new JsonableError('Navigation view already exists.');
    }
    if (name !== null) await checkNameFree(tx, user.id, name);
    const view = await tx.db.navigationView.create({
      data: { user_profile_id: user.id, fragment, is_pinned: isPinned, name },
    });
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      { type: 'navigation_view', op: 'add', navigation_view: navigationViewDict(view) },
      [user.id],
    );
  });
}

export async function doUpdateNavigationView(
  deps: Deps,
  user: { id: number; realm_id: number },
  fragment: string,
  change: { isPinned?: boolean; name?: string },
): Promise<void> {
  if (BUILT_IN_VIEW_FRAGMENTS.includes(fragment) && change.name !== undefined)
    throw new JsonableError('Built-in views cannot have a custom name.');
  await transaction(deps.db, async (tx) => {
    await lockUser(tx.db, user.id);
    if (change.name !== undefined) await checkNameFree(tx, user.id, change.name);
    const view = await findView(tx, user.id, fragment);
    const data: { name?: string; is_pinned?: boolean } = {};
    if (change.name !== undefined) data.name = change.name;
    if (change.isPinned !== undefined) data.is_pinned = change.isPinned;
    await tx.db.navigationView.update({ where: { id: view.id }, data });
    await deps.bus.sendEventOnCommit(tx, user.realm_id, { type: 'navigation_view', op: 'update', fragment, data }, [
      user.id,
    ]);
  });
}

export async function doRemoveNavigationView(
  deps: Deps,
  user: { id: number; realm_id: number },
  fragment: string,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const view = await findView(tx, user.id, fragment);
    await tx.db.navigationView.delete({ where: { id: view.id } });
    await deps.bus.sendEventOnCommit(tx, user.realm_id, { type: 'navigation_view', op: 'remove', fragment }, [user.id]);
  });
}
