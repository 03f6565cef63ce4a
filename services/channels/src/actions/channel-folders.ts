// Channel folders: organisation-wide groupings of channels (Zulip's actions/channel_folders.py).
import type { EventFieldsOf } from '@teamchat/bus';
import { JsonableError, OrganizationAdministratorRequiredError } from '@teamchat/core';
import { transaction, type Tx, type UserProfile } from '@teamchat/db';
import { activeRealmUserIds, channelFolderDict, isAdministrator, renderMarkdown } from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';
import { checkFolderName } from '../lib/names';

async function checkNameAvailable(tx: Tx, realmId: number, name: string): Promise<void> {
  checkFolderName(name);
  const [clash] = await tx.db.$queryRaw<
    { id: number }[]
  >`SELECT id FROM channel_folder WHERE realm_id = ${realmId} AND lower(name) = lower(${name})`;
  if (clash) throw new JsonableError('Channel folder name already in use');
}

async function sendFolderEvent(
  deps: ChannelsDeps,
  tx: Tx,
  realmId: number,
  event: EventFieldsOf<'channel_folder'>,
): Promise<void> {
  await deps.bus.sendEventOnCommit(
    tx,
    realmId,
    { type: 'channel_folder', ...event },
    await activeRealmUserIds(tx.db, realmId),
  );
}

export async function doCreateChannelFolder(
  deps: ChannelsDeps,
  user: UserProfile,
  name: string,
  description: string,
): Promise<number> {
  if (!isAdministrator(user.role)) throw new OrganizationAdministratorRequiredError();
  return transaction(deps.db, async (tx) => {
    await tx.db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('teamchat:channel-folder'), ${user.realm_id})`;
    await checkNameAvailable(tx, user.realm_id, name);
    const order = await tx.db.channelFolder.count({ where: { realm_id: user.realm_id } });
    const folder = await tx.db.channelFolder.create({
      data: {
        realm_id: user.realm_id,
        name,
        description,
        rendered_description: renderMarkdown(description),
        creator_id: user.id,
        order,
      },
    });
    await sendFolderEvent(deps, tx, user.realm_id, { op: 'add', channel_folder: channelFolderDict(folder) });
    return folder.id;
  });
}

export interface ChannelFolderUpdate {
  name?: string;
  description?: string;
  isArchived?: boolean;
}

export async function doUpdateChannelFolder(
  deps: ChannelsDeps,
  user: UserProfile,
  folderId: number,
  update: ChannelFolderUpdate,
): Promise<void> {
  if (!isAdministrator(user.role)) throw new OrganizationAdministratorRequiredError();
  await transaction(deps.db, async (tx) => {
    const folder = await tx.db.channelFolder.findFirst({ where: { id: folderId, realm_id: user.realm_id } });
    if (!folder) throw new JsonableError('Invalid channel folder ID');
    const data: Record<string, unknown> = {};
    if (update.name !== undefined && update.name !== folder.name) {
      await tx.db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('teamchat:channel-folder'), ${user.realm_id})`;
      await checkNameAvailable(tx, user.realm_id, update.name);
      data.name = update.name;
    }
    if (update.description !== undefined && update.description !== folder.description) {
      data.description = update.description;
      data.rendered_description = renderMarkdown(update.description);
    }
    if (update.isArchived !== undefined && update.isArchived !== folder.is_archived) {
      if (update.isArchived && (await tx.db.stream.count({ where: { folder_id: folder.id } })) > 0) {
        throw new JsonableError('You need to remove all the channels from this folder to archive it.');
      }
      data.is_archived = update.isArchived;
    }
    if (Object.keys(data).length === 0) return;
    await tx.db.channelFolder.update({ where: { id: folder.id }, data });
    await sendFolderEvent(deps, tx, user.realm_id, { op: 'update', channel_folder_id: folder.id, data });
  });
}
