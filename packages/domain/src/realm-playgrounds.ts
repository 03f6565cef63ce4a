// Code playgrounds (Zulip's RealmPlayground): "view in playground" links for code blocks of a
// language, as register and realm_playgrounds events list them.
import type { RealmPlayground, TxClient } from '@teamchat/db';

export function realmPlaygroundDict(playground: RealmPlayground) {
  return {
    id: playground.id,
    name: playground.name,
    pygments_language: playground.pygments_language,
    url_template: playground.url_template,
  };
}

/** The realm's playgrounds, oldest first (Zulip's get_realm_playgrounds). */
export async function realmPlaygrounds(db: Pick<TxClient, 'realmPlayground'>, realmId: number) {
  const rows = await db.realmPlayground.findMany({ where: { realm_id: realmId }, orderBy: { id: 'asc' } });
  return rows.map(realmPlaygroundDict);
}
