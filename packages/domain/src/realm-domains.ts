// An organisation's allowed email domains (Zulip's get_realm_domains), as GET /realm/domains,
// register's realm_domains and the realm_domains events show them.
import type { Realm, TxClient } from '@teamchat/db';
import { realmSettings } from './realms';

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

/** Why an address may not join the organisation (Zulip's DomainNotAllowedForRealmError, EmailContainsPlusError). */
export type RealmEmailProblem = 'outside_domains' | 'contains_plus';

/**
 * Zulip's get_realm_email_validator: what keeps a (syntactically valid) address out of this
 * organisation, or null. With emails restricted to the domains, an address must be in one of
 * them (or below one that allows subdomains) and have no "+". (Disposable addresses are not
 * recognised: this server has no list of their domains.) Each caller words the problem as Zulip's
 * form does.
 */
export async function realmEmailValidator(
  db: Pick<TxClient, 'realmDomain'>,
  realm: Pick<Realm, 'id' | 'settings'>,
): Promise<(email: string) => RealmEmailProblem | null> {
  if (realmSettings(realm).realm_emails_restricted_to_domains !== true) return () => null;
  const domains = await realmDomains(db, realm.id);
  const exact = new Set(domains.map((row) => row.domain));
  const withSubdomains = new Set(domains.filter((row) => row.allow_subdomains).map((row) => row.domain));
  return (email) => {
    const at = email.lastIndexOf('@');
    if (email.slice(0, at).includes('+')) return 'contains_plus';
    let domain = email.slice(at + 1).toLowerCase();
    if (exact.has(domain)) return null;
    while (domain.includes('.')) {
      domain = domain.slice(domain.indexOf('.') + 1);
      if (withSubdomains.has(domain)) return null;
    }
    return 'outside_domains';
  };
}
