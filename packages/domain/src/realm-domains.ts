// An organisation's allowed email domains (Zulip's get_realm_domains), as GET /realm/domains,
// register's realm_domains and the realm_domains events show them.
import type { TxClient } from '@teamchat/db';

export interface RealmDomainDict {
  domain: string;
  allow_subdomains: boolean;
}

export async function realmDomains(db: Pick<TxClient, 'realmDomain'>, realmId: number): Promise<RealmDomainDict[]> {
  return db.realmDomain.findMany({
    where: { realm_id: realmId },
    select: { domain: true, allow_subdomains: true },
    orderBy: { id: 'asc' },
  });
}
