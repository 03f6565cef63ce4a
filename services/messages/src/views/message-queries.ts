import { LIST_LIMITS, param, pathInt, required, v, type AuthedContext } from '@teamchat/core';
import { loadActor, parseNarrow, viewerOf } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { messagesMatchingNarrow } from '../lib/matches-narrow';
import { readReceiptUserIds } from '../lib/read-receipts';

/** GET /messages/{message_id}/read_receipts */
export async function getReadReceipts({ deps, requester, req }: AuthedContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const { user, realm } = await loadActor(deps.db, requester.userId);
  return { user_ids: await readReceiptUserIds(deps.db, viewerOf(user), realm, messageId) };
}

/** GET /messages/matches_narrow */
export async function getMatchesNarrow({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    msg_ids: required(param.json(v.list(v.int(), { maxLength: LIST_LIMITS.messagesPerFetch }))),
    narrow: required(param.json((value, name) => parseNarrow(value, name))),
  });
  const { user } = await loadActor(deps.db, requester.userId);
  // Ids no message can have match nothing (PostgreSQL refuses them for an integer column).
  const ids = [...new Set(parsed.msg_ids.filter(v.isDatabaseId))];
  return { messages: await messagesMatchingNarrow(deps.db, viewerOf(user), ids, parsed.narrow) };
}
