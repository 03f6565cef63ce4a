// Linkifiers (Zulip's zerver/actions/realm_linkifiers.py): each change re-sends the realm's
// whole ordered list in a realm_linkifiers event.

import { JsonableError } from '@teamchat/core';
import { transaction, type Linkifier, type Tx } from '@teamchat/db';
import type { BaseDeps } from '@teamchat/runtime';
import { checkLinkifier, LinkifierError } from '../lib/linkifiers';
import { activeUserIds } from '../lib/users';
import { lockRealm } from '@teamchat/domain';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

export function linkifierDict(linkifier: Linkifier) {
  return { pattern: linkifier.pattern, url_template: linkifier.url_template, id: linkifier.id };
}

export async function realmLinkifiers(db: Pick<Tx['db'], 'linkifier'>, realmId: number): Promise<Linkifier[]> {
  return db.linkifier.findMany({ where: { realm_id: realmId }, orderBy: [{ order: 'asc' }, { id: 'asc' }] });
}

async function notifyLinkifiers(deps: Deps, tx: Tx, realmId: number): Promise<void> {
  const linkifiers = (await realmLinkifiers(tx.db, realmId)).map(linkifierDict);
  await deps.bus.sendEventOnCommit(
    tx,
    realmId,
    { type: 'realm_linkifiers', realm_linkifiers: linkifiers },
    await activeUserIds(tx.db, realmId),
  );
}

async function checkPatternFree(tx: Tx, realmId: number, pattern: string, exceptId?: number): Promise<void> {
  const clash = await tx.db.linkifier.findFirst({
    where: { realm_id: realmId, pattern, ...(exceptId ? { id: { not: exceptId } } : {}) },
  });
  if (clash) throw new LinkifierError('Realm filter with this Realm and Pattern already exists.', '__all__');
}

export async function doAddLinkifier(
  deps: Deps,
  realmId: number,
  pattern: string,
  urlTemplate: string,
): Promise<number> {
  checkLinkifier(pattern, urlTemplate);
  return transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    await checkPatternFree(tx, realmId, pattern);
    const last = await tx.db.linkifier.aggregate({ where: { realm_id: realmId }, _max: { order: true } });
    const linkifier = await tx.db.linkifier.create({
      data: {
        realm_id: realmId,
        pattern,
        url_template: urlTemplate,
        order: last._max.order === null ? 0 : last._max.order + 1,
      },
    });
    await notifyLinkifiers(deps, tx, realmId);
    return linkifier.id;
  });
}

async function findLinkifier(tx: Tx, realmId: number, id: number): Promise<Linkifier> {
  const linkifier = await tx.db.linkifier.findFirst({ where: { id, realm_id: realmId } });
  if (!linkifier) throw new JsonableError('Linkifier not found.');
  return linkifier;
}

export async function doUpdateLinkifier(
  deps: Deps,
  realmId: number,
  id: number,
  pattern: string,
  urlTemplate: string,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    await findLinkifier(tx, realmId, id);
    checkLinkifier(pattern, urlTemplate);
    await checkPatternFree(tx, realmId, pattern, id);
    await tx.db.linkifier.update({ where: { id }, data: { pattern, url_template: urlTemplate } });
    await notifyLinkifiers(deps, tx, realmId);
  });
}

export async function doRemoveLinkifier(deps: Deps, realmId: number, id: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    await findLinkifier(tx, realmId, id);
    await tx.db.linkifier.delete({ where: { id } });
    await notifyLinkifiers(deps, tx, realmId);
  });
}

/** PATCH /realm/linkifiers: the new processing order, naming every linkifier exactly once. */
export async function doReorderLinkifiers(deps: Deps, realmId: number, orderedIds: number[]): Promise<void> {
  if (new Set(orderedIds).size < orderedIds.length)
    throw new JsonableError('The ordered list must not contain duplicated linkifiers');
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const existing = await realmLinkifiers(tx.db, realmId);
    const sameSet =
      existing.length === orderedIds.length && existing.every((linkifier) => orderedIds.includes(linkifier.id));
    if (!sameSet) throw new JsonableError('The ordered list must enumerate all existing linkifiers exactly once');
    if (orderedIds.length === 0) return;
    for (const [order, id] of orderedIds.entries()) await tx.db.linkifier.update({ where: { id }, data: { order } });
    await notifyLinkifiers(deps, tx, realmId);
  });
}
