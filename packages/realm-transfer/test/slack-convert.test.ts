// The Slack converter's archive, checked as Zulip 10.2's test_slack_importer.py checks its
// converter's output, on Zulip's own fixtures (fixtures/slack/, Apache-2.0): the small export
// test_slack_importer.zip with the users.list answer user_data.json (the export's users.json
// has no addresses, so Zulip's test hands the API's list in too), channels/mpims/dms.json, and
// the export with Unicode channel names.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { archiveLines, EXPORT_FORMAT, EXPORT_TABLES } from '../src';
import {
  conversionLines,
  convertSlackExport,
  slackEmojiCode,
  userMessageRows,
  type SlackUser,
} from '../src/slack/convert';
import { directorySource, SlackImportError, zipSource } from '../src/slack/source';

const FIXTURES = path.join(__dirname, 'fixtures/slack');
const HOST = 'test-slack-import.zulip.example.com';

function apiUsers(file: string): SlackUser[] {
  return (JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')) as { members: SlackUser[] }).members;
}

type Row = Record<string, unknown>;

describe('Slack export to organisation archive', () => {
  const conversion = convertSlackExport({
    source: zipSource(path.join(FIXTURES, 'test_slack_importer.zip')),
    subdomain: 'test-slack-import',
    host: HOST,
    users: apiUsers('user_data.json'),
  });
  const rows = (table: string) => conversion.tables.get(table)! as Row[];

  it('converts every message Zulip converts (82: channel joins and a pin left out)', () => {
    // Zulip's test counts 83 after import: these 82 and the update announcement its import sends.
    expect(rows('message')).toHaveLength(82);
    expect(conversion.warnings).toEqual([]);
  });

  it('maps users, the primary owner first, with Slack roles and no password', () => {
    const users = rows('user_profile');
    expect(users.map((user) => [user.id, user.delivery_email, user.full_name, user.role, user.is_bot])).toEqual([
      [1, 'rhtbot@protonmail.com', 'Josef K.', 100, false],
      [2, 'rheaparekh12@gmail.com', 'Rhea Parekh', 100, false],
      [3, 'rishiweb+0@mit.edu', 'Rishi हिन्दी 汉语', 200, false],
      [4, 'showell30@yahoo.com', 'Steve Howell', 400, false],
      // slackbot has no address: Zulip's imported-slackbot-bot at the server's domain.
      [5, `imported-slackbot-bot@${HOST}`, 'slackbot', 400, false],
    ]);
    expect(users.every((user) => !('password_hash' in user))).toBe(true);
    expect(users.map((user) => user.timezone)).toEqual([
      'Europe/Amsterdam',
      'Asia/Kolkata',
      'Asia/Kolkata',
      'America/New_York',
      'America/New_York',
    ]);
    expect(conversion.userIds.get('U6006P1CN')).toBe(1);
    expect(conversion.userIds.get('U8VAHEVUY')).toBe(4);
    // Avatars are Slack's images of the users, listed for download as Zulip fetches them.
    expect(conversion.remoteFiles.filter((file) => file.kind === 'avatar').map((file) => file.url)).toContain(
      'https://ca.slack-edge.com/T5YFFM2QY-U6006P1CN-gd41c3c33cbe-512',
    );
  });

  it('makes the system groups with each user in their role’s group', () => {
    const groups = new Map(rows('user_group').map((group) => [group.id, group.name]));
    const memberships = rows('user_group_membership').map((row) => [
      groups.get(row.user_group_id),
      row.user_profile_id,
    ]);
    expect(memberships).toEqual(
      expect.arrayContaining([
        ['role:owners', 1],
        ['role:owners', 2],
        ['role:administrators', 3],
        ['role:members', 4],
      ]),
    );
  });

  it('makes channels and subscriptions from channels.json, #general and #random default', () => {
    const streams = rows('stream');
    expect(streams.map((stream) => [stream.name, stream.invite_only, stream.is_archived, stream.is_default])).toEqual([
      ['general', false, false, true],
      ['random', false, false, true],
    ]);
    expect(streams[0].description).toBe(
      'This channel is for team-wide communication and announcements. All team members are in this channel.',
    );
    const subscribers = (streamId: unknown) =>
      rows('subscription')
        .filter((sub) => sub.stream_id === streamId)
        .map((sub) => sub.user_profile_id);
    expect(subscribers(streams[0].id)).toEqual([1, 4, 2, 3]);
    expect(subscribers(streams[1].id)).toEqual([1, 4, 2, 3]);
  });

  it('converts message text, mentions and files as Zulip does', () => {
    const contents = rows('message').map((message) => message.content as string);
    expect(contents).toContain('@**Rhea Parekh** this is a test mention');
    expect(contents).toContain('@**Josef K.**     testing     @**Steve Howell** @**slackbot**: multiple mentioning');
    expect(contents).toContain('mailto:foo@spam.com');
    const mention = rows('message').find((message) => message.content === '@**Rhea Parekh** this is a test mention')!;
    const flags = [...userMessageRows(conversion)].filter((row) => row.message_id === mention.id);
    // Every subscriber of the channel, read; the mentioned user also mentioned (8).
    expect(flags.map((row) => [row.user_profile_id, row.flags])).toEqual([
      [1, 1],
      [2, 9],
      [3, 1],
      [4, 1],
    ]);
    expect(mention.rendered_content).toContain('class="user-mention"');
    // Files on files.slack.com become uploads linked from the message.
    const uploads = rows('attachment');
    expect(uploads).toHaveLength(2);
    const withUpload = rows('message').filter((message) => message.has_attachment);
    expect(withUpload).toHaveLength(2);
    for (const upload of uploads) {
      expect(
        withUpload.some((message) => (message.content as string).includes(`/user_uploads/${upload.path_id}`)),
      ).toBe(true);
    }
  });

  it('puts Slack threads in topics of their own, as Zulip does by default', () => {
    const topics = new Set(rows('message').map((message) => message.topic));
    // thread_ts 1516677693.000181 is 2018-01-23 03:21:33 UTC: the parent, a reply and a reply also sent to the channel.
    expect(rows('message').filter((message) => message.topic === '2018-01-23 Slack thread 1')).toHaveLength(3);
    expect(topics).toEqual(new Set(['imported from Slack', '2018-01-23 Slack thread 1']));
    const unthreaded = convertSlackExport({
      source: zipSource(path.join(FIXTURES, 'test_slack_importer.zip')),
      subdomain: 'test-slack-import',
      host: HOST,
      users: apiUsers('user_data.json'),
      convertThreads: false,
    });
    expect(new Set(unthreaded.tables.get('message')!.map((message) => message.topic))).toEqual(
      new Set(['imported from Slack']),
    );
  });

  it('maps reactions to Zulip’s emoji names', () => {
    expect(slackEmojiCode('thinking_face')).toBe('1f914');
    expect(slackEmojiCode('tophat')).toBe('1f3a9');
    expect(slackEmojiCode('dog2')).toBe('1f415');
    expect(slackEmojiCode('dog')).toBe('1f436');
    expect(
      rows('reaction').map((reaction) => [reaction.emoji_name, reaction.emoji_code, reaction.reaction_type]),
    ).toEqual([
      // Slack's :no_mouth: is Zulip's :speechless: (the +1 is on a channel join, left out).
      ['speechless', '1f636', 'unicode_emoji'],
    ]);
  });

  it('writes an archive importRealm reads: every table in order, uploads marked missing', async () => {
    const lines: string[] = [];
    for await (const line of archiveLines(conversionLines(conversion))) lines.push(line);
    const header = JSON.parse(lines[0]) as { format: string; tables: string[] };
    expect(header.format).toBe(EXPORT_FORMAT);
    expect(header.tables).toEqual(EXPORT_TABLES.map((spec) => spec.table));
    const messageSection = lines.findIndex((line) => line === JSON.stringify({ table: 'message', rows: 82 }));
    expect(messageSection).toBeGreaterThan(0);
    expect(lines.filter((line) => line.includes('"missing":true'))).toHaveLength(2);
  });
});

describe('Slack channels, group DMs and DMs (Zulip’s channels_to_zerver_stream fixtures)', () => {
  const users: SlackUser[] = [
    { id: 'U061A1R2R', name: 'user1', deleted: false, real_name: 'User One', profile: { email: 'one@example.com' } },
    {
      id: 'U061A3E0G',
      name: 'user8',
      deleted: false,
      real_name: 'User Eight',
      profile: { email: 'eight@example.com' },
    },
    { id: 'U061A5N1G', name: 'user7', deleted: true, real_name: 'User Seven', profile: { email: 'seven@example.com' } },
    {
      id: 'U064KUGRJ',
      name: 'user5',
      deleted: false,
      real_name: 'User Five',
      is_restricted: true,
      profile: { email: 'five@example.com' },
    },
  ];
  const conversion = convertSlackExport({ source: directorySource(FIXTURES), subdomain: 's', host: HOST, users });
  const rows = (table: string) => conversion.tables.get(table)! as Row[];

  it('makes every channel, the archived #random not a default channel', () => {
    expect(
      rows('stream').map((stream) => [stream.name, stream.is_archived, stream.is_default, stream.description]),
    ).toEqual([
      ['random', true, false, 'no purpose'],
      ['general', false, true, 'general'],
      ['general1', false, false, 'For everyone'],
      ['sharedchannel', false, false, ''],
    ]);
    expect(rows('stream')[0].history_public_to_subscribers).toBe(true);
    expect(new Set(rows('subscription').map((sub) => sub.user_profile_id))).toEqual(new Set([2, 3, 4, 5]));
  });

  it('keeps deactivated users and guests with their roles', () => {
    const byEmail = new Map(rows('user_profile').map((user) => [user.delivery_email, user]));
    expect(byEmail.get('seven@example.com')!.is_active).toBe(false);
    expect(byEmail.get('five@example.com')!.role).toBe(600);
    expect(byEmail.get('one@example.com')!.is_active).toBe(true);
  });
});

describe('Slack exports with Unicode names (test_unicode_slack_importer.zip)', () => {
  it('reads channel directories named in UTF-8', () => {
    const conversion = convertSlackExport({
      source: zipSource(path.join(FIXTURES, 'test_unicode_slack_importer.zip')),
      subdomain: 'u',
      host: HOST,
      users: apiUsers('unicode_user_data.json'),
    });
    expect(conversion.tables.get('stream')!.map((stream) => stream.name)).toContain('チャネル');
    expect(conversion.tables.get('message')!.length).toBeGreaterThan(0);
  });

  it('refuses what is not a Slack export', () => {
    expect(() => zipSource(path.join(FIXTURES, 'user_data.json'))).toThrow(SlackImportError);
    expect(() =>
      convertSlackExport({ source: directorySource(path.join(FIXTURES, '..')), subdomain: 'u', host: HOST }),
    ).toThrow('Import does not have the layout we expect from a Slack export!');
  });

  it('refuses invalid addresses, naming them, as Zulip does', () => {
    const users = apiUsers('user_data.json').map((user) =>
      user.id === 'U8VAHEVUY' ? { ...user, profile: { ...user.profile, email: 'showell30 at yahoo' } } : user,
    );
    expect(() =>
      convertSlackExport({
        source: zipSource(path.join(FIXTURES, 'test_slack_importer.zip')),
        subdomain: 'u',
        host: HOST,
        users,
      }),
    ).toThrow('Invalid email format, please fix the following email(s) and try again: showell30 at yahoo');
  });
});

describe('Slack direct messages, private channels, bots, emoji and files', () => {
  // Zulip's channels/mpims/dms.json with message files and users written here, for what
  // Zulip's test export lacks (its test checks these through its helpers' unit tests).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slack-convert-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const file of ['channels.json', 'mpims.json', 'dms.json']) {
    fs.copyFileSync(path.join(FIXTURES, file), path.join(dir, file));
  }
  const write = (name: string, data: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), JSON.stringify(data));
  };
  const person = (id: string, name: string, extra: Partial<SlackUser> = {}): SlackUser => ({
    id,
    name,
    deleted: false,
    real_name: name.toUpperCase(),
    profile: { email: `${name}@example.com` },
    ...extra,
  });
  const users: SlackUser[] = [
    person('U061A3E0G', 'eight'),
    person('U061A1R2R', 'one', { is_primary_owner: true, is_owner: true }),
    person('U061A5N1G', 'seven', { deleted: true }),
    person('U064KUGRJ', 'five', { is_ultra_restricted: true, tz: 'Europe/Paris' }),
    { id: 'UBOT1', name: 'realbot', is_bot: true, profile: { bot_id: 'B1', real_name_normalized: 'Real Bot' } },
    { id: 'UBOT2', name: 'realbot2', is_bot: true, profile: { bot_id: 'B2', real_name_normalized: 'Real Bot' } },
    { id: 'UBOT3', name: 'otherbot', is_bot: true, profile: { bot_id: 'B3', first_name: 'Other Name' } },
  ];
  write('users.json', [
    {
      id: 'U061A1R2R',
      name: 'one',
      profile: { phone: '+1 555', skype: '', fields: { Xf1: { value: 'x'.repeat(60) } } },
    },
  ]);
  write('groups.json', [
    {
      id: 'G0SECRET',
      name: 'secret',
      created: '1546300800',
      is_archived: false,
      members: ['U061A1R2R', 'U064KUGRJ'],
      purpose: { value: 'hush' },
    },
  ]);
  write('general/2019-01-01.json', [
    {
      ts: '1546300801.000100',
      user: 'U061A1R2R',
      text: '<@U061A3E0G> look _here_ in <#C061A0YJG|general>',
      reactions: [
        { name: 'clap::skin-tone-2', users: ['U061A1R2R'] },
        { name: 'clap::skin-tone-3', users: ['U061A1R2R', 'U061A3E0G'] },
        { name: 'partyparrot', users: ['U064KUGRJ'] },
        { name: 'no_such_emoji_anywhere', users: ['U064KUGRJ'] },
      ],
    },
    { ts: '1546300802.000100', user: 'U061A3E0G', subtype: 'me_message', text: 'waves' },
    { ts: '1546300802.500100', user: 'UOUTSIDER', text: 'from a shared channel' },
    { ts: '1546300800.000100', user: 'U061A3E0G', subtype: 'channel_join', text: '<@U061A3E0G> has joined' },
    {
      ts: '1546300803.000100',
      user: 'U061A1R2R',
      text: 'files',
      files: [
        {
          id: 'F1',
          url_private: 'https://files.slack.com/apple.png',
          title: 'Apple',
          name: 'apple.png',
          mimetype: 'image/png',
          timestamp: 9999,
          created: 8888,
          size: 3000000,
        },
        { url_private: 'https://example.com/banana.zip', title: 'banana', name: 'banana.zip' },
        { mode: 'tombstone', url_private: 'https://files.slack.com/gone', name: 'gone' },
      ],
    },
  ]);
  write('secret/2019-01-01.json', [{ ts: '1546300804.000100', user: 'U064KUGRJ', text: 'psst' }]);
  write('mpdm-user6--user7--user4-1/2019-01-01.json', [{ ts: '1546300805.000100', user: 'U061A1R2R', text: 'group' }]);
  write('DJ47BL849/2019-01-01.json', [{ ts: '1546300806.000100', user: 'U061A5N1G', text: 'just us' }]);

  const conversion = convertSlackExport({
    source: directorySource(dir),
    subdomain: 's',
    host: 'chat.example.com',
    users,
    customEmoji: {
      partyparrot: 'https://emoji.slack-edge.com/T1/partyparrot/abc.gif',
      parrot_alias: 'alias:partyparrot',
      elsewhere: 'https://example.com/e.png',
    },
  });
  const rows = (table: string) => conversion.tables.get(table)! as Row[];
  const user = (email: string) => rows('user_profile').find((row) => row.delivery_email === email)!;
  const message = (content: string) => rows('message').find((row) => (row.content as string).startsWith(content))!;

  it('names bots as Zulip does: "<name>-bot", numbered when taken (test_bot_duplicates)', () => {
    const bots = rows('user_profile').filter((row) => row.is_bot);
    expect(bots.map((bot) => [bot.delivery_email, bot.bot_type, bot.is_active])).toEqual([
      ['real-bot@chat.example.com', 1, true],
      ['real-bot-2@chat.example.com', 1, true],
      ['othername-bot@chat.example.com', 1, true],
    ]);
  });

  it('gives the primary owner the first id, guests and deactivated users their state', () => {
    expect(user('one@example.com')).toMatchObject({ id: 1, role: 100, is_active: true });
    expect(user('eight@example.com')).toMatchObject({ id: 2, role: 400 });
    expect(user('seven@example.com').is_active).toBe(false);
    expect(user('five@example.com')).toMatchObject({ role: 600, timezone: 'Europe/Paris' });
  });

  it('makes custom profile fields of phone, skype and Slack’s fields, long values long text', () => {
    expect(rows('custom_profile_field').map((field) => [field.name, field.field_type])).toEqual([
      ['Slack custom field 1', 2],
      ['phone', 1],
      ['skype', 1],
    ]);
    // Empty values are left out.
    expect(rows('custom_profile_field_value').map((value) => value.value)).toEqual(['x'.repeat(60), '+1 555']);
  });

  it('makes private channels with hidden history, subscribed by their members', () => {
    const secret = rows('stream').find((stream) => stream.name === 'secret')!;
    expect(secret).toMatchObject({ invite_only: true, history_public_to_subscribers: false, description: 'hush' });
    const subscribers = rows('subscription').filter((sub) => sub.stream_id === secret.id);
    expect(subscribers.map((sub) => sub.user_profile_id).sort()).toEqual([1, user('five@example.com').id].sort());
    expect(message('psst')).toMatchObject({ stream_id: secret.id, topic: 'imported from Slack', dm_key: null });
  });

  it('converts group DMs and DMs to direct messages, flagged private for each participant', () => {
    const group = message('group');
    const ids = [1, user('seven@example.com').id as number, user('five@example.com').id as number].sort(
      (a, b) => a - b,
    );
    expect(group).toMatchObject({ stream_id: null, topic: '', dm_key: ids.join(',') });
    const groupRows = [...userMessageRows(conversion)].filter((row) => row.message_id === group.id);
    expect(groupRows.map((row) => [row.user_profile_id, row.flags])).toEqual(ids.map((id) => [id, 1 | 2048]));
    const dm = message('just us');
    const pair = [1, user('seven@example.com').id as number].sort((a, b) => a - b);
    expect(dm).toMatchObject({
      stream_id: null,
      topic: '',
      sender_id: user('seven@example.com').id,
      dm_key: pair.join(','),
    });
    expect([...userMessageRows(conversion)].filter((row) => row.message_id === dm.id)).toHaveLength(2);
  });

  it('imports senders missing from the user list as deactivated shared-channel users', () => {
    const outsider = user('uoutsider@unknown.slack.com');
    expect(outsider).toMatchObject({ full_name: 'UOUTSIDER', is_active: false, role: 400 });
    expect(message('from a shared channel').sender_id).toBe(outsider.id);
  });

  it('rewrites mentions and channel links, /me for me_message, leaves channel joins out', () => {
    expect(message('@**EIGHT**').content).toBe('@**EIGHT** look *here* in #**general**');
    expect(message('/me').content).toBe('/me waves');
    expect(rows('message').some((row) => (row.content as string).includes('has joined'))).toBe(false);
  });

  it('merges skin tones, maps Slack names to Zulip’s and custom emoji to the realm’s', () => {
    const first = message('@**EIGHT**');
    expect(rows('realm_emoji').map((emoji) => [emoji.name, emoji.file_name])).toEqual([['partyparrot', '1.gif']]);
    expect(
      rows('reaction')
        .filter((reaction) => reaction.message_id === first.id)
        .map((reaction) => [
          reaction.user_profile_id,
          reaction.emoji_name,
          reaction.emoji_code,
          reaction.reaction_type,
        ]),
    ).toEqual([
      [1, 'clap', '1f44f', 'unicode_emoji'],
      [2, 'clap', '1f44f', 'unicode_emoji'],
      [user('five@example.com').id, 'partyparrot', '1', 'realm_emoji'],
    ]);
    expect(conversion.warnings).toEqual([
      'Slack user UOUTSIDER is not in the user list: imported as a deactivated shared-channel user',
      'reaction :no_such_emoji_anywhere: is not a known emoji; left out',
    ]);
  });

  it('makes Slack-hosted files uploads and links the others (test_message_files)', () => {
    const files = message('files');
    const [attachment] = rows('attachment');
    expect(files.content).toBe(
      `files\n[Apple](/user_uploads/${attachment.path_id})\n[banana](https://example.com/banana.zip)`,
    );
    expect(files).toMatchObject({ has_attachment: true, has_image: true, has_link: true });
    expect(attachment).toMatchObject({ file_name: 'apple.png', size: 3000000, content_type: 'image/png', owner_id: 1 });
    expect(attachment.path_id).toMatch(/^1\/[0-9a-f]{1,2}\/[A-Za-z0-9_-]{24}\/apple\.png$/);
    expect(rows('attachment_message')).toEqual([{ attachment_id: attachment.id, message_id: files.id }]);
    expect(conversion.remoteFiles.filter((file) => file.kind === 'upload')).toEqual([
      expect.objectContaining({ url: 'https://files.slack.com/apple.png', key: attachment.path_id }),
    ]);
  });
});
