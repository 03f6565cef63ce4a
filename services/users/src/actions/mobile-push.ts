// POST /mobile_push/test_notification (Zulip's send_test_push_notification_api): a test
// notification to one of the user's devices (token) or all of them, through the bouncer, at
// once so that the answer says whether it went. Without a configured bouncer there is nowhere
// to send it and, as in Zulip, the request still succeeds.

import { JsonableError } from '@teamchat/core';
import type { Realm, UserProfile } from '@teamchat/db';
import {
  basePayload,
  BouncerClient,
  BouncerRefusedError,
  BouncerRetryLaterError,
  type PushDevice,
} from '@teamchat/notifications';
import type { UsersDeps } from '../deps';

export async function doSendTestPushNotification(
  deps: UsersDeps,
  user: UserProfile,
  realm: Realm,
  token: string | undefined,
): Promise<void> {
  let devices: PushDevice[];
  if (token !== undefined) {
    const device = await deps.db.pushDeviceToken.findFirst({
      where: { user_profile_id: user.id, token },
      select: { kind: true, token: true },
    });
    if (!device) throw new JsonableError('Device not recognized', { code: 'INVALID_PUSH_DEVICE_TOKEN' });
    devices = [device];
  } else {
    devices = await deps.db.pushDeviceToken.findMany({
      where: { user_profile_id: user.id },
      orderBy: { id: 'asc' },
      select: { kind: true, token: true },
    });
  }
  if (!BouncerClient.configured(deps.notifications)) return;
  const bouncer = new BouncerClient(deps.notifications, 10_000);
  const base = basePayload({ realm, scheme: deps.env.EXTERNAL_SCHEME, user });
  for (const device of devices) {
    try {
      await bouncer.testNotification({ id: user.id, realmId: realm.id }, device, base);
    } catch (error) {
      if (error instanceof BouncerRefusedError && error.code === 'INVALID_REMOTE_PUSH_DEVICE_TOKEN') {
        throw new JsonableError('Device not recognized by the push bouncer', {
          code: 'INVALID_REMOTE_PUSH_DEVICE_TOKEN',
        });
      }
      if (error instanceof BouncerRefusedError) throw new JsonableError(error.message);
      if (error instanceof BouncerRetryLaterError) {
        throw new JsonableError('Network error while connecting to Zulip push notification service.', {
          status: 502,
        });
      }
      throw error;
    }
  }
}
