// The permission matrix's table format: one row per endpoint (and situation), one column per
// role, each cell the expected outcome — success, or Zulip's exact refusal (status, code, msg).
//
//   matrix('PATCH /streams/{id} description, public channel', {
//     setup: async () => ({ streamId: await newChannel() }),          // fresh state per role
//     act: (actor, { streamId }) => actor.client.patch(`/api/v1/streams/${streamId}`, {...}),
//     verify: async ({ streamId }, allowed) => { ... },              // the state did / did not change
//     expect: { owner: OK, administrator: OK, moderator: CANNOT_ADMINISTER, member: CANNOT_ADMINISTER,
//               guest: INVALID_CHANNEL, bot: CANNOT_ADMINISTER },
//   });
//
// Each cell becomes one jest test named "<role> → <outcome>", so a failing cell names itself.

import { Role } from '@teamchat/domain';
import { type Stack, type TestUser } from '@teamchat/stack';
import { expectError, type ApiResponse } from '@teamchat/testing';

export const ROLES = ['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'] as const;
export type RoleName = (typeof ROLES)[number];

export type Cast = Record<RoleName, TestUser>;

export interface Refusal {
  kind: 'refused';
  status: number;
  code: string;
  msg: string | RegExp;
}
export interface Allowed {
  kind: 'ok';
  /** A non-API answer (a file): status 200 is success, whatever the body. */
  raw?: boolean;
}
export type Outcome = Allowed | Refusal;

export const OK: Allowed = { kind: 'ok' };
/** Success for file downloads: 200 with the bytes. */
export const SERVED: Allowed = { kind: 'ok', raw: true };
export const refused = (msg: string | RegExp, code = 'BAD_REQUEST', status = 400): Refusal => ({
  kind: 'refused',
  status,
  code,
  msg,
});

// Zulip's recurring refusals.
export const ADMIN_REQUIRED = refused('Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
export const OWNER_REQUIRED = refused('Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
export const INSUFFICIENT = refused('Insufficient permission');
export const GUESTS_NOT_ALLOWED = refused('Not allowed for guest users');
export const INVALID_CHANNEL = refused('Invalid channel ID');
export const CANNOT_ADMINISTER = refused('You do not have permission to administer this channel.');

/** A row where `allowed` roles succeed and every other role gets `refusal`. */
export function only(
  allowed: RoleName[],
  refusal: Refusal,
  overrides: Partial<Record<RoleName, Outcome>> = {},
  success: Allowed = OK,
): Record<RoleName, Outcome> {
  return Object.fromEntries(
    ROLES.map((role) => [role, overrides[role] ?? (allowed.includes(role) ? success : refusal)]),
  ) as Record<RoleName, Outcome>;
}

/** Every role succeeds (with exceptions). */
export const everyone = (overrides: Partial<Record<RoleName, Outcome>> = {}) =>
  only([...ROLES], INSUFFICIENT, overrides);

let castCounter = 0;

/** One user of each role, and a generic bot (role member) owned by the member. */
export async function createCast(stack: Stack, realm = stack.realm, domain = 'example.com'): Promise<Cast> {
  const n = ++castCounter;
  const make = (name: string, role: number) =>
    stack.createUser({ realm, email: `m${n}-${name}@${domain}`, fullName: `${name} ${n}`, role });
  const owner = await make('owner', Role.OWNER);
  const administrator = await make('admin', Role.ADMINISTRATOR);
  const moderator = await make('moderator', Role.MODERATOR);
  const member = await make('member', Role.MEMBER);
  const guest = await make('guest', Role.GUEST);
  const bot = await stack.createUser({
    realm,
    email: `m${n}-bot@${domain}`,
    fullName: `Bot ${n}`,
    botType: 1,
    botOwnerId: member.id,
  });
  return { owner, administrator, moderator, member, guest, bot };
}

export function describeOutcome(outcome: Outcome): string {
  if (outcome.kind === 'ok') return outcome.raw ? 'served' : 'allowed';
  return `refused ${outcome.status} ${outcome.code} "${outcome.msg}"`;
}

export function assertOutcome(response: ApiResponse, outcome: Outcome): void {
  if (outcome.kind === 'ok') {
    if (response.status !== 200 || (!outcome.raw && response.body?.result !== 'success')) {
      throw new Error(`expected success, got ${response.status} ${JSON.stringify(response.body)}`);
    }
  } else {
    expectError(response, outcome.status, outcome.code, outcome.msg);
  }
}

export interface MatrixRow<S> {
  /** Fresh state for one role's request (runs before each cell). */
  setup?: (actor: TestUser, role: RoleName) => Promise<S>;
  act: (actor: TestUser, state: S, role: RoleName) => Promise<ApiResponse>;
  /** Checks the effect: done when allowed, nothing changed when refused. */
  verify?: (state: S, allowed: boolean, actor: TestUser, response: ApiResponse) => Promise<void>;
  expect: Record<RoleName, Outcome>;
}

/** One endpoint (situation) × every role. `cast` is read when the tests run. */
export function matrix<S = undefined>(title: string, cast: () => Cast, row: MatrixRow<S>): void {
  describe(title, () => {
    for (const role of ROLES) {
      const outcome = row.expect[role];
      test(`${role} → ${describeOutcome(outcome)}`, async () => {
        const actor = cast()[role];
        const state = (row.setup ? await row.setup(actor, role) : undefined) as S;
        const response = await row.act(actor, state, role);
        assertOutcome(response, outcome);
        await row.verify?.(state, outcome.kind === 'ok', actor, response);
      });
    }
  });
}
