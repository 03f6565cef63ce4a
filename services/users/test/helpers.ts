// Shared fixtures of the users service tests: one user of each role (and a bot), and the
// events actions committed (read from the outbox, or the intake once published; see committedSince).
import { Role, systemGroupId as realmSystemGroupId, type SystemGroupName } from '@teamchat/domain';
import { committedSince, outboxMark as committedMark } from '@teamchat/bus';
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
  const make = (name: string, role: number) => stack.createUser({ email: `${prefix}${n}-${name}@example.com`, fullName: `${name} ${n}`, role });
  const owner = await make('owner', Role.OWNER);
  const admin = await make('admin', Role.ADMINISTRATOR);
  const moderator = await make('moderator', Role.MODERATOR);
  const member = await make('member', Role.MEMBER);
  const guest = await make('guest', Role.GUEST);
  const bot = await stack.createUser({ email: `${prefix}${n}-bot@example.com`, fullName: `Bot ${n}`, botType: 1, botOwnerId: member.id });
  return { owner, admin, moderator, member, guest, bot };
}

export interface CommittedEvent {
  event: Record<string, any>;
  users: (number | { id: number })[];
}

/** The newest event_outbox id handed out: take it before an action, then read what came after. */
export const outboxMark = (stack: Stack): Promise<bigint> => committedMark(stack.db);

/** The events committed after `mark` (of one type, when given), oldest first. */
export async function eventsSince(stack: Stack, mark: bigint, type?: string): Promise<CommittedEvent[]> {
  const committed = await committedSince(stack.db, stack.redis, stack.deps.bus, mark);
  return committed.map(({ payload }) => payload as CommittedEvent).filter((entry) => type === undefined || entry.event.type === type);
}

export const recipientIds = (entry: CommittedEvent) => entry.users.map((user) => (typeof user === 'number' ? user : user.id)).sort((a, b) => a - b);

export const systemGroupId = (stack: Stack, name: SystemGroupName, realmId = stack.realm.id) => realmSystemGroupId(stack.db, realmId, name);

export async function activeIds(stack: Stack, realmId = stack.realm.id): Promise<number[]> {
  const users = await stack.db.userProfile.findMany({ where: { realm_id: realmId, is_active: true }, select: { id: true }, orderBy: { id: 'asc' } });
  return users.map((user) => user.id);
}
