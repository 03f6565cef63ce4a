// Reading messages for one viewer: access (Zulip's access_message), and the finalized message
// objects GET /messages and GET /messages/{id} answer with (Zulip's messages_for_ids).

import { JsonableError } from '@teamchat/core';
import { Prisma, type Realm, type Stream, type TxClient } from '@teamchat/db';
import { realmMessageSettings, visibleEditHistory } from './context';
import {
  buildWideMessageDicts,
  escapeHtml,
  finalizeMessageDict,
  flagsList,
  hasMessageAccess,
  HISTORICAL_FLAGS,
  loadLinkifiers,
  MESSAGE_DICT_COLUMNS,
  topicLinks,
  type FinalizeOptions,
  type Viewer,
} from '@teamchat/domain';

type Reader = Pick<
  TxClient,
  | '$queryRaw'
  | '$queryRawUnsafe'
  | 'message'
  | 'userMessage'
  | 'userProfile'
  | 'stream'
  | 'reaction'
  | 'subMessage'
  | 'realm'
  | 'linkifier'
  | 'subscription'
  | 'groupSetting'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
>;

export const INVALID_MESSAGES = 'Invalid message(s)';

/**
 * The message, the viewer's flags on it and its channel (null for a direct message);
 * "Invalid message(s)" if they may not read it.
 */
export async function accessMessage(db: Reader, viewer: Viewer, messageId: number) {
  const message = await db.message.findFirst({ where: { id: messageId, realm_id: viewer.realm_id } });
  if (!message) throw new JsonableError(INVALID_MESSAGES);
  const userMessage = await db.userMessage.findUnique({
    where: { user_profile_id_message_id: { user_profile_id: viewer.id, message_id: messageId } },
    select: { flags: true },
  });
  const stream: Stream | null =
    message.stream_id === null ? null : await db.stream.findUnique({ where: { id: message.stream_id } });
  // Having received a channel message is not enough (Zulip's has_message_access): one who
  // left a private channel no longer reads it.
  if (!(await hasMessageAccess(db, viewer, message, { received: userMessage !== null, stream })))
    throw new JsonableError(INVALID_MESSAGES);
  if (userMessage) return { message, flags: userMessage.flags, received: true, stream };
  return { message, flags: HISTORICAL_FLAGS, received: false, stream };
}

/**
 * accessMessage for an action that changes the message (Zulip's access_message with
 * lock_message and is_modifying_message): the row is locked until the transaction ends, and
 * messages of archived channels are out of reach.
 */
export async function accessMessageForUpdate(db: Reader, viewer: Viewer, messageId: number) {
  const locked = await db.$queryRaw<{ id: number }[]>(
    Prisma.sql`SELECT id FROM message WHERE id = ${messageId} AND realm_id = ${viewer.realm_id} FOR UPDATE`,
  );
  if (locked.length === 0) throw new JsonableError(INVALID_MESSAGES);
  const access = await accessMessage(db, viewer, messageId);
  // A channel message the viewer may read has its channel (hasMessageAccess refuses otherwise).
  if (access.stream !== null && access.stream.is_archived) throw new JsonableError(INVALID_MESSAGES);
  return access;
}

const MATCH_START = 'TCHLSTART';
const MATCH_STOP = 'TCHLSTOP';
const highlight = (text: string) =>
  text.split(MATCH_START).join('<span class="highlight">').split(MATCH_STOP).join('</span>');

/** Zulip's match_content / match_subject: the search's words highlighted. */
export async function searchHighlights(
  db: Reader,
  ids: number[],
  search: string,
): Promise<Map<number, { match_content: string; match_subject: string }>> {
  const options = `HighlightAll=TRUE, StartSel=${MATCH_START}, StopSel=${MATCH_STOP}`;
  const rows = await db.$queryRaw<{ id: number; content: string; topic: string }[]>`
    SELECT m.id,
      ts_headline('english', COALESCE(m.rendered_content, ''), plainto_tsquery('english', ${search}), ${options}) AS content,
      ts_headline('english', m.topic, plainto_tsquery('english', ${search}), ${options}) AS topic
    FROM message m WHERE m.id = ANY(${ids}::int[])`;
  return new Map(
    rows.map((row) => [
      row.id,
      { match_content: highlight(row.content), match_subject: highlight(escapeHtml(row.topic)) },
    ]),
  );
}

/**
 * Finalized message objects, with `flags`, in the order of `ids`. `flagsById` holds the
 * viewer's flags; messages missing from it are historical (read, historical). `realm` is the
 * viewer's realm, as the caller already holds it (its id and its edit history policy).
 */
export async function messagesForIds(
  db: Reader,
  realm: Pick<Realm, 'id' | 'settings'>,
  ids: number[],
  flagsById: Map<number, number>,
  options: FinalizeOptions & { search?: string | null },
): Promise<Record<string, unknown>[]> {
  if (ids.length === 0) return [];
  const [rows, linkifiers] = await Promise.all([
    db.message.findMany({ where: { id: { in: ids } }, select: MESSAGE_DICT_COLUMNS }),
    loadLinkifiers(db, realm.id),
  ]);
  const historyPolicy = realmMessageSettings(realm).message_edit_history_visibility_policy;
  const byId = new Map(rows.map((row) => [row.id, row]));
  const ordered = ids.map((id) => byId.get(id)).filter((row) => row !== undefined);
  const wide = await buildWideMessageDicts(db, ordered, (topic) => topicLinks(topic, linkifiers));
  const matches = options.search ? await searchHighlights(db, ids, options.search) : null;
  for (const dict of wide) {
    if (!dict.edit_history) continue;
    const visible = visibleEditHistory(dict.edit_history, historyPolicy);
    if (visible === null || visible.length === 0) delete dict.edit_history;
    else dict.edit_history = visible;
  }
  return wide.map((dict) => ({
    ...finalizeMessageDict(dict, options),
    flags: flagsList(flagsById.get(dict.id) ?? HISTORICAL_FLAGS),
    ...(matches?.get(dict.id) ?? {}),
  }));
}

/** The viewer's flags on these messages (rows they have). */
export async function flagsOf(db: Reader, userId: number, ids: number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  const rows = await db.$queryRaw<{ message_id: number; flags: number }[]>(
    Prisma.sql`SELECT message_id, flags FROM user_message WHERE user_profile_id = ${userId} AND message_id = ANY(${ids}::int[])`,
  );
  return new Map(rows.map((row) => [row.message_id, row.flags]));
}
