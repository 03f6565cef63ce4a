// Custom emoji (Zulip's zerver/views/realm_emoji.py and zerver/actions/realm_emoji.py): adding
// one (the image into the uploads storage, the row into realm_emoji) and deactivating one, each
// followed by the realm_emoji event carrying the realm's whole dict. The uploads service owns
// realm_emoji: it holds the storage the images live in and serves them at /user_avatars/.

import crypto from 'node:crypto';
import { JsonableError, ResourceNotFoundError } from '@teamchat/core';
import { transaction, type Tx } from '@teamchat/db';
import {
  checkValidEmojiName,
  emojiDataFor,
  hasRealmPermission,
  isAdministrator,
  realmEmojiDict,
  realmEmojiKey,
  type Actor,
} from '@teamchat/domain';
import { BadImageError, resizeEmoji, type EmojiFormat, type UploadedFiles } from '@teamchat/images';
import type { UploadsDeps } from '../deps';

type Deps = Pick<UploadsDeps, 'db' | 'bus' | 'storage' | 'logger' | 'env'>;

/** Zulip's types an emoji may be declared as: ones it thumbnails that browsers also show inline. */
const EMOJI_TYPES: Record<EmojiFormat, { type: string; extension: string }> = {
  png: { type: 'image/png', extension: '.png' },
  gif: { type: 'image/gif', extension: '.gif' },
  jpeg: { type: 'image/jpeg', extension: '.jpg' },
  webp: { type: 'image/webp', extension: '.webp' },
};
const DECLARABLE_TYPES = new Set(Object.values(EMOJI_TYPES).map(({ type }) => type));

/** The realm_emoji event to every active user (Zulip's notify_realm_emoji). */
async function notifyRealmEmoji(deps: Deps, tx: Tx, realmId: number): Promise<void> {
  const users = await tx.db.userProfile.findMany({
    where: { realm_id: realmId, is_active: true },
    select: { id: true },
  });
  const event = { type: 'realm_emoji', op: 'update', realm_emoji: await realmEmojiDict(tx.db, realmId) } as const;
  await deps.bus.sendEventOnCommit(
    tx,
    realmId,
    event,
    users.map((user) => user.id),
  );
}

/** One custom-emoji change at a time per realm: the name check and the write must not interleave. */
async function lockRealmEmoji(tx: Tx, realmId: number): Promise<void> {
  await tx.db.$queryRaw`SELECT pg_advisory_xact_lock(hashtext('teamchat:realm-emoji'), ${realmId}::int)::text`;
}

/**
 * Zulip's emoji file name: a hash of the id salted with a server secret (not enumerable by
 * clients), 8 hex digits, and the format's extension.
 */
function emojiFileName(secret: string, emojiId: number, extension: string): string {
  const hash = crypto.createHash('sha256').update(`${secret}:${emojiId}`).digest('hex').slice(0, 8);
  return `${hash}${extension}`;
}

/** Whether `name` is a built-in (unicode or Zulip's extra) emoji's name: no active custom one holds it here. */
async function isBuiltInEmoji(deps: Deps, realmId: number, name: string): Promise<boolean> {
  try {
    return (await emojiDataFor(deps.db, realmId, name)).reaction_type !== 'realm_emoji';
  } catch {
    return false;
  }
}

/** POST /realm/emoji/{emoji_name} (Zulip's upload_emoji + check_add_realm_emoji), checks in Zulip's order. */
export async function doAddRealmEmoji(
  deps: Deps,
  { user: actor }: Actor,
  rawName: string,
  upload: UploadedFiles,
  options: { maxBytes: number; maxMiB: number },
): Promise<void> {
  const name = rawName.trim().replaceAll(' ', '_');
  checkValidEmojiName(name);
  if (!(await hasRealmPermission(deps.db, actor, 'can_add_custom_emoji_group')))
    throw new JsonableError('Insufficient permission');
  const taken = () =>
    deps.db.realmEmoji.findFirst({
      where: { realm_id: actor.realm_id, name, deactivated: false },
      select: { id: true },
    });
  if (await taken()) throw new JsonableError('A custom emoji with this name already exists.');
  if (upload.tooMany || upload.files.length !== 1) throw new JsonableError('You must upload exactly one file.');
  if (!isAdministrator(actor.role) && (await isBuiltInEmoji(deps, actor.realm_id, name)))
    throw new JsonableError('Only administrators can override default emoji.');
  const [file] = upload.files;
  if (!file.data || file.data.length > options.maxBytes)
    throw new JsonableError(`Uploaded file is larger than the allowed limit of ${options.maxMiB} MiB`);
  const original = file.data;
  // A declared type must be one Zulip accepts; the bytes decide the format (python-zulip-api
  // declares none).
  const declared = file.contentType.split(';')[0].trim().toLowerCase();
  if (declared && !DECLARABLE_TYPES.has(declared)) throw new BadImageError('Invalid image format');
  // Decoded and resized before anything is written: a bomb is refused from its header.
  const resized = await resizeEmoji(original);
  const { type, extension } = EMOJI_TYPES[resized.format];

  const stored: string[] = [];
  try {
    await transaction(deps.db, async (tx) => {
      await lockRealmEmoji(tx, actor.realm_id);
      if (await tx.db.realmEmoji.findFirst({ where: { realm_id: actor.realm_id, name, deactivated: false } }))
        throw new JsonableError('A custom emoji with this name already exists.');
      const row = await tx.db.realmEmoji.create({
        data: { realm_id: actor.realm_id, author_id: actor.id, name, file_name: '' },
      });
      // Zulip's upload_emoji_image: the upload kept beside as .original (never shown), the
      // resized copy served, and an animation's still as PNG.
      const fileName = emojiFileName(deps.env.INTERNAL_JWT_SECRET, row.id, extension);
      const stillFileName = resized.still ? fileName.replace(/\.[a-z]+$/, '.png') : null;
      const key = realmEmojiKey(actor.realm_id, fileName);
      stored.push(`${key}.original`);
      await deps.storage.put(`${key}.original`, original, { contentType: type });
      stored.push(key);
      await deps.storage.put(key, resized.image, { contentType: type });
      if (resized.still && stillFileName) {
        const stillKey = realmEmojiKey(actor.realm_id, stillFileName, true);
        stored.push(stillKey);
        await deps.storage.put(stillKey, resized.still, { contentType: 'image/png' });
      }
      await tx.db.realmEmoji.update({
        where: { id: row.id },
        data: { file_name: fileName, still_file_name: stillFileName, is_animated: resized.still !== null },
      });
      await notifyRealmEmoji(deps, tx, actor.realm_id);
    });
  } catch (error) {
    // Not recorded: the stored image must go too.
    if (stored.length) await deps.storage.delete(stored).catch(() => undefined);
    throw error;
  }
}

/**
 * DELETE /realm/emoji/{emoji_name} (Zulip's delete_emoji + do_remove_realm_emoji): the emoji is
 * deactivated, not deleted (old messages and reactions still show it); its author or an
 * administrator may.
 */
export async function doDeactivateRealmEmoji(deps: Deps, { user: actor }: Actor, name: string): Promise<void> {
  // No emoji's name holds a NUL (PostgreSQL text cannot): it names nothing.
  if (name.includes('\u0000')) throw new ResourceNotFoundError(`Emoji '${name}' does not exist`);
  await transaction(deps.db, async (tx) => {
    await lockRealmEmoji(tx, actor.realm_id);
    const emoji = await tx.db.realmEmoji.findFirst({
      where: { realm_id: actor.realm_id, name, deactivated: false, file_name: { not: '' } },
    });
    if (!emoji) throw new ResourceNotFoundError(`Emoji '${name}' does not exist`);
    if (!isAdministrator(actor.role) && emoji.author_id !== actor.id)
      throw new JsonableError('Must be an organization administrator or emoji author');
    await tx.db.realmEmoji.update({ where: { id: emoji.id }, data: { deactivated: true } });
    await notifyRealmEmoji(deps, tx, actor.realm_id);
  });
}
