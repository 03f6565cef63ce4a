import { optional, param, type AuthedContext } from '@teamchat/core';
import { loadActor } from '@teamchat/domain';
import { doSendTestPushNotification } from '../actions/mobile-push';
import type { UsersDeps } from '../deps';

/** POST /mobile_push/test_notification */
export async function sendTestPushNotification(ctx: AuthedContext<UsersDeps>) {
  const { user, realm } = await loadActor(ctx.deps.db, ctx.requester.userId);
  const { token } = ctx.params.parse({ token: optional(param.string()) });
  await doSendTestPushNotification(ctx.deps, user, realm, token);
  return {};
}
