// POST/GET /export/realm, DELETE /export/realm/{export_id}, GET /export/realm/consents: the
// organisation's administrators only (Zulip's @require_realm_admin).

import { JsonableError, optional, param, pathInt, v, type AuthedContext } from '@teamchat/core';
import { isAdministrator, loadActor, RealmExportType, realmExportsSerialized } from '@teamchat/domain';
import { doDeleteRealmExport, doRequestRealmExport, realmExportConsents } from '../actions/realm-exports';
import type { UploadsDeps } from '../deps';

async function loadAdministrator(ctx: AuthedContext<UploadsDeps>) {
  const actor = await loadActor(ctx.deps.db, ctx.requester.userId);
  if (!isAdministrator(actor.user.role)) throw new JsonableError('Must be an organization administrator');
  return actor;
}

/** POST /export/realm */
export async function requestRealmExport(ctx: AuthedContext<UploadsDeps>) {
  const { export_type } = ctx.params.parse({
    export_type: optional(
      param.json(v.literal(RealmExportType.PUBLIC, RealmExportType.FULL_WITH_CONSENT)),
      RealmExportType.PUBLIC as number,
    ),
  });
  const actor = await loadAdministrator(ctx);
  return { id: await doRequestRealmExport(ctx.deps, actor, export_type) };
}

/** GET /export/realm */
export async function listRealmExports(ctx: AuthedContext<UploadsDeps>) {
  const actor = await loadAdministrator(ctx);
  return { exports: await realmExportsSerialized(ctx.deps.db, actor.realm.id, ctx.deps.env.EXTERNAL_SCHEME) };
}

/** DELETE /export/realm/{export_id} */
export async function deleteRealmExport(ctx: AuthedContext<UploadsDeps>) {
  const exportId = pathInt(ctx.req, 'export_id');
  const actor = await loadAdministrator(ctx);
  await doDeleteRealmExport(ctx.deps, actor, exportId);
  return {};
}

/** GET /export/realm/consents */
export async function getRealmExportConsents(ctx: AuthedContext<UploadsDeps>) {
  const actor = await loadAdministrator(ctx);
  return { export_consents: await realmExportConsents(ctx.deps, actor.realm.id) };
}
