// Data exports of an organisation (Zulip's RealmExport): their statuses, the dicts
// GET /export/realm and the realm_export event carry, and who hears of them. Written by the
// uploads service (requests, deletion) and by the worker's realm-export job (the archive).

import type { Realm, RealmExport, TxClient } from '@teamchat/db';
import { realmUrl } from './realms';
import { Role } from './roles';

export const RealmExportType = { PUBLIC: 1, FULL_WITH_CONSENT: 2 } as const;
export const RealmExportStatus = { REQUESTED: 0, STARTED: 1, SUCCEEDED: 2, FAILED: 3, DELETED: 4 } as const;

/** The organisation's exports under this key prefix of the uploads storage (served at /user_avatars/exports/...). */
export const EXPORTS_KEY_PREFIX = 'user_avatars/exports';

export interface RealmExportDict {
  id: number;
  acting_user_id: number;
  export_time: number;
  deleted_timestamp: number | null;
  failed_timestamp: number | null;
  export_url: string | null;
  pending: boolean;
  export_type: number;
}

const seconds = (date: Date | null) => (date === null ? null : date.getTime() / 1000);

/** One export as Zulip's get_realm_exports_serialized shows it. */
export function realmExportDict(row: RealmExport, realm: Pick<Realm, 'host'>, scheme: string): RealmExportDict {
  const deleted = row.status === RealmExportStatus.DELETED;
  return {
    id: row.id,
    // A deleted acting user leaves null here; Zulip's schema wants an integer.
    acting_user_id: row.acting_user_id ?? 0,
    export_time: row.date_requested.getTime() / 1000,
    deleted_timestamp: seconds(row.date_deleted),
    failed_timestamp: seconds(row.date_failed),
    export_url: row.export_path !== null && !deleted ? `${realmUrl(realm, scheme)}${row.export_path}` : null,
    pending: row.status === RealmExportStatus.REQUESTED || row.status === RealmExportStatus.STARTED,
    export_type: row.type,
  };
}

type ExportReader = Pick<TxClient, 'realmExport' | 'realm' | 'userProfile'>;

/** Every export of the realm, by id. */
export async function realmExportsSerialized(db: ExportReader, realmId: number, scheme: string) {
  const realm = await db.realm.findUniqueOrThrow({ where: { id: realmId }, select: { host: true } });
  const rows = await db.realmExport.findMany({ where: { realm_id: realmId }, orderBy: { id: 'asc' } });
  return rows.map((row) => realmExportDict(row, realm, scheme));
}

/**
 * The realm_export event and its audience, the realm's active human administrators (Zulip's
 * notify_realm_export, sent whenever an export's state changes).
 */
export async function realmExportEvent(db: ExportReader, realmId: number, scheme: string) {
  const admins = await db.userProfile.findMany({
    where: { realm_id: realmId, is_active: true, is_bot: false, role: { lte: Role.ADMINISTRATOR } },
    select: { id: true },
  });
  return {
    event: { type: 'realm_export' as const, exports: await realmExportsSerialized(db, realmId, scheme) },
    userIds: admins.map((admin) => admin.id),
  };
}
