// verify_action for the organisation's settings: user settings (each kind), the realm's defaults
// for new users, PATCH /realm (plain and group settings, the channel settings), realm domains,
// linkifiers, code playgrounds, custom emoji, the organisation's icon and logo.
import type { Stack, TestUser } from '@teamchat/stack';
import { verifyAction, type ParamValue, type Params } from '@teamchat/testing';
import { CAPABILITY_SETS, ok, postImage, startSuiteStack } from './support';

let stack: Stack;
let me: TestUser;
let other: TestUser;
let counter = 0;
let generalId: number;
let groupIds: Record<string, number>;

beforeAll(async () => {
  ({ stack, me, other, generalId } = await startSuiteStack(['messages', 'channels', 'events', 'uploads']));
  const groups = ok(await me.client.get('/api/v1/user_groups')).user_groups as { id: number; name: string }[];
  groupIds = Object.fromEntries(groups.map((group) => [group.name, group.id]));
});

afterAll(() => stack?.close());

describe.each(CAPABILITY_SETS)('organisation and settings, %s', (name, register) => {
  // Each capability set's run gives a setting the other of two values, so every run changes it.
  const run = CAPABILITY_SETS.findIndex(([setName]) => setName === name);
  const pick = <T>(values: [T, T]): T => values[run % 2]!;
  const group = (name: string) => JSON.stringify({ new: groupIds[name] });

  test.each<[string, [ParamValue, ParamValue]]>([
    ['twenty_four_hour_time', [true, false]],
    ['emojiset', ['text', 'google']],
    ['default_language', ['de', 'fr']],
    ['timezone', ['Europe/Berlin', 'Asia/Tokyo']],
    ['enable_desktop_notifications', [false, true]],
    ['enable_offline_email_notifications', [false, true]],
    ['email_notifications_batching_period_seconds', [300, 600]],
    ['presence_enabled', [false, true]],
    ['web_home_view', ['all_messages', 'inbox']],
    ['starred_message_counts', [false, true]],
    ['send_read_receipts', [false, true]],
  ])('user setting %s', async (setting, values) => {
    await verifyAction(stack, me, register, () =>
      me.client.patch('/api/v1/settings', { [setting]: pick(values) }).then(ok),
    );
  });

  test.each<[string, [ParamValue, ParamValue]]>([
    ['twenty_four_hour_time', [true, false]],
    ['emojiset', ['text', 'google']],
    ['enable_stream_desktop_notifications', [true, false]],
    ['web_home_view', ['recent_topics', 'inbox']],
  ])("the organisation's default %s for new users", async (setting, values) => {
    await verifyAction(stack, me, register, () =>
      me.client.patch('/api/v1/realm/user_settings_defaults', { [setting]: pick(values) }).then(ok),
    );
  });

  test.each<[string, () => Params]>([
    ['name', () => ({ name: `Org ${++counter}` })],
    ['description', () => ({ description: `About us ${++counter}` })],
    // (Linked: mandatory_topics true makes the policy disable_empty_topic, allow_empty_topic turns it off.)
    ['mandatory_topics', () => ({ mandatory_topics: true })],
    ['allow_message_editing', () => ({ allow_message_editing: pick([false, true]) })],
    ['message_content_edit_limit_seconds', () => ({ message_content_edit_limit_seconds: pick([1200, 1800]) })],
    [
      'message_edit_history_visibility_policy',
      () => ({ message_edit_history_visibility_policy: pick(['moves', 'none']) }),
    ],
    ['waiting_period_threshold', () => ({ waiting_period_threshold: ++counter })],
    [
      'jitsi_server_url',
      () => ({ jitsi_server_url: JSON.stringify(pick(['https://jitsi.example.com', 'https://meet.example.com'])) }),
    ],
    ['video_chat_provider', () => ({ video_chat_provider: pick([0, 1]) })],
    ['default_code_block_language', () => ({ default_code_block_language: pick(['python', 'rust']) })],
    ['topics_policy', () => ({ topics_policy: 'allow_empty_topic' })],
    ['new_stream_announcements_stream_id', () => ({ new_stream_announcements_stream_id: pick([generalId, -1]) })],
    [
      'can_create_public_channel_group',
      () => ({ can_create_public_channel_group: group(pick(['role:administrators', 'role:members'])) }),
    ],
    [
      'can_create_private_channel_group',
      () => ({ can_create_private_channel_group: group(pick(['role:moderators', 'role:members'])) }),
    ],
    [
      'can_invite_users_group',
      () => ({ can_invite_users_group: group(pick(['role:administrators', 'role:members'])) }),
    ],
    [
      'can_mention_many_users_group',
      () => ({ can_mention_many_users_group: group(pick(['role:moderators', 'role:everyone'])) }),
    ],
    [
      'can_add_custom_emoji_group (anonymous)',
      () => ({
        can_add_custom_emoji_group: JSON.stringify({
          new: { direct_members: [pick([other.id, me.id])], direct_subgroups: [groupIds['role:administrators']] },
        }),
      }),
    ],
    [
      'direct_message_permission_group',
      () => ({ direct_message_permission_group: group(pick(['role:members', 'role:everyone'])) }),
    ],
  ])('PATCH /realm: %s', async (_setting, change) => {
    await verifyAction(stack, me, register, () => me.client.patch('/api/v1/realm', change()).then(ok));
  });

  test('a realm domain added, changed, removed', async () => {
    const domain = `d${++counter}.example.com`;
    await verifyAction(stack, me, register, () =>
      me.client.post('/api/v1/realm/domains', { domain, allow_subdomains: false }).then(ok),
    );
    await verifyAction(stack, me, register, () =>
      me.client.patch(`/api/v1/realm/domains/${domain}`, { allow_subdomains: true }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/realm/domains/${domain}`).then(ok));
  });

  test('a linkifier added, updated, removed', async () => {
    const n = ++counter;
    const { events } = await verifyAction(
      stack,
      me,
      register,
      () =>
        me.client
          .post('/api/v1/realm/filters', {
            pattern: `#T${n}(?P<id>[0-9]+)`,
            url_template: 'https://t.example.com/{id}',
          })
          .then(ok),
      { stateChange: !!register.client_capabilities?.linkifier_url_template },
    );
    const id = (events[0]?.realm_linkifiers as { id: number; pattern: string }[] | undefined)?.find((l) =>
      l.pattern.startsWith(`#T${n}`),
    )?.id;
    const linkifiers = ok(await me.client.get('/api/v1/realm/linkifiers')).linkifiers as {
      id: number;
      pattern: string;
    }[];
    const linkifierId = id ?? linkifiers.find((l) => l.pattern.startsWith(`#T${n}`))!.id;
    await verifyAction(
      stack,
      me,
      register,
      () =>
        me.client
          .patch(`/api/v1/realm/filters/${linkifierId}`, {
            pattern: `#U${n}(?P<id>[0-9]+)`,
            url_template: 'https://u.example.com/{id}',
          })
          .then(ok),
      { stateChange: !!register.client_capabilities?.linkifier_url_template },
    );
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/realm/filters/${linkifierId}`).then(ok), {
      stateChange: !!register.client_capabilities?.linkifier_url_template,
    });
  });

  test('a code playground added and removed', async () => {
    const { id } = await me.client
      .post('/api/v1/realm/playgrounds', {
        name: `Play ${++counter}`,
        pygments_language: 'Python',
        url_template: 'https://p.example.com/?c={code}',
      })
      .then(ok);
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/realm/playgrounds/${id}`).then(ok));
    await verifyAction(stack, me, register, () =>
      me.client
        .post('/api/v1/realm/playgrounds', {
          name: `Play ${++counter}`,
          pygments_language: 'Rust',
          url_template: 'https://r.example.com/?c={code}',
        })
        .then(ok),
    );
  });

  test('a custom emoji added and removed', async () => {
    const name = `emoji_${++counter}`;
    await verifyAction(stack, me, register, () => postImage(me.client, `/api/v1/realm/emoji/${name}`).then(ok));
    await verifyAction(stack, me, register, () => me.client.delete(`/api/v1/realm/emoji/${name}`).then(ok));
  });

  test("the organisation's icon and logo uploaded and removed", async () => {
    await verifyAction(stack, me, register, () => postImage(me.client, '/api/v1/realm/icon').then(ok));
    await verifyAction(stack, me, register, () => me.client.delete('/api/v1/realm/icon').then(ok));
    await verifyAction(stack, me, register, () =>
      postImage(me.client, '/api/v1/realm/logo', { night: 'false' }).then(ok),
    );
    await verifyAction(stack, me, register, () => me.client.delete('/api/v1/realm/logo', { night: false }).then(ok));
  });
});
