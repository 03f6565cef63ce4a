// The organisation's icon and logos (Zulip's zerver/views/realm_icon.py and realm_logo.py,
// zerver/actions/realm_icon.py and realm_logo.py): administrators upload them, resized as Zulip
// does into the uploads storage at fixed names (the version in their URLs changes with each
// change), or go back to the default; every change is a realm update_dict event to the
// organisation. As in Zulip, going back to the default keeps the files.

import { JsonableError } from '@teamchat/core';
import { transaction, type Realm } from '@teamchat/db';
import {
  lockRealm,
  MAX_ICON_FILE_SIZE_MIB,
  MAX_LOGO_FILE_SIZE_MIB,
  realmIconUrl,
  realmImageKeys,
  realmLogoData,
  type Actor,
} from '@teamchat/domain';
import {
  checkAcceptedImageType,
  imageTypeOfFileName,
  resizeAvatar,
  resizeLogo,
  uploadedFileBytes,
  type UploadedFiles,
} from '@teamchat/images';
import type { UsersDeps } from '../deps';
import { requireAdministrator } from '../lib/access';
import { activeUserIds } from '../lib/users';

type Deps = Pick<UsersDeps, 'db' | 'bus' | 'storage'>;

export const MAX_REALM_IMAGE_FILE_SIZE_BYTES = Math.max(MAX_ICON_FILE_SIZE_MIB, MAX_LOGO_FILE_SIZE_MIB) * 1024 * 1024;

/**
 * The bytes of the request's one image, within `maxMiB`, of an accepted type (Zulip's
 * get_file_info: the part's declared type, else the one its name suggests).
 */
function theImageFile(upload: UploadedFiles, what: 'icon' | 'logo', maxMiB: number): Buffer {
  if (upload.tooMany || upload.files.length !== 1) throw new JsonableError(`You must upload exactly one ${what}.`);
  const [file] = upload.files;
  const data = uploadedFileBytes(file, maxMiB);
  checkAcceptedImageType(file.contentType || imageTypeOfFileName(file.fileName) || 'application/octet-stream');
  return data;
}

/** POST /realm/icon */
export async function doUploadRealmIcon(deps: Deps, { user }: Actor, upload: UploadedFiles) {
  requireAdministrator(user);
  const data = theImageFile(upload, 'icon', MAX_ICON_FILE_SIZE_MIB);
  const resized = await resizeAvatar(data);
  const keys = realmImageKeys(user.realm_id, 'icon');
  await deps.storage.put(keys.original, data, { contentType: 'application/octet-stream' });
  await deps.storage.put(keys.resized, resized, { contentType: 'image/png' });
  const realm = await changeIconSource(deps, user.realm_id, 'U');
  return { icon_url: realmIconUrl(realm) };
}

/** DELETE /realm/icon */
export async function doDeleteRealmIcon(deps: Deps, { user }: Actor) {
  requireAdministrator(user);
  const realm = await changeIconSource(deps, user.realm_id, 'G');
  return { icon_url: realmIconUrl(realm) };
}

/** POST /realm/logo */
export async function doUploadRealmLogo(deps: Deps, { user }: Actor, night: boolean, upload: UploadedFiles) {
  const data = theImageFile(upload, 'logo', MAX_LOGO_FILE_SIZE_MIB);
  const resized = await resizeLogo(data);
  const keys = realmImageKeys(user.realm_id, night ? 'night_logo' : 'logo');
  await deps.storage.put(keys.original, data, { contentType: 'application/octet-stream' });
  await deps.storage.put(keys.resized, resized, { contentType: 'image/png' });
  await changeLogoSource(deps, user.realm_id, night, 'U');
}

/** DELETE /realm/logo */
export async function doDeleteRealmLogo(deps: Deps, { user }: Actor, night: boolean) {
  requireAdministrator(user);
  await changeLogoSource(deps, user.realm_id, night, 'D');
}

/** Zulip's do_change_icon_source. */
async function changeIconSource(deps: Deps, realmId: number, iconSource: 'U' | 'G'): Promise<Realm> {
  return transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const realm = await tx.db.realm.update({
      where: { id: realmId },
      data: { icon_source: iconSource, icon_version: { increment: 1 } },
    });
    await deps.bus.sendEventOnCommit(
      tx,
      realmId,
      {
        type: 'realm',
        op: 'update_dict',
        property: 'icon',
        data: { icon_source: realm.icon_source, icon_url: realmIconUrl(realm) },
      },
      await activeUserIds(tx.db, realmId),
    );
    return realm;
  });
}

/** Zulip's do_change_logo_source. */
async function changeLogoSource(deps: Deps, realmId: number, night: boolean, logoSource: 'U' | 'D'): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const realm = await tx.db.realm.update({
      where: { id: realmId },
      data: night
        ? { night_logo_source: logoSource, night_logo_version: { increment: 1 } }
        : { logo_source: logoSource, logo_version: { increment: 1 } },
    });
    const data = realmLogoData(realm, night);
    await deps.bus.sendEventOnCommit(
      tx,
      realmId,
      data.night_logo_url !== undefined
        ? { type: 'realm', op: 'update_dict', property: 'night_logo', data }
        : { type: 'realm', op: 'update_dict', property: 'logo', data },
      await activeUserIds(tx.db, realmId),
    );
  });
}
