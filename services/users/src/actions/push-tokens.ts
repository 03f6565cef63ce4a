// Push registration tokens (Zulip's zerver/lib/push_notifications.py): stored per user, kind
// and token; delivering notifications is a push provider's business, outside this service.

import { JsonableError } from '@teamchat/core';
import type { BaseDeps } from '@teamchat/runtime';

type Deps = Pick<BaseDeps, 'db'>;

export const PushTokenKind = { APNS: 1, FCM: 2 } as const;

const MAX_TOKEN_LENGTH = 4096;

/** Whether Python's lenient base64 decoding (which Zulip applies to APNs tokens) accepts it. */
function decodableAsBase64(token: string): boolean {
  const kept = token.replace(/[^A-Za-z0-9+/=]/g, '');
  return kept.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(kept);
}

/** Zulip's validate_token. */
export function validateToken(token: string, kind: number): void {
  if (token === '' || token.length > MAX_TOKEN_LENGTH) throw new JsonableError('Empty or invalid length token');
  if (kind === PushTokenKind.APNS && !decodableAsBase64(token)) throw new JsonableError('Invalid APNS token');
}

/** Registers a device; registering the same token again only refreshes it. */
export async function doAddPushToken(
  deps: Deps,
  userId: number,
  kind: number,
  token: string,
  iosAppId: string | null,
): Promise<void> {
  validateToken(token, kind);
  await deps.db.pushDeviceToken.upsert({
    where: { user_profile_id_kind_token: { user_profile_id: userId, kind, token } },
    create: { user_profile_id: userId, kind, token, ios_app_id: iosAppId },
    update: { last_updated: new Date(), ...(iosAppId === null ? {} : { ios_app_id: iosAppId }) },
  });
}

export async function doRemovePushToken(deps: Deps, userId: number, kind: number, token: string): Promise<void> {
  validateToken(token, kind);
  const removed = await deps.db.pushDeviceToken.deleteMany({ where: { user_profile_id: userId, kind, token } });
  if (removed.count === 0) throw new JsonableError('Token does not exist');
}
