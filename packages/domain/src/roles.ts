// Organisation roles (Zulip's UserProfile.ROLE_*).
import { Prisma } from '@teamchat/db';

export const Role = {
  OWNER: 100,
  ADMINISTRATOR: 200,
  MODERATOR: 300,
  MEMBER: 400,
  GUEST: 600,
} as const;

export type RoleValue = (typeof Role)[keyof typeof Role];

export const ROLE_VALUES: readonly number[] = Object.values(Role);

export const ROLE_BY_NAME: Record<string, RoleValue> = {
  owner: Role.OWNER,
  admin: Role.ADMINISTRATOR,
  administrator: Role.ADMINISTRATOR,
  moderator: Role.MODERATOR,
  member: Role.MEMBER,
  guest: Role.GUEST,
};

export const isOwner = (role: number) => role === Role.OWNER;
/** Owners are administrators too. */
export const isAdministrator = (role: number) => role <= Role.ADMINISTRATOR;
export const isModerator = (role: number) => role <= Role.MODERATOR;
export const isGuest = (role: number) => role === Role.GUEST;

// The same tests in SQL, over the user_profile row `alias`, for statements that pick users by role.
const roleColumn = (alias: string) => Prisma.raw(`${alias}.role`);
export const isAdministratorSql = (alias: string) => Prisma.sql`${roleColumn(alias)} <= ${Role.ADMINISTRATOR}`;
export const isGuestSql = (alias: string) => Prisma.sql`${roleColumn(alias)} = ${Role.GUEST}`;

/** Bot types (Zulip's UserProfile.*_BOT). */
export const BotType = {
  DEFAULT: 1,
  INCOMING_WEBHOOK: 2,
  OUTGOING_WEBHOOK: 3,
  EMBEDDED: 4,
} as const;
