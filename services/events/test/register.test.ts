import { transaction } from '@teamchat/db';
import { Role, SERVER_LIMITS, ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION } from '@teamchat/domain';
import { STATE_SECTIONS, type StateSection } from '@teamchat/state';
import { startStack, type Stack } from '@teamchat/stack';
import { expectError, registerEventQueue, settleEvents } from '@teamchat/testing';
import { alertWords, commitEvent, directTyping, sendTransient } from './support/producers';

let stack: Stack;
beforeAll(async () => {
  // No relay here: the tests decide themselves when a committed outbox row gets published.
  stack = await startStack({
    services: ['events'],
    env: { EVENTS_RELAY_INTERVAL_MS: '0', EVENTS_HEARTBEAT_MIN_MS: '2000', EVENTS_HEARTBEAT_JITTER_MS: '100' },
  });
});
afterAll(() => stack.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('POST /register', () => {
  test('answers a queue, last_event_id -1, the version and the server limits', async () => {
    const user = await stack.createUser();
    const { status, body } = await user.client.post('/api/v1/register');
    expect(status).toBe(200);
    expect(body.queue_id).toMatch(UUID);
    expect(body).toMatchObject({
      result: 'success',
      msg: '',
      last_event_id: -1,
      zulip_version: ZULIP_VERSION,
      zulip_feature_level: ZULIP_FEATURE_LEVEL,
      zulip_merge_base: ZULIP_MERGE_BASE,
      event_queue_longpoll_timeout_seconds: 90,
      server_typing_started_wait_period_milliseconds: 30000,
      server_typing_stopped_wait_period_milliseconds: 12000,
      server_typing_started_expiry_period_milliseconds: 45000,
      max_stream_name_length: 60,
      max_stream_description_length: 1024,
      max_topic_length: 60,
      max_file_upload_size_mib: SERVER_LIMITS.max_file_upload_size_mib,
      realm_empty_topic_display_name: 'general chat',
      realm_topics_policy: 'allow_empty_topic',
    });
    expect(body).not.toHaveProperty('ignored_parameters_unsupported');
  });

  test('fetch_event_types picks the state; it defaults to event_types', async () => {
    const user = await stack.createUser();
    const onlyTyping = await user.client.post('/api/v1/register', { event_types: ['typing'] });
    expect(onlyTyping.body).not.toHaveProperty('max_topic_length');
    expect(onlyTyping.body).toHaveProperty('zulip_feature_level', ZULIP_FEATURE_LEVEL);

    const realm = await user.client.post('/api/v1/register', { event_types: ['typing'], fetch_event_types: ['realm'] });
    expect(realm.body).toHaveProperty('max_topic_length', 60);

    const none = await user.client.post('/api/v1/register', { fetch_event_types: [] });
    expect(Object.keys(none.body).sort()).toEqual([
      'last_event_id',
      'msg',
      'queue_id',
      'result',
      'zulip_feature_level',
      'zulip_merge_base',
      'zulip_version',
    ]);
  });

  test('features without data on this server still answer their (empty) state', async () => {
    const user = await stack.createUser();
    const { body } = await user.client.post('/api/v1/register', {
      fetch_event_types: ['realm_emoji', 'realm_domains', 'scheduled_messages', 'saved_snippets'],
    });
    expect(body).toMatchObject({ realm_emoji: {}, realm_domains: [], scheduled_messages: [], saved_snippets: [] });
  });

  test('takes every register parameter (client_extavatar is client_gravatar)', async () => {
    const user = await stack.createUser();
    const { status, body } = await user.client.post('/api/v1/register', {
      apply_markdown: true,
      client_extavatar: false,
      slim_presence: true,
      include_subscribers: 'partial',
      all_public_streams: false,
      client_capabilities: {
        notification_settings_null: true,
        stream_typing_notifications: true,
        user_settings_object: true,
        empty_topic_name: true,
      },
      event_types: ['message'],
      fetch_event_types: [],
      narrow: [['channel', 'Denmark']],
      queue_lifespan_secs: 3600,
    });
    expect(status).toBe(200);
    expect(body).not.toHaveProperty('ignored_parameters_unsupported');
  });

  test('a requested lifespan is capped at 7 days', async () => {
    const user = await stack.createUser();
    const { body } = await user.client.post('/api/v1/register', {
      fetch_event_types: [],
      queue_lifespan_secs: 30 * 24 * 3600,
    });
    const ttl = await stack.redis.pttl(`${stack.deps.env.REDIS_PREFIX}{q:${body.queue_id}}:m`);
    // The lifespan counts from register's answer: the keys get the park allowance on top
    // (heartbeat 2000 + jitter 100 + 5000 ms here), the time register itself may take.
    const sevenDays = 7 * 24 * 3600 * 1000;
    expect(ttl).toBeGreaterThan(sevenDays - 60_000);
    expect(ttl).toBeLessThanOrEqual(sevenDays + 2000 + 100 + 5000);
  });

  test.each([
    [{ narrow: [['search', 'cats']] }, 'Operator search not supported.'],
    [{ narrow: [{ operator: 'is', operand: 'followed' }] }, 'Operand followed not supported.'],
    [{ narrow: [['channel']] }, 'narrow[0] should have exactly 2 items'],
    [{ narrow: { channel: 'x' } }, 'narrow is not a list'],
    [{ event_types: 'typing' }, 'event_types is not valid JSON'],
    [{ event_types: [1] }, 'event_types[0] is not a string'],
    [{ client_capabilities: { empty_topic_name: 'yes' } }, 'client_capabilities["empty_topic_name"] is not a boolean'],
    [{ apply_markdown: 'sure' }, 'apply_markdown is not valid JSON'],
    [{ queue_lifespan_secs: 1.5 }, 'queue_lifespan_secs is not an integer'],
  ])('refuses %j', async (params, msg) => {
    const user = await stack.createUser();
    expectError(await user.client.post('/api/v1/register', params), 400, 'BAD_REQUEST', msg);
  });

  test('all_public_streams is refused to guests', async () => {
    const guest = await stack.createUser({ role: Role.GUEST });
    expectError(
      await guest.client.post('/api/v1/register', { all_public_streams: true }),
      400,
      'BAD_REQUEST',
      'User not authorized for this query',
    );
  });

  test('needs authentication', async () => {
    expectError(await stack.anonymous().post('/api/v1/register'), 401, 'UNAUTHORIZED');
  });

  test("the caller's realm permissions follow the realm's group settings, and guests hold none of them", async () => {
    const realm = await stack.createRealm('permissions', 'permissions.teamchat.test');
    const [member, admin, guest] = await Promise.all([
      stack.createUser({ realm, role: Role.MEMBER }),
      stack.createUser({ realm, role: Role.ADMINISTRATOR }),
      stack.createUser({ realm, role: Role.GUEST }),
    ]);
    const permissions = async (user: typeof member) => {
      const { body } = await user.client.post('/api/v1/register', { fetch_event_types: ['realm_user'] });
      return {
        can_create_streams: body.can_create_streams,
        can_create_public_streams: body.can_create_public_streams,
        can_create_private_streams: body.can_create_private_streams,
        can_create_web_public_streams: body.can_create_web_public_streams,
        can_subscribe_other_users: body.can_subscribe_other_users,
        can_invite_others_to_realm: body.can_invite_others_to_realm,
      };
    };
    // Zulip's defaults: members create public and private channels, add subscribers and invite;
    // web-public channels need spectator access, off by default.
    const membersDefaults = {
      can_create_streams: true,
      can_create_public_streams: true,
      can_create_private_streams: true,
      can_create_web_public_streams: false,
      can_subscribe_other_users: true,
      can_invite_others_to_realm: true,
    };
    expect(await permissions(member)).toEqual(membersDefaults);
    expect(await permissions(admin)).toEqual(membersDefaults);
    expect(await permissions(guest)).toEqual({
      can_create_streams: false,
      can_create_public_streams: false,
      can_create_private_streams: false,
      can_create_web_public_streams: false,
      can_subscribe_other_users: false,
      can_invite_others_to_realm: false,
    });

    // Only administrators may invite, and only they create private channels (reached through
    // the owners subgroup of role:administrators for an owner).
    const administrators = await stack.db.userGroup.findFirstOrThrow({
      where: { realm_id: realm.id, name: 'role:administrators', is_system_group: true },
    });
    for (const name of ['can_invite_users_group', 'can_create_private_channel_group']) {
      await stack.db.groupSetting.update({
        where: { owner_kind_owner_id_name: { owner_kind: 'realm', owner_id: realm.id, name } },
        data: { group_id: administrators.id },
      });
    }
    const owner = await stack.createUser({ realm, role: Role.OWNER });
    expect(await permissions(member)).toEqual({
      ...membersDefaults,
      can_create_private_streams: false,
      can_invite_others_to_realm: false,
    });
    expect(await permissions(admin)).toEqual(membersDefaults);
    expect(await permissions(owner)).toEqual(membersDefaults);
  });
});

describe("register's race-free order: the queue gets exactly the events its state does not show", () => {
  let reachedState!: () => void;
  let releaseState!: () => void;
  const pausingSection: StateSection = {
    eventType: 'test_pause',
    async fetch() {
      reachedState();
      await new Promise<void>((resolve) => (releaseState = resolve));
      return {};
    },
  };
  beforeAll(() => STATE_SECTIONS.push(pausingSection));
  afterAll(() => STATE_SECTIONS.splice(STATE_SECTIONS.indexOf(pausingSection), 1));

  /** Commits an outbox row without publishing it (as if the publisher died after COMMIT). */
  async function commitUnpublished(words: string[], userId: number) {
    await transaction(stack.db, (tx) =>
      stack.deps.bus.sendEventOnCommit({ db: tx.db, onCommit: () => undefined }, stack.realm.id, alertWords(words), [
        userId,
      ]),
    );
    const [row] = await stack.db.$queryRaw<
      { id: string; xid: string }[]
    >`SELECT id::text AS id, xid::text AS xid FROM event_outbox ORDER BY id DESC LIMIT 1`;
    return () =>
      stack.deps.bus.publish({
        outboxId: row.id,
        xid: row.xid,
        realmId: stack.realm.id,
        event: alertWords(words),
        users: [userId],
      });
  }

  test('committed before: dropped (arriving during or after register); in progress or after: delivered', async () => {
    const user = await stack.createUser();
    const publishBeforeDuring = await commitUnpublished(
      ['committed before, published while the state is read'],
      user.id,
    );
    const publishBeforeAfter = await commitUnpublished(['committed before, published after register'], user.id);

    // A transaction still open when register takes its snapshot.
    let commitInFlight!: () => void;
    let inFlight!: Promise<void>;
    await new Promise<void>((opened) => {
      inFlight = transaction(stack.db, async (tx) => {
        await stack.deps.bus.sendEventOnCommit(tx, stack.realm.id, alertWords(['in progress at the snapshot']), [
          user.id,
        ]);
        opened();
        await new Promise<void>((resolve) => (commitInFlight = resolve));
      });
    });

    const stateReached = new Promise<void>((resolve) => (reachedState = resolve));
    const registering = registerEventQueue(user.client, {
      event_types: ['alert_words', 'typing'],
      fetch_event_types: ['test_pause'],
    });
    await stateReached;
    // While register reads its state (its snapshot is taken):
    await publishBeforeDuring();
    commitInFlight();
    await inFlight;
    await commitEvent(stack, alertWords(['committed after the snapshot']), [user.id]);
    await sendTransient(stack, directTyping(user, [user]), [user.id]);
    await settleEvents(stack);
    releaseState();
    const queue = await registering;
    expect(queue.lastEventId).toBe(-1);

    await publishBeforeAfter();
    await settleEvents(stack);
    const received = await queue.drain();
    expect(received.map((event) => event.alert_words?.[0] ?? event.type).sort()).toEqual([
      'committed after the snapshot',
      'in progress at the snapshot',
      'typing',
    ]);
    // Ids keep increasing, with gaps where events were dropped.
    const ids = received.map((event) => event.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });
});
