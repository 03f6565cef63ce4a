import { InvalidArgumentError, param, required, type AuthedContext } from '@teamchat/core';
import { loadActor } from '@teamchat/domain';
import { doAddPushToken, doRemovePushToken, PushTokenKind } from '../actions/push-tokens';
import type { UsersDeps } from '../deps';
import { requireHuman } from '../lib/access';

async function humanActor(ctx: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(ctx.deps.db, ctx.requester.userId);
  requireHuman(actor);
  return actor;
}

/** POST /users/me/apns_device_token: token and the iOS app's id. */
export async function addApnsToken(ctx: AuthedContext<UsersDeps>) {
  const actor = await humanActor(ctx);
  const { token, appid } = ctx.params.parse({ token: required(param.string()), appid: required(param.string()) });
  if (!/^[.a-zA-Z0-9-]+$/.test(appid)) throw new InvalidArgumentError('Invalid appid');
  await doAddPushToken(ctx.deps, actor, PushTokenKind.APNS, token, appid);
  return {};
}

export async function removeApnsToken(ctx: AuthedContext<UsersDeps>) {
  const actor = await humanActor(ctx);
  const { token } = ctx.params.parse({ token: required(param.string()) });
  await doRemovePushToken(ctx.deps, actor, PushTokenKind.APNS, token);
  return {};
}

/** POST /users/me/android_gcm_reg_id, and the spec's neutral /users/me/mobile_push_reg_id. */
export async function addFcmToken(ctx: AuthedContext<UsersDeps>) {
  const actor = await humanActor(ctx);
  const { token } = ctx.params.parse({ token: required(param.string()) });
  await doAddPushToken(ctx.deps, actor, PushTokenKind.FCM, token, null);
  return {};
}

export async function removeFcmToken(ctx: AuthedContext<UsersDeps>) {
  const actor = await humanActor(ctx);
  const { token } = ctx.params.parse({ token: required(param.string()) });
  await doRemovePushToken(ctx.deps, actor, PushTokenKind.FCM, token);
  return {};
}
