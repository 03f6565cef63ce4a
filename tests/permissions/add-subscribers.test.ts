// Who may subscribe other users to a channel (one rule, packages/domain's
// channelsUserCannotAddSubscribersTo), asked through both services that need it: subscribing
// others (channels, POST /users/me/subscriptions with principals) and inviting to channels
// (users, POST /invites/multiuse with stream_ids). Zulip's get_streams_to_which_user_cannot_add_subscribers:
// administrators and the realm's can_add_subscribers_group may add anywhere; others where the
// channel's can_add_subscribers_group or can_administer_channel_group holds them; an invitation
// may also name a default channel. The expected answers are written out here from that rule.

import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

let stack: Stack;
let owner: TestUser;
let admin: TestUser;
/** In the group holding the channel's can_add_subscribers_group. */
let adder: TestUser;
/** In the group holding the channel's can_administer_channel_group. */
let steward: TestUser;
let member: TestUser;
/** Whom the others try to subscribe. */
let target: TestUser;
let open: number;
let general: number;

async function ok(response: Promise<{ status: number; body: any }>): Promise<any> {
  const answer = await response;
  if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

async function groupOf(name: string, user: TestUser): Promise<number> {
  const body = await ok(owner.client.post('/api/v1/user_groups/create', { name, description: '', members: [user.id] }));
  return body.group_id;
}

beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  owner = await stack.createUser({ role: Role.OWNER });
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
  adder = await stack.createUser({ role: Role.MEMBER });
  steward = await stack.createUser({ role: Role.MEMBER });
  member = await stack.createUser({ role: Role.MEMBER });
  target = await stack.createUser({ role: Role.MEMBER });
  await ok(
    owner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'open' }],
      can_add_subscribers_group: await groupOf('adders', adder),
      can_administer_channel_group: await groupOf('stewards', steward),
    }),
  );
  await ok(owner.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] }));
  open = (await stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name: 'open' } })).id;
  general = (await stack.db.stream.findFirstOrThrow({ where: { realm_id: stack.realm.id, name: 'general' } })).id;
  await stack.db.stream.update({ where: { id: general }, data: { is_default: true } });
  // Everyone may create invitations; only administrators may add subscribers everywhere.
  await stack.setRealmGroupSetting('create_multiuse_invite_group', 'role:members');
  await stack.setRealmGroupSetting('can_add_subscribers_group', 'role:administrators');
});
afterAll(() => stack?.close());

const actors = () => ({ admin, adder, steward, member });

// [actor, channel, may subscribe others, may invite]
test.each([
  ['admin', 'open', true, true],
  ['adder', 'open', true, true],
  ['steward', 'open', true, true],
  ['member', 'open', false, false],
  ['admin', 'general', true, true],
  ['adder', 'general', false, true],
  ['steward', 'general', false, true],
  ['member', 'general', false, true],
] as const)('%s adding others to the %s channel: subscribe %s, invite %s', async (who, channel, subscribe, invite) => {
  const actor = actors()[who];
  const streamId = channel === 'open' ? open : general;

  const subscribed = await actor.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: [{ name: channel }],
    principals: [target.id],
  });
  if (subscribe) expect(subscribed.status).toBe(200);
  else expectError(subscribed, 400, 'BAD_REQUEST', 'Insufficient permission');

  const invited = await actor.client.post('/api/v1/invites/multiuse', { stream_ids: [streamId] });
  if (invite) expect(invited.status).toBe(200);
  else expectError(invited, 400, 'BAD_REQUEST', 'You do not have permission to subscribe other users to channels.');
});

test("the realm's can_add_subscribers_group may add others anywhere, through both services", async () => {
  await stack.setRealmGroupSetting('can_add_subscribers_group', 'role:members');
  try {
    for (const channel of ['open', 'general']) {
      await ok(
        member.client.post('/api/v1/users/me/subscriptions', {
          subscriptions: [{ name: channel }],
          principals: [target.id],
        }),
      );
    }
    await ok(member.client.post('/api/v1/invites/multiuse', { stream_ids: [open, general] }));
  } finally {
    await stack.setRealmGroupSetting('can_add_subscribers_group', 'role:administrators');
  }
});
