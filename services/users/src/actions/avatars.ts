// A user's own avatar (Zulip's set_avatar_backend, delete_avatar_backend, upload_avatar_image and
// do_change_avatar_fields): the upload is decoded and resized first (packages/images), its files
// written to the uploads storage under a new random name, then the row changes and the
// realm_user (and, for a bot, realm_bot) events go out after the commit. The files the row no
// longer names are deleted once it is committed.

import crypto from 'node:crypto';
import { JsonableError } from '@teamchat/core';
import { transaction, type UserProfile } from '@teamchat/db';
import {
  avatarUrl,
  isAdministrator,
  MAX_AVATAR_FILE_SIZE_MIB,
  realmSettings,
  uploadedAvatarKeys,
  userIdsWhoCanAccessUser,
  type Actor,
} from '@teamchat/domain';
import {
  checkAcceptedImageType,
  imageTypeOfFileName,
  MEDIUM_AVATAR_SIZE,
  resizeAvatar,
  uploadedFileBytes,
  type UploadedFiles,
  type UploadedImageFile,
} from '@teamchat/images';
import type { UsersDeps } from '../deps';
import { botOwnerUserIds } from '../lib/bots';
import { lockUser } from '../lib/locks';

type Deps = Pick<UsersDeps, 'db' | 'bus' | 'storage' | 'logger'>;

export const MAX_AVATAR_FILE_SIZE_BYTES = MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024;

/** Zulip's avatar_changes_disabled, which administrators are exempt from. */
function checkAvatarChangesAllowed({ user, realm }: Actor): void {
  if (realmSettings(realm).realm_avatar_changes_disabled === true && !isAdministrator(user.role))
    throw new JsonableError('Avatar changes are disabled in this organization.');
}

/** POST /users/me/avatar: the one file of the request becomes the user's avatar. */
export async function doSetAvatarFromUpload(deps: Deps, actor: Actor, upload: UploadedFiles) {
  if (upload.tooMany || upload.files.length !== 1) throw new JsonableError('You must upload exactly one avatar.');
  checkAvatarChangesAllowed(actor);
  const user = await setUploadedAvatar(deps, actor.user, upload.files[0]);
  return { avatar_url: avatarUrl(user) };
}

/**
 * Makes `file` the avatar of `target` (a user's own, or a bot's: Zulip's upload_avatar_image then
 * do_change_avatar_fields): within the size limit, of an image type by its name, resized; the
 * files are written first, then the row names them, and the replaced avatar's files go.
 */
export async function setUploadedAvatar(
  deps: Deps,
  target: Pick<UserProfile, 'id' | 'realm_id'>,
  file: UploadedImageFile,
): Promise<UserProfile> {
  const data = uploadedFileBytes(file, MAX_AVATAR_FILE_SIZE_MIB);
  // Zulip judges an avatar's type by its file name (upload_avatar_image's guess_type).
  checkAcceptedImageType(imageTypeOfFileName(file.fileName));
  const [small, medium] = await Promise.all([resizeAvatar(data), resizeAvatar(data, MEDIUM_AVATAR_SIZE)]);

  const avatarKey = crypto.randomBytes(20).toString('hex');
  const keys = uploadedAvatarKeys(target.realm_id, avatarKey);
  const written = [keys.original, keys.small, keys.medium];
  let changed: Awaited<ReturnType<typeof changeAvatarFields>>;
  try {
    await deps.storage.put(keys.original, data, { contentType: 'application/octet-stream' });
    await deps.storage.put(keys.small, small, { contentType: 'image/png' });
    await deps.storage.put(keys.medium, medium, { contentType: 'image/png' });
    changed = await changeAvatarFields(deps, target.id, 'U', avatarKey);
  } catch (error) {
    // Not recorded: the files must go too.
    await deps.storage.delete(written).catch(() => undefined);
    throw error;
  }
  await deleteAvatarFiles(deps, changed.user.realm_id, changed.previousKey);
  return changed.user;
}

/** DELETE /users/me/avatar: back to the generated avatar. */
export async function doDeleteAvatar(deps: Deps, actor: Actor) {
  checkAvatarChangesAllowed(actor);
  const { user, previousKey } = await changeAvatarFields(deps, actor.user.id, 'G', null);
  await deleteAvatarFiles(deps, user.realm_id, previousKey);
  return { avatar_url: avatarUrl(user) };
}

/**
 * Zulip's do_change_avatar_fields: the source, a new version (so every URL of the avatar
 * changes) and, here, the name of its files; then notify_avatar_url_change's events.
 */
async function changeAvatarFields(
  deps: Deps,
  userId: number,
  avatarSource: 'U' | 'G',
  avatarKey: string | null,
): Promise<{ user: UserProfile; previousKey: string | null }> {
  return transaction(deps.db, async (tx) => {
    await lockUser(tx.db, userId);
    const before = await tx.db.userProfile.findUniqueOrThrow({ where: { id: userId } });
    const user = await tx.db.userProfile.update({
      where: { id: userId },
      data: { avatar_source: avatarSource, avatar_key: avatarKey, avatar_version: { increment: 1 } },
    });
    if (user.is_bot) {
      await deps.bus.sendEventOnCommit(
        tx,
        user.realm_id,
        { type: 'realm_bot', op: 'update', bot: { user_id: user.id, avatar_url: avatarUrl(user) } },
        await botOwnerUserIds(tx.db, user),
      );
    }
    await deps.bus.sendEventOnCommit(
      tx,
      user.realm_id,
      {
        type: 'realm_user',
        op: 'update',
        person: {
          avatar_source: user.avatar_source,
          avatar_url: avatarUrl(user),
          avatar_url_medium: avatarUrl(user, { medium: true }),
          avatar_version: user.avatar_version,
          user_id: user.id,
        },
      },
      await userIdsWhoCanAccessUser(tx.db, user),
    );
    return { user, previousKey: before.avatar_key };
  });
}

/** An avatar's files once no row names them (a failure only leaves unreachable files behind). */
async function deleteAvatarFiles(deps: Deps, realmId: number, avatarKey: string | null): Promise<void> {
  if (!avatarKey) return;
  const keys = uploadedAvatarKeys(realmId, avatarKey);
  await deps.storage.delete([keys.original, keys.small, keys.medium]).catch((error: unknown) => {
    deps.logger.warn({ err: error, realmId }, 'could not delete a replaced avatar');
  });
}
