// GET /messages: a range of a narrow (or explicit ids) for one viewer, read in one
// REPEATABLE READ snapshot so the search and the message bodies agree.

import { transaction, type Realm } from '@teamchat/db';
import {
  compileNarrow,
  fetchMessageRange,
  hasMessageAccess,
  MessageFlag,
  type FinalizeOptions,
  type NarrowTerm,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { flagsOf, messagesForIds } from './messages';

export interface FetchRequest {
  narrow: NarrowTerm[] | null;
  anchor: number | null;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
  messageIds: number[] | undefined;
  finalize: FinalizeOptions;
  /** A spectator's (webPublicNarrow): every message of the web-public channels, each read. */
  spectator?: boolean;
}

export async function fetchMessages(
  deps: MessagesDeps,
  viewer: { id: number; realm_id: number; role: number },
  realm: Pick<Realm, 'id' | 'settings'>,
  request: FetchRequest,
) {
  return transaction(
    deps.db,
    async ({ db }) => {
      const spectator = request.spectator === true;
      const narrow = await compileNarrow(db, viewer, request.narrow, { webPublic: spectator });
      if (request.messageIds !== undefined) {
        const ids = [...new Set(request.messageIds)].sort((a, b) => a - b);
        // A spectator's narrow itself keeps to the web-public channels.
        if (spectator) {
          const matching = await narrowMembers(db, narrow, ids);
          const messages = await messagesForIds(db, realm, matching, readByAll(matching), {
            ...request.finalize,
            search: narrow.search,
          });
          return { messages, found_anchor: false, found_oldest: false, found_newest: false, history_limited: false };
        }
        const flags = await flagsOf(db, viewer.id, ids);
        const visible: number[] = [];
        for (const id of ids) {
          if (flags.has(id)) {
            visible.push(id);
            continue;
          }
          const message = await db.message.findFirst({
            where: { id, realm_id: viewer.realm_id },
            select: { id: true, realm_id: true, stream_id: true },
          });
          if (message && (await hasMessageAccess(db, viewer, message))) visible.push(id);
        }
        const matching = narrow.conditions.length ? await narrowMembers(db, narrow, visible) : visible;
        const messages = await messagesForIds(db, realm, matching, flags, {
          ...request.finalize,
          search: narrow.search,
        });
        return { messages, found_anchor: false, found_oldest: false, found_newest: false, history_limited: false };
      }
      const range = await fetchMessageRange(db, narrow, request);
      const flags = spectator
        ? readByAll(range.rows.map((row) => row.id))
        : new Map(range.rows.map((row) => [row.id, row.flags]));
      const messages = await messagesForIds(
        db,
        realm,
        range.rows.map((row) => row.id),
        flags,
        { ...request.finalize, search: narrow.search },
      );
      return {
        messages,
        found_anchor: range.foundAnchor,
        found_oldest: range.foundOldest,
        found_newest: range.foundNewest,
        history_limited: range.historyLimited,
        anchor: range.anchor,
      };
    },
    { isolationLevel: 'RepeatableRead' },
  );
}

/** Zulip's flags for a spectator: every message read, nothing else. */
function readByAll(ids: number[]): Map<number, number> {
  return new Map(ids.map((id) => [id, MessageFlag.read]));
}

/** Which of `ids` match the narrow (their full range, each id its own anchor). */
async function narrowMembers(
  db: Parameters<typeof fetchMessageRange>[0],
  narrow: Awaited<ReturnType<typeof compileNarrow>>,
  ids: number[],
): Promise<number[]> {
  const matching: number[] = [];
  for (const id of ids) {
    const range = await fetchMessageRange(
      db,
      { ...narrow, includeHistory: true, needsMessage: true },
      { anchor: id, includeAnchor: true, numBefore: 0, numAfter: 0 },
    );
    if (range.foundAnchor) matching.push(id);
  }
  return matching;
}
