// Permission matrix: invitations (who may invite, as which role, to which channels and groups,
// with which welcome text), administering users, realm configuration (linkifiers, custom
// profile fields, organisation settings, allowed email domains), and email visibility (GET /users/{email}, GET /users).

import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type Params } from '@teamchat/testing';
import {
  ADMIN_REQUIRED,
  createCast,
  INSUFFICIENT,
  matrix,
  OK,
  only,
  OWNER_REQUIRED,
  refused,
  type Cast,
  type Outcome,
  type RoleName,
} from './matrix';

let stack: Stack;
let cast: Cast;
const theCast = () => cast;

beforeAll(async () => {
  stack = await startStack({ services: ['channels'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const GUEST = refused('Not allowed for guest users');
const BOT = refused('This endpoint does not accept bot requests.');
const humans = (
  allowed: RoleName[],
  otherwise: Outcome = INSUFFICIENT,
  overrides: Partial<Record<RoleName, Outcome>> = {},
) => only(allowed, otherwise as never, { guest: GUEST, bot: BOT, ...overrides });

const invite = (actor: TestUser, params: Params = {}) => actor.client.post('/api/v1/invites/multiuse', params);
const inviteCount = (actor: TestUser) => stack.db.multiuseInvite.count({ where: { referred_by_id: actor.id } });

// ------------------------------------------------------------------ invitations

describe('POST /invites/multiuse', () => {
  // create_multiuse_invite_group defaults to role:administrators.
  matrix('with the default create_multiuse_invite_group', theCast, {
    setup: (actor) => inviteCount(actor),
    act: (actor) => invite(actor),
    verify: async (before, allowed, actor) => expect(await inviteCount(actor)).toBe(before + (allowed ? 1 : 0)),
    expect: humans(['owner', 'administrator']),
  });

  describe('with create_multiuse_invite_group = members: the invited role is at most the inviter’s own', () => {
    beforeAll(() => stack.setRealmGroupSetting('create_multiuse_invite_group', 'role:members'));
    afterAll(() => stack.setRealmGroupSetting('create_multiuse_invite_group', 'role:administrators'));

    matrix('invite_as member (default)', theCast, {
      act: (actor) => invite(actor),
      expect: humans(['owner', 'administrator', 'moderator', 'member']),
    });
    matrix('invite_as guest', theCast, {
      act: (actor) => invite(actor, { invite_as: Role.GUEST }),
      expect: humans(['owner', 'administrator', 'moderator', 'member']),
    });
    matrix('invite_as moderator', theCast, {
      setup: (actor) => inviteCount(actor),
      act: (actor) => invite(actor, { invite_as: Role.MODERATOR }),
      verify: async (before, allowed, actor) => expect(await inviteCount(actor)).toBe(before + (allowed ? 1 : 0)),
      expect: humans(['owner', 'administrator', 'moderator'], refused('Must be an organization administrator')),
    });
    matrix('invite_as administrator', theCast, {
      act: (actor) => invite(actor, { invite_as: Role.ADMINISTRATOR }),
      expect: humans(['owner', 'administrator'], refused('Must be an organization administrator')),
    });
    matrix('invite_as owner', theCast, {
      act: (actor) => invite(actor, { invite_as: Role.OWNER }),
      expect: humans(['owner'], OWNER_REQUIRED),
    });

    // Only administrators can set the welcome message text (spec, Authentication 4).
    matrix('welcome_message_custom_text', theCast, {
      act: (actor) => invite(actor, { welcome_message_custom_text: 'Welcome aboard!' }),
      expect: humans(['owner', 'administrator'], refused('Must be an organization administrator')),
    });
    matrix('welcome_message_custom_text = "" (no custom message) is still text', theCast, {
      act: (actor) => invite(actor, { welcome_message_custom_text: '' }),
      expect: humans(['owner', 'administrator'], refused('Must be an organization administrator')),
    });

    // stream_ids: default channels, or channels one may add subscribers to.
    matrix('stream_ids naming a public channel, realm can_add_subscribers_group = administrators', theCast, {
      setup: async () => {
        await stack.setRealmGroupSetting('can_add_subscribers_group', 'role:administrators');
        return stack.createStream({ name: `invite-${Math.random().toString(36).slice(2, 8)}` });
      },
      act: (actor, stream) => invite(actor, { stream_ids: [stream.id] }),
      verify: () => stack.setRealmGroupSetting('can_add_subscribers_group', 'role:members'),
      expect: humans(
        ['owner', 'administrator'],
        refused('You do not have permission to subscribe other users to channels.'),
      ),
    });
    matrix('stream_ids naming a default channel, realm can_add_subscribers_group = administrators', theCast, {
      setup: async () => {
        await stack.setRealmGroupSetting('can_add_subscribers_group', 'role:administrators');
        const stream = await stack.createStream({ name: `invite-default-${Math.random().toString(36).slice(2, 8)}` });
        await stack.db.stream.update({ where: { id: stream.id }, data: { is_default: true } });
        return stream;
      },
      act: (actor, stream) => invite(actor, { stream_ids: [stream.id] }),
      verify: () => stack.setRealmGroupSetting('can_add_subscribers_group', 'role:members'),
      expect: humans(['owner', 'administrator', 'moderator', 'member']),
    });
    matrix('stream_ids naming a private channel nobody is subscribed to', theCast, {
      setup: () =>
        stack.createStream({ name: `invite-secret-${Math.random().toString(36).slice(2, 8)}`, inviteOnly: true }),
      act: (actor, stream) => invite(actor, { stream_ids: [stream.id] }),
      expect: humans([], refused(/^Invalid channel ID \d+\. No invites were sent\.$/)),
    });
    // group_ids: groups one may add members to (can_add_members_group: the creator by default).
    matrix('group_ids naming a group the member created', theCast, {
      setup: async () => {
        const response = await cast.member.client.post('/api/v1/user_groups/create', {
          name: `inv ${Math.random()}`,
          description: '',
          members: [],
        });
        return response.body.group_id as number;
      },
      act: (actor, groupId) => invite(actor, { group_ids: [groupId] }),
      expect: humans(['owner', 'member']),
    });
  });

  matrix('GET /invites', theCast, {
    act: (actor) => actor.client.get('/api/v1/invites'),
    expect: humans(['owner', 'administrator', 'moderator', 'member'], OK),
  });

  // Revoking another's invitation: administrators (owners for owner invitations).
  matrix("DELETE /invites/multiuse/{id} of an administrator's invitation", theCast, {
    setup: async () => {
      await invite(cast.administrator);
      return (
        await stack.db.multiuseInvite.findFirstOrThrow({
          where: { referred_by_id: cast.administrator.id },
          orderBy: { id: 'desc' },
        })
      ).id;
    },
    act: (actor, id) => actor.client.delete(`/api/v1/invites/multiuse/${id}`),
    expect: humans(['owner', 'administrator'], refused('Must be an organization administrator')),
  });
  matrix("DELETE /invites/multiuse/{id} of an owner's owner invitation", theCast, {
    setup: async () => {
      await invite(cast.owner, { invite_as: Role.OWNER });
      return (
        await stack.db.multiuseInvite.findFirstOrThrow({
          where: { referred_by_id: cast.owner.id },
          orderBy: { id: 'desc' },
        })
      ).id;
    },
    act: (actor, id) => actor.client.delete(`/api/v1/invites/multiuse/${id}`),
    expect: humans(['owner'], OWNER_REQUIRED),
  });
});

// ------------------------------------------------------------------ administering users

describe('PATCH /users/{user_id}', () => {
  let target: TestUser;
  beforeAll(async () => {
    target = await stack.createUser({ email: 'patched@example.com', fullName: 'Patched' });
  });

  matrix("another user's full_name", theCast, {
    act: (actor) => actor.client.patch(`/api/v1/users/${target.id}`, { full_name: `Renamed by ${actor.id}` }),
    expect: only(['owner', 'administrator'], INSUFFICIENT),
  });

  matrix("another user's role (member → moderator)", theCast, {
    setup: () => stack.db.userProfile.update({ where: { id: target.id }, data: { role: Role.MEMBER } }),
    act: (actor) => actor.client.patch(`/api/v1/users/${target.id}`, { role: Role.MODERATOR }),
    verify: async (_s, allowed) =>
      expect((await stack.db.userProfile.findUniqueOrThrow({ where: { id: target.id } })).role).toBe(
        allowed ? Role.MODERATOR : Role.MEMBER,
      ),
    expect: only(['owner', 'administrator'], INSUFFICIENT),
  });

  matrix('making someone an owner', theCast, {
    setup: () => stack.db.userProfile.update({ where: { id: target.id }, data: { role: Role.MEMBER } }),
    act: (actor) => actor.client.patch(`/api/v1/users/${target.id}`, { role: Role.OWNER }),
    verify: () =>
      stack.db.userProfile.update({ where: { id: target.id }, data: { role: Role.MEMBER } }).then(() => undefined),
    expect: only(['owner'], INSUFFICIENT, { administrator: OWNER_REQUIRED }),
  });

  // A bot's owner administers their bot (Zulip's can_admin_user), but cannot change its role.
  matrix("the member's bot's full_name", theCast, {
    act: (actor) => actor.client.patch(`/api/v1/users/${cast.bot.id}`, { full_name: `Bot renamed by ${actor.id}` }),
    expect: only(['owner', 'administrator', 'member'], INSUFFICIENT),
  });
  matrix("the member's bot's role", theCast, {
    setup: () => stack.db.userProfile.update({ where: { id: cast.bot.id }, data: { role: Role.MEMBER } }),
    act: (actor) => actor.client.patch(`/api/v1/users/${cast.bot.id}`, { role: Role.GUEST }),
    verify: () =>
      stack.db.userProfile.update({ where: { id: cast.bot.id }, data: { role: Role.MEMBER } }).then(() => undefined),
    expect: only(['owner', 'administrator'], INSUFFICIENT, { member: ADMIN_REQUIRED }),
  });
});

// ------------------------------------------------------------------ realm configuration

describe('realm configuration', () => {
  let counter = 0;
  const addLinkifier = (actor: TestUser) =>
    actor.client.post('/api/v1/realm/filters', {
      pattern: `#T${++counter}(?P<id>[0-9]+)`,
      url_template: 'https://trac.example.com/ticket/{id}',
    });

  matrix('POST /realm/filters', theCast, {
    act: addLinkifier,
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });
  matrix('PATCH /realm/filters/{id}', theCast, {
    setup: async () => (await addLinkifier(cast.owner)).body.id as number,
    act: (actor, id) =>
      actor.client.patch(`/api/v1/realm/filters/${id}`, {
        pattern: `#U${++counter}(?P<id>[0-9]+)`,
        url_template: 'https://example.com/{id}',
      }),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });
  matrix('DELETE /realm/filters/{id}', theCast, {
    setup: async () => (await addLinkifier(cast.owner)).body.id as number,
    act: (actor, id) => actor.client.delete(`/api/v1/realm/filters/${id}`),
    verify: async (id, allowed) => expect(await stack.db.linkifier.count({ where: { id } })).toBe(allowed ? 0 : 1),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });
  matrix('GET /realm/linkifiers', theCast, {
    act: (actor) => actor.client.get('/api/v1/realm/linkifiers'),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
  });
  matrix('POST /realm/profile_fields', theCast, {
    act: (actor) => actor.client.post('/api/v1/realm/profile_fields', { name: `Field ${++counter}`, field_type: 1 }),
    expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
  });
  matrix('GET /realm/profile_fields', theCast, {
    act: (actor) => actor.client.get('/api/v1/realm/profile_fields'),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
  });
  describe('PATCH /realm', () => {
    const realmRow = () => stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
    afterAll(() => cast.owner.client.patch('/api/v1/realm', { waiting_period_threshold: 0 }));

    matrix('name', theCast, {
      act: (actor) => actor.client.patch('/api/v1/realm', { name: `Org ${++counter}` }),
      verify: async (_, allowed) => expect((await realmRow()).name === `Org ${counter}`).toBe(allowed),
      expect: only(['owner', 'administrator'], ADMIN_REQUIRED),
    });
    // Owner-only in Zulip's update_realm.
    matrix('waiting_period_threshold', theCast, {
      act: (actor) => actor.client.patch('/api/v1/realm', { waiting_period_threshold: ++counter }),
      verify: async (_, allowed) => expect((await realmRow()).waiting_period_threshold === counter).toBe(allowed),
      expect: only(['owner'], ADMIN_REQUIRED, { administrator: OWNER_REQUIRED }),
    });
  });
  matrix('GET /realm/domains', theCast, {
    act: (actor) => actor.client.get('/api/v1/realm/domains'),
    expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
  });
  matrix('POST /realm/domains', theCast, {
    act: (actor) =>
      actor.client.post('/api/v1/realm/domains', { domain: `d${++counter}.example.org`, allow_subdomains: false }),
    verify: async (_, allowed) =>
      expect(await stack.db.realmDomain.count({ where: { domain: `d${counter}.example.org` } })).toBe(allowed ? 1 : 0),
    expect: only(['owner'], OWNER_REQUIRED),
  });
});

// ------------------------------------------------------------------ email visibility

describe('email visibility', () => {
  // Zulip's EMAIL_ADDRESS_VISIBILITY_*: who may see a user's real email.
  const VISIBILITY = { everyone: 1, members: 2, admins: 3, nobody: 4, moderators: 5 } as const;
  const SEES: Record<keyof typeof VISIBILITY, RoleName[]> = {
    everyone: ['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'],
    members: ['owner', 'administrator', 'moderator', 'member', 'bot'],
    moderators: ['owner', 'administrator', 'moderator'],
    admins: ['owner', 'administrator'],
    nobody: [],
  };
  const targets = {} as Record<keyof typeof VISIBILITY, TestUser>;
  beforeAll(async () => {
    for (const [name, value] of Object.entries(VISIBILITY)) {
      targets[name as keyof typeof VISIBILITY] = await stack.createUser({
        email: `hidden-${name}@example.com`,
        fullName: `Visible to ${name}`,
        emailAddressVisibility: value,
      });
    }
  });
  const placeholder = (user: TestUser) => `user${user.id}@${new URL(stack.gatewayUrl).hostname}`;

  for (const name of Object.keys(VISIBILITY) as (keyof typeof VISIBILITY)[]) {
    // The real address finds the user only where it may be seen; elsewhere it is "No such user",
    // exactly as for an address nobody has.
    matrix(`GET /users/{real email}, visibility "${name}"`, theCast, {
      act: (actor) => actor.client.get(`/api/v1/users/${encodeURIComponent(targets[name].deliveryEmail)}`),
      verify: async (_s, allowed, _actor, response) => {
        if (allowed)
          expect(response.body.user).toMatchObject({
            user_id: targets[name].id,
            delivery_email: targets[name].deliveryEmail,
          });
      },
      expect: only(SEES[name], refused('No such user')),
    });

    // The placeholder address works for everyone; delivery_email is null where hidden.
    matrix(`GET /users/{placeholder email}, visibility "${name}"`, theCast, {
      act: (actor) => actor.client.get(`/api/v1/users/${encodeURIComponent(placeholder(targets[name]))}`),
      verify: async (_s, _allowed, actor, response) => {
        const role = Object.entries(cast).find(([, user]) => user.id === actor.id)![0] as RoleName;
        expect(response.body.user.delivery_email).toBe(SEES[name].includes(role) ? targets[name].deliveryEmail : null);
        expect(response.body.user.email).toBe(
          name === 'everyone' ? targets[name].deliveryEmail : placeholder(targets[name]),
        );
      },
      expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
    });

    matrix(`GET /users lists the user, visibility "${name}"`, theCast, {
      act: (actor) => actor.client.get('/api/v1/users'),
      verify: async (_s, _allowed, actor, response) => {
        const role = Object.entries(cast).find(([, user]) => user.id === actor.id)![0] as RoleName;
        const entry = response.body.members.find((user: { user_id: number }) => user.user_id === targets[name].id);
        expect(entry.delivery_email).toBe(SEES[name].includes(role) ? targets[name].deliveryEmail : null);
        expect(entry.email).toBe(name === 'everyone' ? targets[name].deliveryEmail : placeholder(targets[name]));
        // The real address appears nowhere else in the answer.
        if (!SEES[name].includes(role))
          expect(JSON.stringify(response.body)).not.toContain(targets[name].deliveryEmail);
      },
      expect: only(['owner', 'administrator', 'moderator', 'member', 'guest', 'bot'], INSUFFICIENT),
    });
  }

  test('an address nobody has gets the same answer as a hidden one', async () => {
    const missing = await cast.member.client.get(`/api/v1/users/${encodeURIComponent('nobody-has-this@example.com')}`);
    const hidden = await cast.member.client.get(`/api/v1/users/${encodeURIComponent(targets.admins.deliveryEmail)}`);
    expect(hidden.status).toBe(missing.status);
    expect(hidden.body).toEqual(missing.body);
  });
});
