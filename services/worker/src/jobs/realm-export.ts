// realm-export: an organisation's data export (Zulip's deferred_work realm_export), for
// POST /export/realm of the uploads service. Every table the organisation owns is written as
// gzipped JSON lines (docs/export-format.md) from one REPEATABLE READ snapshot, streamed into
// the uploads storage under user_avatars/exports/{realm_id}/{random}/, and the realm_export row
// records its path, size and sha256; the realm's administrators get a realm_export event when
// the export starts, succeeds or fails.
//
// Public exports (type 1) hold public channels' messages only and no private per-user data;
// full exports (type 2) add what the users who consented (allow_private_data_export) can see
// and own. Secrets never leave: API keys, password hashes, push tokens, invitation keys.
//
// A job finding its export already started (a worker died during it, or BullMQ retried it)
// marks it failed rather than starting over, as Zulip does.

import crypto from 'node:crypto';
import type { Job } from 'bullmq';
import { JOB_QUEUES, type JobData } from '@teamchat/bus';
import { transaction, type TxClient } from '@teamchat/db';
import { EXPORTS_KEY_PREFIX, RealmExportStatus, realmExportEvent } from '@teamchat/domain';
import { exportRealm, ExportType, type ProgressSnapshot } from '@teamchat/realm-transfer';
import type { BaseDeps } from '@teamchat/runtime';
import { createStorage, loadStorageConfig } from '@teamchat/storage';
import type { JobProcessor } from './processor';

type RealmExportJobData = JobData['realm-export'];

/**
 * The job's progress (BullMQ's, which the worker's metrics time per batch) and, cheaply, in the
 * export row's stats until the final counts replace them.
 */
async function reportProgress(
  job: Job<RealmExportJobData>,
  deps: BaseDeps,
  exportId: number,
  snapshot: ProgressSnapshot,
): Promise<void> {
  const progress = {
    table: snapshot.table ?? null,
    rows: snapshot.rows,
    total_rows: snapshot.totalRows ?? null,
    rows_per_second: snapshot.rowsPerSecond,
  };
  await job.updateProgress(progress).catch(() => undefined);
  await deps.db.realmExport.update({ where: { id: exportId }, data: { stats: { progress } } }).catch(() => undefined);
}

/** Changes the export row and tells the administrators, in one transaction. */
async function notify(deps: BaseDeps, realmId: number, change: (db: TxClient) => Promise<unknown>): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await change(tx.db);
    const { event, userIds } = await realmExportEvent(tx.db, realmId, deps.env.EXTERNAL_SCHEME);
    await deps.bus.sendEventOnCommit(tx, realmId, event, userIds);
  });
}

async function processRealmExport(job: Job<RealmExportJobData>, deps: BaseDeps): Promise<{ status: string }> {
  const { realmId, exportId } = job.data;
  const row = await deps.db.realmExport.findUnique({ where: { id: exportId } });
  if (!row || row.realm_id !== realmId) return { status: 'missing' };
  if (row.status === RealmExportStatus.STARTED) {
    deps.logger.error({ export_id: exportId }, 'marking a data export failed: it was started before (worker died?)');
    await notify(deps, realmId, (db) =>
      db.realmExport.update({
        where: { id: exportId },
        data: { status: RealmExportStatus.FAILED, date_failed: new Date() },
      }),
    );
    return { status: 'failed' };
  }
  if (row.status !== RealmExportStatus.REQUESTED) return { status: 'skipped' };
  await notify(deps, realmId, (db) =>
    db.realmExport.update({
      where: { id: exportId },
      data: { status: RealmExportStatus.STARTED, date_started: new Date() },
    }),
  );

  const storage = createStorage(loadStorageConfig(process.env));
  const random = crypto.randomBytes(18).toString('base64url');
  const key = `${EXPORTS_KEY_PREFIX}/${realmId}/${random}/teamchat-export-${crypto.randomBytes(4).toString('hex')}.jsonl.gz`;
  const started = Date.now();
  // Progress reports run one after the other, and all before the final row is written.
  let reported: Promise<void> = Promise.resolve();
  try {
    const type = row.type === ExportType.FULL_WITH_CONSENT ? ExportType.FULL_WITH_CONSENT : ExportType.PUBLIC;
    // The table list, the rows each type holds and the streaming are @teamchat/realm-transfer's,
    // shared with `manage export-realm` and the import.
    const result = await exportRealm({
      db: deps.db,
      realmId,
      type,
      header: { export_id: exportId },
      write: async (body) => {
        await storage.put(key, body, { contentType: 'application/gzip' });
      },
      progressIntervalMs: 5000,
      onProgress: (snapshot) => {
        reported = reported.then(() => reportProgress(job, deps, exportId, snapshot));
      },
    });
    await reported;
    await notify(deps, realmId, (db) =>
      db.realmExport.update({
        where: { id: exportId },
        data: {
          status: RealmExportStatus.SUCCEEDED,
          date_succeeded: new Date(),
          export_path: `/${key}`,
          sha256sum_hex: result.sha256,
          tarball_size_bytes: BigInt(result.bytes),
          stats: result.stats,
        },
      }),
    );
    deps.logger.info({ realm_id: realmId, export_id: exportId, ms: Date.now() - started }, 'data export completed');
    return { status: 'succeeded' };
  } catch (error) {
    await reported;
    deps.logger.error({ err: error, realm_id: realmId, export_id: exportId }, 'data export failed');
    await storage.delete([key]).catch(() => undefined);
    await notify(deps, realmId, (db) =>
      db.realmExport.update({
        where: { id: exportId },
        data: { status: RealmExportStatus.FAILED, date_failed: new Date() },
      }),
    );
    return { status: 'failed' };
  } finally {
    await storage.close();
  }
}

export const realmExportProcessor: JobProcessor<typeof JOB_QUEUES.realmExport> = {
  queue: JOB_QUEUES.realmExport,
  concurrency: 1,
  process: processRealmExport,
};
