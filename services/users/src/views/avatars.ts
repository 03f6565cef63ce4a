// Avatars and the organisation's icon and logos: uploads (POST/DELETE /users/me/avatar,
// /realm/icon, /realm/logo; the image in a multipart body, whatever its field's name) and
// Zulip's /avatar/{user_id or email}[/medium], a redirect to the avatar's current URL.

import { param, RequestParams, required, RESPONDED, type AuthedContext, type ViewResult } from '@teamchat/core';
import { avatarUrl, canAccessUser, loadActor } from '@teamchat/domain';
import { receiveUploadedFiles } from '@teamchat/images';
import { doDeleteAvatar, doSetAvatarFromUpload, MAX_AVATAR_FILE_SIZE_BYTES } from '../actions/avatars';
import {
  doDeleteRealmIcon,
  doDeleteRealmLogo,
  doUploadRealmIcon,
  doUploadRealmLogo,
  MAX_REALM_IMAGE_FILE_SIZE_BYTES,
} from '../actions/realm-images';
import type { UsersDeps } from '../deps';
import { requireAdministrator } from '../lib/access';

/** POST /users/me/avatar */
export async function uploadAvatar({ deps, requester, req, res }: AuthedContext<UsersDeps>) {
  const actor = await loadActor(deps.db, requester.userId);
  const upload = await receiveUploadedFiles(req, res, MAX_AVATAR_FILE_SIZE_BYTES);
  return doSetAvatarFromUpload(deps, actor, upload);
}

/** DELETE /users/me/avatar */
export async function deleteAvatar({ deps, requester }: AuthedContext<UsersDeps>) {
  return doDeleteAvatar(deps, await loadActor(deps.db, requester.userId));
}

/** POST /realm/icon */
export async function uploadRealmIcon({ deps, requester, req, res }: AuthedContext<UsersDeps>) {
  const actor = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor.user);
  const upload = await receiveUploadedFiles(req, res, MAX_REALM_IMAGE_FILE_SIZE_BYTES);
  return doUploadRealmIcon(deps, actor, upload);
}

/** DELETE /realm/icon */
export async function deleteRealmIcon({ deps, requester }: AuthedContext<UsersDeps>) {
  return doDeleteRealmIcon(deps, await loadActor(deps.db, requester.userId));
}

const logoParams = { night: required(param.bool()) };

/** POST /realm/logo (night: which theme's logo) */
export async function uploadRealmLogo({ deps, requester, req, res }: AuthedContext<UsersDeps>) {
  const actor = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor.user);
  const upload = await receiveUploadedFiles(req, res, MAX_REALM_IMAGE_FILE_SIZE_BYTES);
  // The route reads its own body: its fields are known only now.
  const { night } = RequestParams.fromRequest(req).parse(logoParams);
  await doUploadRealmLogo(deps, actor, night, upload);
  return {};
}

/** DELETE /realm/logo */
export async function deleteRealmLogo({ deps, requester, params }: AuthedContext<UsersDeps>) {
  const actor = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor.user);
  const { night } = params.parse(logoParams);
  await doDeleteRealmLogo(deps, actor, night);
  return {};
}

/** Zulip's get_avatar_for_inaccessible_user. */
const INACCESSIBLE_USER_AVATAR_URL = '/static/images/unknown-user-avatar.png';

/**
 * GET /avatar/{user_id or email}[/medium] (Zulip's avatar_by_id and avatar_by_email): a redirect
 * to the user's avatar, the placeholder of a user the requester may not see, and for an email
 * nobody has, the generated avatar of that email. The query string (but a legacy api_key) is
 * passed on.
 */
export async function redirectToAvatar({ deps, requester, req, res }: AuthedContext<UsersDeps>): Promise<ViewResult> {
  const viewer = await loadActor(deps.db, requester.userId);
  const medium = req.path.endsWith('/medium');
  const who = decodeURIComponent(String(req.params.user ?? ''));
  const byId = /^[0-9]+$/.test(who);
  // An id past the id column's range is nobody's.
  const target =
    byId && Number(who) > 2 ** 31 - 1
      ? null
      : await deps.db.userProfile.findFirst({
          where: byId
            ? { id: Number(who), realm_id: viewer.realm.id }
            : { email: { equals: who, mode: 'insensitive' }, realm_id: viewer.realm.id },
        });
  let url: string;
  if (target) {
    url = (await canAccessUser(deps.db, viewer.user, target))
      ? avatarUrl(target, { medium })
      : INACCESSIBLE_USER_AVATAR_URL;
  } else if (byId) {
    url = INACCESSIBLE_USER_AVATAR_URL;
  } else {
    url = avatarUrl(
      {
        avatar_source: 'G',
        avatar_key: null,
        delivery_email: who,
        avatar_version: 1,
        realm_id: viewer.realm.id,
        id: 0,
      },
      { medium },
    );
  }
  const query = new URL(req.originalUrl, 'http://x').searchParams;
  query.delete('api_key');
  const extra = query.toString();
  if (extra) url += `${url.includes('?') ? '&' : '?'}${extra}`;
  res.redirect(302, url);
  return RESPONDED;
}
