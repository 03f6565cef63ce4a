// Data exports (Zulip's zerver/views/realm_export.py and do_delete_realm_export): requesting one
// (the worker's realm-export job writes the archive into this service's storage), listing them,
// deleting one's archive, and the users' consents. The realm_export event goes to the
// administrators whenever an export's state changes.

import { JsonableError } from '@teamchat/core';
import { transaction, type Tx } from '@teamchat/db';
import { lockRealm, RealmExportStatus, realmExportEvent, uploadSpaceUsed, type Actor } from '@teamchat/domain';
import type { UploadsDeps } from '../deps';

type Deps = Pick<UploadsDeps, 'db' | 'bus' | 'storage' | 'jobs' | 'env' | 'config' | 'logger'>;

/** Zulip's limits: 5 exports a week, and no automatic export of a big organisation. */
export const EXPORT_LIMIT = 5;
export const MAX_MESSAGE_HISTORY = 250_000;
export const MAX_UPLOAD_QUOTA_BYTES = 20 * 1024 ** 3;

async function notifyRealmExport(deps: Deps, tx: Tx, realmId: number): Promise<void> {
  const { event, userIds } = await realmExportEvent(tx.db, realmId, deps.env.EXTERNAL_SCHEME);
  await deps.bus.sendEventOnCommit(tx, realmId, event, userIds);
}

/** POST /export/realm (Zulip's export_realm): records the request, then queues the job. */
export async function doRequestRealmExport(deps: Deps, { user: actor }: Actor, exportType: number): Promise<number> {
  const row = await transaction(deps.db, async (tx) => {
    // One request at a time per organisation, so the weekly count holds.
    await lockRealm(tx.db, actor.realm_id);
    const weekAgo = new Date(Date.now() - 7 * 24 * 3600 * 1000);
    const recent = await tx.db.realmExport.count({
      where: { realm_id: actor.realm_id, date_requested: { gte: weekAgo } },
    });
    if (recent >= EXPORT_LIMIT) throw new JsonableError('Exceeded rate limit.');
    const messages = await tx.db.message.count({ where: { realm_id: actor.realm_id } });
    if (messages > MAX_MESSAGE_HISTORY || (await uploadSpaceUsed(tx.db, actor.realm_id)) > MAX_UPLOAD_QUOTA_BYTES) {
      throw new JsonableError(`Please request a manual export from ${deps.config.env.SERVER_ADMINISTRATOR_EMAIL}.`);
    }
    const created = await tx.db.realmExport.create({
      data: {
        realm_id: actor.realm_id,
        acting_user_id: actor.id,
        type: exportType,
        status: RealmExportStatus.REQUESTED,
      },
    });
    // Pending, for the administrators' lists.
    await notifyRealmExport(deps, tx, actor.realm_id);
    return created;
  });
  try {
    await deps.jobs
      .queue('realm-export')
      .add('realm-export', { realmId: row.realm_id, exportId: row.id }, { jobId: `realm-export-${row.id}` });
  } catch (error) {
    // Never queued: the export would stay pending for ever.
    await transaction(deps.db, async (tx) => {
      await tx.db.realmExport.update({
        where: { id: row.id },
        data: { status: RealmExportStatus.FAILED, date_failed: new Date() },
      });
      await notifyRealmExport(deps, tx, row.realm_id);
    });
    throw error;
  }
  return row.id;
}

/** DELETE /export/realm/{export_id} (Zulip's delete_realm_export + do_delete_realm_export). */
export async function doDeleteRealmExport(deps: Deps, { user: actor }: Actor, exportId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const [locked] = await tx.db.$queryRaw<
      { id: number }[]
    >`SELECT id FROM realm_export WHERE id = ${exportId} AND realm_id = ${actor.realm_id} FOR UPDATE`;
    const row = locked ? await tx.db.realmExport.findUnique({ where: { id: locked.id } }) : null;
    if (!row) throw new JsonableError('Invalid data export ID');
    if (row.status === RealmExportStatus.DELETED) throw new JsonableError('Export already deleted');
    if (row.status === RealmExportStatus.FAILED) throw new JsonableError('Export failed, nothing to delete');
    if (row.status === RealmExportStatus.REQUESTED || row.status === RealmExportStatus.STARTED)
      throw new JsonableError('Export still in progress');
    await tx.db.realmExport.update({
      where: { id: row.id },
      data: { status: RealmExportStatus.DELETED, date_deleted: new Date() },
    });
    await notifyRealmExport(deps, tx, actor.realm_id);
    // Last, so a storage failure leaves the row as it was.
    if (row.export_path) await deps.storage.delete([row.export_path.replace(/^\//, '')]);
  });
}

/** GET /export/realm/consents: each active human user and whether they let administrators export their private data. */
export async function realmExportConsents(deps: Pick<Deps, 'db'>, realmId: number) {
  const users = await deps.db.userProfile.findMany({
    where: { realm_id: realmId, is_active: true, is_bot: false },
    select: { id: true, settings: true },
    orderBy: { id: 'asc' },
  });
  return users.map((user) => ({
    user_id: user.id,
    consented: (user.settings as Record<string, unknown> | null)?.allow_private_data_export === true,
  }));
}
