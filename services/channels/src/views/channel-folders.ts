// /channel_folders: create, list, update.
import { optional, param, pathInt, required, type AuthedContext } from '@teamchat/core';
import { channelFolderDict, loadActor } from '@teamchat/domain';
import { doCreateChannelFolder, doUpdateChannelFolder } from '../actions/channel-folders';
import type { ChannelsDeps } from '../deps';

type Ctx = AuthedContext<ChannelsDeps>;

// Zulip's ChannelFolder.MAX_NAME_LENGTH and MAX_DESCRIPTION_LENGTH.
const MAX_FOLDER_NAME_LENGTH = 60;
const MAX_FOLDER_DESCRIPTION_LENGTH = 1024;

/** POST /channel_folders/create */
export async function createChannelFolder({ deps, params, requester }: Ctx) {
  const { name, description } = params.parse({
    name: required(param.string({ maxLength: MAX_FOLDER_NAME_LENGTH })),
    description: required(param.string({ maxLength: MAX_FOLDER_DESCRIPTION_LENGTH })),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  return { channel_folder_id: await doCreateChannelFolder(deps, user, name, description) };
}

/** GET /channel_folders */
export async function listChannelFolders({ deps, params, requester }: Ctx) {
  const { include_archived } = params.parse({ include_archived: optional(param.bool(), false) });
  const folders = await deps.db.channelFolder.findMany({
    where: { realm_id: requester.realmId, ...(include_archived ? {} : { is_archived: false }) },
    orderBy: { id: 'asc' },
  });
  return { channel_folders: folders.map(channelFolderDict) };
}

/** PATCH /channel_folders/{channel_folder_id} */
export async function updateChannelFolder({ deps, params, req, requester }: Ctx) {
  const folderId = pathInt(req, 'channel_folder_id');
  const { name, description, is_archived } = params.parse({
    name: optional(param.string({ maxLength: MAX_FOLDER_NAME_LENGTH })),
    description: optional(param.string({ maxLength: MAX_FOLDER_DESCRIPTION_LENGTH })),
    is_archived: optional(param.bool()),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  await doUpdateChannelFolder(deps, user, folderId, { name, description, isArchived: is_archived });
}
