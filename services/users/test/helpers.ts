// Shared fixtures of the users service tests: one user of each role (and a bot). The events actions
// commit are read with captureEvents (@teamchat/testing).
import { Role, systemGroupId as realmSystemGroupId, type SystemGroupName } from '@teamchat/domain';
import type { Stack, TestUser } from '@teamchat/stack';

export interface Cast {
  owner: TestUser;
  admin: TestUser;
  moderator: TestUser;
  member: TestUser;
  guest: TestUser;
  bot: TestUser;
}

let castCounter = 0;

/** An owner, administrator, moderator, member, guest, and a bot owned by the member. */
export async function createCast(stack: Stack, prefix = 'cast'): Promise<Cast> {
  const n = ++castCounter;
  const make = (name: string, role: number) =>
    stack.createUser({ email: `${prefix}${n}-${name}@example.com`, fullName: `${name} ${n}`, role });
  const owner = await make('owner', Role.OWNER);
  const admin = await make('admin', Role.ADMINISTRATOR);
  const moderator = await make('moderator', Role.MODERATOR);
  const member = await make('member', Role.MEMBER);
  const guest = await make('guest', Role.GUEST);
  const bot = await stack.createUser({
    email: `${prefix}${n}-bot@example.com`,
    fullName: `Bot ${n}`,
    botType: 1,
    botOwnerId: member.id,
  });
  return { owner, admin, moderator, member, guest, bot };
}

export const systemGroupId = (stack: Stack, name: SystemGroupName, realmId = stack.realm.id) =>
  realmSystemGroupId(stack.db, realmId, name);

export async function activeIds(stack: Stack, realmId = stack.realm.id): Promise<number[]> {
  const users = await stack.db.userProfile.findMany({
    where: { realm_id: realmId, is_active: true },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  return users.map((user) => user.id);
}
