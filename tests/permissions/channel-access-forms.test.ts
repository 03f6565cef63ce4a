// The channel-access rule has one TypeScript form, packages/domain's decideStreamAccess (asked one
// channel at a time by streamAccess, and for a loaded viewer by streamAccessOf), and one SQL form,
// unsubscribedMetadataAccessSql / metadataAccessSql (the audience of every `stream` and
// `subscription` event, whichever service sends it). Here, for users of every role, subscribed or
// not, in each access-granting group setting of the channel (directly or through a subgroup) or in
// none, and deactivated ones, on every kind of channel, the users the SQL picks are exactly those
// the TypeScript rule lets see the channel, and the two TypeScript paths agree with each other.
//
// The rule itself is Zulip's (zerver/lib/streams.py: user_has_content_access,
// check_basic_stream_access, bulk_can_access_stream_metadata_user_ids); `seesWithoutSubscription`
// writes out what it says about seeing a channel, so agreeing on a wrong rule fails too.

import type { Stream } from '@teamchat/db';
import {
  loadViewerContext,
  metadataAccessUserIds,
  Role,
  streamAccess,
  streamAccessOf,
  streamSettingGroups,
  unsubscribedMetadataAccessUserIds,
  type RoleValue,
  type StreamAccess,
} from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';

type Membership =
  'none' | 'can_add_subscribers_group' | 'can_subscribe_group' | 'can_administer_channel_group' | 'nested';

/** `nested`: in a subgroup of the group holding can_administer_channel_group. */
const MEMBERSHIPS: Membership[] = [
  'none',
  'can_add_subscribers_group',
  'can_subscribe_group',
  'can_administer_channel_group',
  'nested',
];
const ROLES: RoleValue[] = [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST];

interface Cell {
  user: TestUser;
  role: RoleValue;
  membership: Membership;
  subscribed: boolean;
  active: boolean;
}

type Kind = 'web-public' | 'public' | 'private, shared history' | 'private, protected history' | 'private, archived';
const KINDS: Kind[] = [
  'web-public',
  'public',
  'private, shared history',
  'private, protected history',
  'private, archived',
];

let stack: Stack;
let creator: TestUser;
const cells: Cell[] = [];
const groupIds = {} as Record<Exclude<Membership, 'none' | 'nested'>, number>;
const streams = new Map<Kind, Stream>();

async function ok(response: Promise<{ status: number; body: any }>): Promise<any> {
  const answer = await response;
  if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

const createGroup = async (name: string, members: number[], subgroups: number[] = []): Promise<number> =>
  (await ok(creator.client.post('/api/v1/user_groups/create', { name, description: '', members, subgroups }))).group_id;

const membersOf = (membership: Membership) => cells.filter((cell) => cell.membership === membership);
const ids = (list: Cell[]) => list.map((cell) => cell.user.id);
const sorted = (list: number[]) => [...list].sort((a, b) => a - b);

beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  // Web-public channels need spectator access.
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
  creator = await stack.createUser({ role: Role.OWNER });
  for (const role of ROLES) {
    for (const membership of MEMBERSHIPS) {
      for (const subscribed of [false, true]) {
        cells.push({ user: await stack.createUser({ role }), role, membership, subscribed, active: true });
      }
    }
    // A deactivated subscriber in a group: in no audience.
    cells.push({
      user: await stack.createUser({ role }),
      role,
      membership: 'can_administer_channel_group',
      subscribed: true,
      active: false,
    });
  }
  const nested = await createGroup('nested', ids(membersOf('nested')));
  groupIds.can_add_subscribers_group = await createGroup('adders', ids(membersOf('can_add_subscribers_group')));
  groupIds.can_subscribe_group = await createGroup('joiners', ids(membersOf('can_subscribe_group')));
  groupIds.can_administer_channel_group = await createGroup(
    'stewards',
    ids(membersOf('can_administer_channel_group')),
    [nested],
  );

  const subscribers = ids(cells.filter((cell) => cell.subscribed));
  for (const kind of KINDS) {
    await ok(
      creator.client.post('/api/v1/users/me/subscriptions', {
        subscriptions: [{ name: kind }],
        principals: subscribers,
        is_web_public: kind === 'web-public',
        invite_only: kind.includes('private'),
        history_public_to_subscribers: kind !== 'private, protected history',
        ...groupIds,
      }),
    );
    const stream = await stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name: kind } });
    if (kind.endsWith('archived')) await ok(creator.client.delete(`/api/v1/streams/${stream.id}`));
    streams.set(kind, await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } }));
  }
  for (const cell of cells.filter((cell) => !cell.active)) {
    await ok(creator.client.delete(`/api/v1/users/${cell.user.id}`));
  }
});
afterAll(() => stack?.close());

/** Zulip's rule for seeing a channel without a subscription, written out for the matrix's users. */
function seesWithoutSubscription(kind: Kind, cell: Cell): boolean {
  if (kind === 'web-public') return true;
  if (cell.role === Role.GUEST) return false;
  if (kind === 'public') return true;
  return cell.role === Role.OWNER || cell.role === Role.ADMINISTRATOR || cell.membership !== 'none';
}

describe.each(KINDS)('a %s channel', (kind) => {
  test('the SQL audiences are the users the TypeScript rule lets see it, for every user of the realm', async () => {
    const stream = streams.get(kind)!;
    const settings = (await streamSettingGroups(stack.db, [stream.id])).get(stream.id)!;
    const users = await stack.db.userProfile.findMany({
      where: { realm_id: stack.realm.id, is_active: true },
      select: { id: true, realm_id: true, role: true },
      orderBy: { id: 'asc' },
    });
    const seeing: number[] = [];
    const seeingUnsubscribed: number[] = [];
    for (const user of users) {
      const byQueries: StreamAccess = await streamAccess(stack.db, user, stream);
      const context = await loadViewerContext(stack.db, user);
      expect({ user: user.id, access: streamAccessOf(context, stream, settings) }).toEqual({
        user: user.id,
        access: byQueries,
      });
      if (byQueries.metadata) seeing.push(user.id);
      if (streamAccessOf({ ...context, subscribedStreamIds: new Set() }, stream, settings).metadata) {
        seeingUnsubscribed.push(user.id);
      }
    }

    expect(await metadataAccessUserIds(stack.db, stream)).toEqual(seeing);
    expect(await unsubscribedMetadataAccessUserIds(stack.db, stream, settings)).toEqual(seeingUnsubscribed);
    // Asked about some users only (who among new subscribers could already see the channel).
    const some = ids(cells.filter((cell) => cell.subscribed));
    expect(await unsubscribedMetadataAccessUserIds(stack.db, stream, settings, some)).toEqual(
      seeingUnsubscribed.filter((id) => some.includes(id)),
    );

    // The rule as Zulip states it, for the matrix (the deactivated see nothing).
    const matrix = cells.filter((cell) => cell.active);
    expect(seeingUnsubscribed.filter((id) => ids(cells).includes(id))).toEqual(
      sorted(ids(matrix.filter((cell) => seesWithoutSubscription(kind, cell)))),
    );
    expect(seeing.filter((id) => ids(cells).includes(id))).toEqual(
      sorted(ids(matrix.filter((cell) => cell.subscribed || seesWithoutSubscription(kind, cell)))),
    );
  });
});
