// A big organisation for the benches, made fast: the first user through the users service's own
// action (the realm's system groups), the others copied from it in three statements, since
// 10,000 calls of the action take minutes (it announces each new user to the whole realm).
import type { Realm } from '@teamchat/db';
import { generateApiKey, hashApiKey } from '@teamchat/domain';
import type { createBaseDeps } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';

export interface OrganisationUser {
  id: number;
  email: string;
  apiKey: string;
}

/** A realm `name` (string id and mail domain `<name>.test`, host `<name>.teamchat.test`) of `count` members with an API key each. */
export async function createOrganisation(
  deps: ReturnType<typeof createBaseDeps>,
  name: string,
  title: string,
  count: number,
): Promise<{ realm: Realm; users: OrganisationUser[] }> {
  const realm = await doCreateRealm(deps.db, { stringId: name, name: title, host: `${name}.teamchat.test` });
  const domain = `${name}.test`;
  const { user: first, apiKey: firstKey } = await doCreateUser(deps, realm, {
    email: `u0@${domain}`,
    fullName: 'User 0',
    role: 400,
  });
  const made = await deps.db.$queryRaw<{ id: number; delivery_email: string }[]>`
    INSERT INTO user_profile (realm_id, email, delivery_email, full_name, role)
    SELECT ${realm.id}, 'u' || n || ${`@${domain}`}, 'u' || n || ${`@${domain}`}, 'User ' || n, 400
    FROM generate_series(1, ${count - 1}::int) AS n
    RETURNING id, delivery_email`;
  const ids = made.map((row) => row.id);
  await deps.db.$executeRaw`
    INSERT INTO user_group_membership (user_group_id, user_profile_id)
    SELECT membership.user_group_id, member.id
    FROM user_group_membership membership CROSS JOIN unnest(${ids}::int[]) AS member(id)
    WHERE membership.user_profile_id = ${first.id}`;
  const keys = ids.map(() => generateApiKey());
  await deps.db.$executeRaw`
    INSERT INTO api_key (user_profile_id, key_hash, description)
    SELECT unnest(${ids}::int[]), unnest(${keys.map(hashApiKey)}::text[]), 'bench'`;
  const users: OrganisationUser[] = [{ id: first.id, email: first.delivery_email, apiKey: firstKey }];
  made.forEach((row, i) => users.push({ id: row.id, email: row.delivery_email, apiKey: keys[i] }));
  return { realm, users };
}
