// Creating a realm: the realm row, its system groups (with the subgroup chain that makes
// higher roles members of lower groups) and the default value of every realm group setting.

import { transaction, type Db, type Realm, type TxClient } from '@teamchat/db';
import {
  REALM_GROUP_SETTING_DEFAULTS,
  SYSTEM_GROUPS,
  SystemGroup,
  USER_GROUP_PERMISSION_SETTINGS,
  type SystemGroupName,
} from '@teamchat/domain';
import { JsonableError } from '@teamchat/core';

export interface CreateRealmInput {
  stringId: string;
  name: string;
  /** Host the realm is served on, e.g. "chat.example.com" or "localhost:9991". */
  host: string;
  description?: string;
  inviteRequired?: boolean;
}

export async function doCreateRealm(db: Db, input: CreateRealmInput): Promise<Realm> {
  const host = input.host.toLowerCase();
  if (await db.realm.findFirst({ where: { OR: [{ string_id: input.stringId }, { host }] } })) {
    throw new JsonableError(`A realm with subdomain '${input.stringId}' or host '${host}' already exists`);
  }
  return transaction(db, async ({ db: tx }) => {
    const realm = await tx.realm.create({
      data: {
        string_id: input.stringId,
        name: input.name,
        host,
        description: input.description ?? '',
        invite_required: input.inviteRequired ?? true,
      },
    });
    const groupIds = await createSystemGroups(tx, realm.id);
    await tx.groupSetting.createMany({
      data: Object.entries(REALM_GROUP_SETTING_DEFAULTS).map(([name, group]) => ({
        realm_id: realm.id,
        owner_kind: 'realm',
        owner_id: realm.id,
        name,
        group_id: groupIds[group],
      })),
    });
    // System groups hold their own permissions too; nobody may manage or join them.
    await tx.groupSetting.createMany({
      data: SYSTEM_GROUPS.flatMap((group) =>
        Object.keys(USER_GROUP_PERMISSION_SETTINGS).map((name) => ({
          realm_id: realm.id,
          owner_kind: 'user_group',
          owner_id: groupIds[group.name],
          name,
          group_id: groupIds[SystemGroup.NOBODY],
        })),
      ),
    });
    return realm;
  });
}

async function createSystemGroups(tx: TxClient, realmId: number): Promise<Record<SystemGroupName, number>> {
  const ids = {} as Record<SystemGroupName, number>;
  for (const group of SYSTEM_GROUPS) {
    const created = await tx.userGroup.create({
      data: { realm_id: realmId, name: group.name, description: group.description, is_system_group: true, named: true },
    });
    ids[group.name] = created.id;
  }
  await tx.groupGroupMembership.createMany({
    data: SYSTEM_GROUPS.filter((group) => group.subgroup).map((group) => ({
      supergroup_id: ids[group.name],
      subgroup_id: ids[group.subgroup!],
    })),
  });
  return ids;
}
