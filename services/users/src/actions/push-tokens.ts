// Push registration tokens (Zulip's zerver/lib/push_notifications.py): stored per user, kind
// and token, and registered with the push notification bouncer by the worker's push-device job
// (packages/notifications), which the notifications go through.

import { JsonableError } from '@teamchat/core';
import type { BaseDeps } from '@teamchat/runtime';

type Deps = Pick<BaseDeps, 'db' | 'jobs'>;

/** The bouncer learns of the token from the worker (retried while it is unreachable). */
async function enqueueBouncerUpdate(
  deps: Deps,
  user: { id: number; realm_id: number },
  op: 'register' | 'unregister',
  kind: number,
  token: string,
  iosAppId: string | null,
): Promise<void> {
  await deps.jobs
    .queue('push-device')
    .add(
      'push-device',
      { realmId: user.realm_id, userId: user.id, op, kind, token, iosAppId },
      { attempts: 10, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: true, removeOnFail: 1000 },
    );
}

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
  user: { id: number; realm_id: number },
  kind: number,
  token: string,
  iosAppId: string | null,
): Promise<void> {
  const userId = user.id;
  validateToken(token, kind);
  await deps.db.pushDeviceToken.upsert({
    where: { user_profile_id_kind_token: { user_profile_id: userId, kind, token } },
    create: { user_profile_id: userId, kind, token, ios_app_id: iosAppId },
    update: { last_updated: new Date(), ...(iosAppId === null ? {} : { ios_app_id: iosAppId }) },
  });
  await enqueueBouncerUpdate(deps, user, 'register', kind, token, iosAppId);
}

export async function doRemovePushToken(
  deps: Deps,
  user: { id: number; realm_id: number },
  kind: number,
  token: string,
): Promise<void> {
  validateToken(token, kind);
  const removed = await deps.db.pushDeviceToken.deleteMany({ where: { user_profile_id: user.id, kind, token } });
  if (removed.count === 0) throw new JsonableError('Token does not exist');
  await enqueueBouncerUpdate(deps, user, 'unregister', kind, token, null);
}
