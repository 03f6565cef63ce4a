// Which user group a mention notification names (Zulip's get_mentioned_user_group): when a
// user is mentioned through groups and not personally, the smallest of those groups (by its
// members, subgroups included) that they belong to; null for a personal mention.

import { Prisma, type Db } from '@teamchat/db';

export interface MentionedUserGroup {
  id: number;
  name: string;
}

export async function mentionedUserGroup(
  db: Pick<Db, '$queryRaw'>,
  renderedHtml: string,
  userId: number,
): Promise<MentionedUserGroup | null> {
  const silent = /\bsilent\b/;
  const personal = [...renderedHtml.matchAll(/<span class="(user-mention[^"]*)" data-user-id="(\d+)"/g)]
    .filter((match) => !silent.test(match[1]))
    .map((match) => Number(match[2]));
  if (personal.includes(userId)) return null;
  const groupIds = [...renderedHtml.matchAll(/<span class="(user-group-mention[^"]*)" data-user-group-id="(\d+)"/g)]
    .filter((match) => !silent.test(match[1]))
    .map((match) => Number(match[2]));
  if (groupIds.length === 0) return null;
  const rows = await db.$queryRaw<{ id: number; name: string | null; members: number }[]>(Prisma.sql`
    WITH RECURSIVE sub(root, id) AS (
      SELECT g, g FROM unnest(${groupIds}::int[]) AS g
      UNION
      SELECT sub.root, ggm.subgroup_id FROM group_group_membership ggm JOIN sub ON ggm.supergroup_id = sub.id
    ), members AS (
      SELECT DISTINCT sub.root, ugm.user_profile_id
      FROM sub JOIN user_group_membership ugm ON ugm.user_group_id = sub.id
    )
    SELECT m.root AS id, g.name, count(*)::int AS members
    FROM members m JOIN user_group g ON g.id = m.root
    GROUP BY m.root, g.name
    HAVING bool_or(m.user_profile_id = ${userId})
    ORDER BY members, m.root`);
  const smallest = rows.find((row) => row.name !== null);
  return smallest ? { id: smallest.id, name: smallest.name! } : null;
}
