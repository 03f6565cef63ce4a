// GET /messages/matches_narrow (Zulip's messages_in_narrow_backend): which of the given
// messages, among those the viewer received, match a narrow, with their search highlights.

import { Prisma } from '@teamchat/db';
import { compileNarrow, escapeHtml, type NarrowTerm, type NarrowViewer } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { searchHighlights } from './messages';

export type NarrowMatches = Record<string, { match_content: string; match_subject: string }>;

export async function messagesMatchingNarrow(
  db: MessagesDeps['db'],
  viewer: NarrowViewer,
  ids: number[],
  narrowTerms: NarrowTerm[] | null,
): Promise<NarrowMatches> {
  const narrow = await compileNarrow(db, viewer, narrowTerms);
  if (ids.length === 0) return {};
  // Only messages the viewer received (their user_message rows), as Zulip's query does.
  const conditions = narrow.conditions.length
    ? Prisma.sql` AND ${Prisma.join(narrow.conditions, ' AND ')}`
    : Prisma.empty;
  const rows = await db.$queryRaw<{ id: number; topic: string; rendered_content: string | null }[]>`
    SELECT m.id, m.topic, m.rendered_content FROM user_message um JOIN message m ON m.id = um.message_id
    WHERE um.user_profile_id = ${viewer.id} AND um.message_id = ANY(${ids}::int[])${conditions}
    ORDER BY m.id`;
  const highlights = narrow.search
    ? await searchHighlights(
        db,
        rows.map((row) => row.id),
        narrow.search,
      )
    : null;
  const matches: NarrowMatches = {};
  for (const row of rows) {
    // Without a search, the message as rendered and its topic (Zulip's get_search_fields).
    matches[String(row.id)] = highlights?.get(row.id) ?? {
      match_content: row.rendered_content ?? '',
      match_subject: escapeHtml(row.topic),
    };
  }
  return matches;
}
