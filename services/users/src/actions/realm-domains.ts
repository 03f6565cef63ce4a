// An organisation's allowed email domains (Zulip's zerver/actions/realm_domains.py): owners add,
// change and remove them; each change is announced to everyone as a realm_domains event. Removing
// the last domain turns emails_restricted_to_domains off, which restricts nothing without one.

import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { transaction, type Tx } from '@teamchat/db';
import { lockRealm, realmSettings } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { activeUserIds } from '../lib/users';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

const MAX_DOMAIN_LENGTH = 255;

/** Zulip's validate_domain (zerver/lib/domains.py), with its wording. */
export function domainProblem(domain: string): string | null {
  if (domain.length === 0) return "Domain can't be empty.";
  if (!domain.includes('.')) return 'Domain must have at least one dot (.)';
  if (domain.length > MAX_DOMAIN_LENGTH) return 'Domain is too long';
  if (domain.startsWith('.') || domain.endsWith('.')) return 'Domain cannot start or end with a dot (.)';
  for (const label of domain.split('.')) {
    if (!label) return "Consecutive '.' are not allowed.";
    if (label.startsWith('-') || label.endsWith('-')) return "Subdomains cannot start or end with a '-'.";
    if (!/^[a-z0-9-]*$/.test(label)) return "Domain can only have letters, numbers, '.' and '-'s.";
  }
  return null;
}

async function announce(deps: Deps, tx: Tx, realmId: number, event: ZulipEventOf<'realm_domains'>): Promise<void> {
  await deps.bus.sendEventOnCommit(tx, realmId, event, await activeUserIds(tx.db, realmId));
}

/** Returns the new row's id. `domain` is already stripped and lower-cased. */
export async function doAddRealmDomain(
  deps: Deps,
  realmId: number,
  domain: string,
  allowSubdomains: boolean,
): Promise<number> {
  const problem = domainProblem(domain);
  if (problem) throw new JsonableError(`Invalid domain: ${problem}`);
  return transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    if (await tx.db.realmDomain.findUnique({ where: { realm_id_domain: { realm_id: realmId, domain } } })) {
      throw new JsonableError(`The domain ${domain} is already a part of your organization.`);
    }
    const row = await tx.db.realmDomain.create({
      data: { realm_id: realmId, domain, allow_subdomains: allowSubdomains },
    });
    await announce(deps, tx, realmId, {
      type: 'realm_domains',
      op: 'add',
      realm_domain: { domain, allow_subdomains: allowSubdomains },
    });
    return row.id;
  });
}

async function existingDomain(tx: Tx, realmId: number, domain: string) {
  const row = await tx.db.realmDomain.findUnique({ where: { realm_id_domain: { realm_id: realmId, domain } } });
  if (!row) throw new JsonableError(`No entry found for domain ${domain}.`);
  return row;
}

export async function doChangeRealmDomain(
  deps: Deps,
  realmId: number,
  domain: string,
  allowSubdomains: boolean,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const row = await existingDomain(tx, realmId, domain);
    await tx.db.realmDomain.update({ where: { id: row.id }, data: { allow_subdomains: allowSubdomains } });
    await announce(deps, tx, realmId, {
      type: 'realm_domains',
      op: 'change',
      realm_domain: { domain, allow_subdomains: allowSubdomains },
    });
  });
}

export async function doRemoveRealmDomain(deps: Deps, realmId: number, domain: string): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const row = await existingDomain(tx, realmId, domain);
    await tx.db.realmDomain.delete({ where: { id: row.id } });
    const realm = await tx.db.realm.findUniqueOrThrow({ where: { id: realmId } });
    const restricted = realmSettings(realm).realm_emails_restricted_to_domains === true;
    if (restricted && (await tx.db.realmDomain.count({ where: { realm_id: realmId } })) === 0) {
      await tx.db.$executeRaw`
        UPDATE realm SET settings = settings || '{"realm_emails_restricted_to_domains": false}'::jsonb
        WHERE id = ${realmId}`;
      await deps.bus.sendEventOnCommit(
        tx,
        realmId,
        { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: false },
        await activeUserIds(tx.db, realmId),
      );
    }
    await announce(deps, tx, realmId, { type: 'realm_domains', op: 'remove', domain });
  });
}
