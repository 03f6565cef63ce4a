// GET/PUT/DELETE /bot_storage (Zulip's zerver/views/storage.py): string keys and values each
// user keeps for itself. Zulip checks no bot type here: a human caller has storage of its own.

import { optional, param, required, v, type AuthedContext } from '@teamchat/core';
import { loadActor } from '@teamchat/domain';
import { doRemoveBotStorage, doSetBotStorage } from '../actions/bot-storage';
import type { UsersDeps } from '../deps';
import { allBotStorage, botStorageValues } from '../lib/bot-storage';

const keysParam = optional(param.json(v.nullable(v.list(v.str()))), null);

/** PUT /bot_storage */
export async function updateBotStorage({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { storage } = params.parse({ storage: required(param.json(v.dict(v.str()))) });
  const { user } = await loadActor(deps.db, requester.userId);
  await doSetBotStorage(deps, user.id, storage);
  return {};
}

/** GET /bot_storage */
export async function getBotStorage({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { keys } = params.parse({ keys: keysParam });
  const { user } = await loadActor(deps.db, requester.userId);
  const storage =
    keys === null ? await allBotStorage(deps.db, user.id) : await botStorageValues(deps.db, user.id, keys);
  return { storage };
}

/** DELETE /bot_storage */
export async function removeBotStorage({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { keys } = params.parse({ keys: keysParam });
  const { user } = await loadActor(deps.db, requester.userId);
  await doRemoveBotStorage(deps, user.id, keys);
  return {};
}
