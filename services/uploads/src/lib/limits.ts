// The two limits on uploads: the server's largest file, and the realm's upload quota.

import { JsonableError } from '@teamchat/core';
import type { TxClient } from '@teamchat/db';
import { uploadSpaceUsed } from '@teamchat/domain';

export function fileTooLargeMessage(maxBytes: number): string {
  return `File is larger than this server's configured maximum upload size (${maxBytes / (1024 * 1024)} MiB).`;
}

export class FileTooLargeError extends JsonableError {
  constructor(maxBytes: number) {
    super(fileTooLargeMessage(maxBytes));
  }
}

export const UPLOAD_QUOTA_MESSAGE = "Upload would exceed your organization's upload quota.";

export class RealmUploadQuotaError extends JsonableError {
  constructor() {
    super(UPLOAD_QUOTA_MESSAGE, { code: 'REALM_UPLOAD_QUOTA' });
  }
}

/** Advisory-lock namespace serialising quota checks of one realm (the second key is the realm id). */
const QUOTA_LOCK_NAMESPACE = 0x7570_6c64; // "upld"

/**
 * Throws RealmUploadQuotaError if `size` more bytes would take the realm over its quota
 * (Zulip's check_upload_within_quota). Inside a transaction it also locks the realm's quota
 * until commit, so two uploads cannot both pass on the same remaining space.
 */
export async function checkUploadWithinQuota(
  db: Pick<TxClient, '$queryRaw' | 'realm'>,
  realmId: number,
  size: number,
  options: { lock?: boolean } = {},
): Promise<void> {
  const realm = await db.realm.findUnique({ where: { id: realmId }, select: { upload_quota_bytes: true } });
  if (realm?.upload_quota_bytes === null || realm?.upload_quota_bytes === undefined) return;
  if (options.lock)
    await db.$queryRaw`SELECT pg_advisory_xact_lock(${QUOTA_LOCK_NAMESPACE}::int, ${realmId}::int)::text`;
  const used = await uploadSpaceUsed(db, realmId);
  if (used + size > Number(realm.upload_quota_bytes)) throw new RealmUploadQuotaError();
}
