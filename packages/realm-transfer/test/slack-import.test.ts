// `manage import-slack` end to end: Zulip 10.2's test Slack export (fixtures/slack, Apache-2.0)
// becomes a new organisation in a test database, checked through the API as Zulip's
// test_slack_importer.py checks its import (users and roles, channels, subscriptions, the
// messages and their content), with one upload's bytes carried in the export.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCommand } from '@teamchat/service-users/src/manage';
import { startStack, type Stack } from '@teamchat/stack';
import { createStorage, loadStorageConfig, type ObjectStorage } from '@teamchat/storage';
import type { ApiClient } from '@teamchat/testing';
import { zipSource } from '../src/slack/source';

const FIXTURES = path.join(__dirname, 'fixtures/slack');
const SUBDOMAIN = 'test-slack-import';
const HOST = 'test-slack-import.slack-import.example';
const DIRAC = Buffer.from('# dirac72\n'.padEnd(5755, '.'));

let stack: Stack;
let storage: ObjectStorage;
let workDir: string;
const importLines: string[] = [];
const keys = new Map<string, string>();

async function clientOf(email: string): Promise<ApiClient> {
  if (!keys.has(email)) {
    const lines: string[] = [];
    await runCommand(stack.deps, ['reset-api-key', '--realm', SUBDOMAIN, '--email', email], (line) => lines.push(line));
    keys.set(email, lines[0]);
  }
  return stack.client({ email, apiKey: keys.get(email)! }).withHost(HOST);
}

beforeAll(async () => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'slack-import-'));
  const env = { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: path.join(workDir, 'uploads') };
  stack = await startStack({ services: ['channels', 'messages', 'uploads'], env });
  storage = createStorage(loadStorageConfig(env));
  // The export unpacked, with one of its files' bytes as an export made with its files has them.
  const exportDir = path.join(workDir, 'export');
  const zip = zipSource(path.join(FIXTURES, 'test_slack_importer.zip'));
  for (const name of zip.files()) {
    fs.mkdirSync(path.dirname(path.join(exportDir, name)), { recursive: true });
    fs.writeFileSync(path.join(exportDir, name), zip.read(name));
  }
  fs.mkdirSync(path.join(exportDir, '__uploads/F8VSW87RR'), { recursive: true });
  fs.writeFileSync(path.join(exportDir, '__uploads/F8VSW87RR/dirac72.md'), DIRAC);
  await runCommand(
    stack.deps,
    ['import-slack', exportDir, '--realm', SUBDOMAIN, '--host', HOST, '--users', path.join(FIXTURES, 'user_data.json')],
    (line) => importLines.push(line),
    { storage, progress: () => {} },
  );
});

afterAll(async () => {
  await storage?.close();
  await stack?.close();
  fs.rmSync(workDir, { recursive: true, force: true });
});

describe('manage import-slack', () => {
  test('reports the new organisation and what it could not fetch', () => {
    expect(importLines[0]).toMatch(new RegExp(`^imported Slack export as realm \\d+ '${SUBDOMAIN}' at http://${HOST}`));
    expect(importLines.join('\n')).toContain('5 users, 2 channels, 82 messages, 1 upload stored');
    expect(importLines.join('\n')).toMatch(/1 upload not in the export/);
  });

  test('GET /users: the Slack users with their roles, slackbot a user of its own', async () => {
    const owner = await clientOf('rhtbot@protonmail.com');
    const response = await owner.get('/api/v1/users');
    expect(response.status).toBe(200);
    const users = (
      response.body.members as {
        delivery_email?: string;
        email: string;
        full_name: string;
        role: number;
        is_active: boolean;
      }[]
    )
      .map((user) => [user.full_name, user.role, user.is_active])
      .sort();
    expect(users).toEqual(
      [
        ['Josef K.', 100, true],
        ['Rhea Parekh', 100, true],
        ['Rishi हिन्दी 汉语', 200, true],
        ['Steve Howell', 400, true],
        ['slackbot', 400, true],
      ].sort(),
    );
    const realm = await stack.db.realm.findFirstOrThrow({ where: { string_id: SUBDOMAIN } });
    expect(realm).toMatchObject({ name: SUBDOMAIN, host: HOST, description: 'Organization imported from Slack!' });
    // Nobody has a password: users set one through the password reset.
    const rows = await stack.db.userProfile.findMany({ where: { realm_id: realm.id } });
    expect(rows.map((row) => row.password_hash)).toEqual([null, null, null, null, null]);
    const login = await stack
      .anonymous()
      .withHost(HOST)
      .post('/api/v1/fetch_api_key', { username: 'showell30@yahoo.com', password: 'anything-at-all' });
    expect(login.status).toBe(401);
  });

  test('GET /streams and /users/me/subscriptions: #general and #random with every member', async () => {
    const steve = await clientOf('showell30@yahoo.com');
    const streams = await steve.get('/api/v1/streams');
    expect(
      (streams.body.streams as { name: string; invite_only: boolean; description: string }[])
        .map((stream) => [stream.name, stream.invite_only])
        .sort(),
    ).toEqual([
      ['general', false],
      ['random', false],
    ]);
    for (const email of ['showell30@yahoo.com', 'rishiweb+0@mit.edu', 'rhtbot@protonmail.com']) {
      const subs = await (await clientOf(email)).get('/api/v1/users/me/subscriptions', { include_subscribers: true });
      expect(subs.status).toBe(200);
      const byName = new Map(
        (subs.body.subscriptions as { name: string; subscribers: number[] }[]).map((sub) => [sub.name, sub]),
      );
      expect([...byName.keys()].sort()).toEqual(['general', 'random']);
      expect(byName.get('general')!.subscribers).toHaveLength(4);
    }
    const defaults = await stack.db.stream.findMany({
      where: { name: { in: ['general', 'random'] }, is_default: true },
    });
    expect(defaults.length).toBeGreaterThanOrEqual(2);
  });

  test('GET /messages: every converted message, mentions, threads, reactions and the upload', async () => {
    const rhea = await clientOf('rheaparekh12@gmail.com');
    const response = await rhea.get('/api/v1/messages', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 200,
      narrow: JSON.stringify([]),
      apply_markdown: true,
    });
    expect(response.status).toBe(200);
    type Message = {
      id: number;
      content: string;
      subject: string;
      display_recipient: string;
      flags: string[];
      sender_full_name: string;
      reactions: { emoji_name: string; emoji_code: string; reaction_type: string }[];
    };
    const messages = response.body.messages as Message[];
    expect(messages).toHaveLength(82);
    const mention = messages.find((message) => message.content.includes('this is a test mention'))!;
    expect(mention.content).toContain('class="user-mention"');
    expect(mention.content).toContain('@Rhea Parekh');
    expect(mention.flags).toEqual(expect.arrayContaining(['read', 'mentioned']));
    expect(new Set(messages.map((message) => message.subject))).toEqual(
      new Set(['imported from Slack', '2018-01-23 Slack thread 1']),
    );
    const reacted = messages.filter((message) => message.reactions.length);
    expect(reacted.map((message) => message.reactions.map((reaction) => reaction.emoji_name))).toEqual([
      ['speechless'],
    ]);

    // The upload whose bytes the export carried is served to a subscriber.
    const withFile = messages.find(
      (message) => message.content.includes('dirac72.md') && message.content.includes('/user_uploads/'),
    )!;
    const href = /href="(\/user_uploads\/[^"]+)"/.exec(withFile.content)![1];
    const file = await rhea.get(href, {}, { validate: false });
    expect(file.status).toBe(200);
    expect(file.raw.equals(DIRAC)).toBe(true);
  });

  test('a second import to the same subdomain is refused and changes nothing', async () => {
    const before = await stack.db.message.count();
    await expect(
      runCommand(
        stack.deps,
        [
          'import-slack',
          path.join(FIXTURES, 'test_slack_importer.zip'),
          '--realm',
          SUBDOMAIN,
          '--host',
          'other.example',
          '--users',
          path.join(FIXTURES, 'user_data.json'),
        ],
        () => {},
        { storage, progress: () => {} },
      ),
    ).rejects.toThrow(`subdomain '${SUBDOMAIN}' is already in use`);
    expect(await stack.db.message.count()).toBe(before);
  });
});

describe('manage import-slack: direct messages and private channels', () => {
  const HOST2 = 'dms.slack-import.example';
  let dir: string;
  beforeAll(async () => {
    // Zulip's channels/dms/mpims.json with messages and users written here.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slack-dms-'));
    for (const file of ['channels.json', 'dms.json', 'mpims.json']) {
      fs.copyFileSync(path.join(FIXTURES, file), path.join(dir, file));
    }
    const write = (name: string, data: unknown) => {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), JSON.stringify(data));
    };
    const person = (id: string, name: string, extra: Record<string, unknown> = {}) => ({
      id,
      name,
      deleted: false,
      real_name: `${name} person`,
      profile: { email: `${name}@dms.example` },
      ...extra,
    });
    write('users.json', [
      person('U061A1R2R', 'one', { is_primary_owner: true }),
      person('U061A3E0G', 'eight'),
      person('U061A5N1G', 'seven', { deleted: true }),
      person('U064KUGRJ', 'five', { is_restricted: true }),
    ]);
    write('groups.json', [
      { id: 'G1', name: 'secret', created: '1546300800', members: ['U061A1R2R', 'U064KUGRJ'], purpose: { value: '' } },
    ]);
    write('secret/2019-01-01.json', [{ ts: '1546300801.000100', user: 'U064KUGRJ', text: 'psst' }]);
    write('DK8HSJDHS/2019-01-01.json', [{ ts: '1546300802.000100', user: 'U064KUGRJ', text: 'just *us*' }]);
    write('mpdm-user6--user7--user4-1/2019-01-01.json', [
      { ts: '1546300803.000100', user: 'U061A1R2R', text: 'all three of us' },
    ]);
    await runCommand(stack.deps, ['import-slack', dir, '--realm', 'slack-dms', '--host', HOST2], () => {}, {
      storage,
      progress: () => {},
    });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function client(email: string) {
    const lines: string[] = [];
    await runCommand(stack.deps, ['reset-api-key', '--realm', 'slack-dms', '--email', email], (line) =>
      lines.push(line),
    );
    return stack.client({ email, apiKey: lines[0] }).withHost(HOST2);
  }

  test('a DM and a group DM reach their participants only; a private channel its members only', async () => {
    const five = await client('five@dms.example');
    const eight = await client('eight@dms.example');
    const fetch = async (who: ApiClient) => {
      const response = await who.get('/api/v1/messages', {
        anchor: 'oldest',
        num_before: 0,
        num_after: 100,
        narrow: JSON.stringify([]),
      });
      expect(response.status).toBe(200);
      return response.body.messages as {
        content: string;
        type: string;
        display_recipient: string | { email: string }[];
        flags: string[];
      }[];
    };
    const seenByFive = await fetch(five);
    expect(seenByFive.map((message) => [message.content, message.type])).toEqual([
      ['<p>psst</p>', 'stream'],
      ['<p>just <strong>us</strong></p>', 'private'],
      ['<p>all three of us</p>', 'private'],
    ]);
    const dm = seenByFive[1];
    expect((dm.display_recipient as { email: string }[]).map((recipient) => recipient.email).sort()).toEqual([
      'five@dms.example',
      'one@dms.example',
    ]);
    expect(dm.flags).toContain('read');
    const group = seenByFive[2];
    expect((group.display_recipient as { email: string }[]).map((recipient) => recipient.email).sort()).toEqual([
      'five@dms.example',
      'one@dms.example',
      'seven@dms.example',
    ]);
    // eight is in none of them.
    expect(await fetch(eight)).toEqual([]);

    const users = await eight.get('/api/v1/users');
    const byEmail = new Map(
      (users.body.members as { email: string; is_active: boolean; role: number }[]).map((user) => [user.email, user]),
    );
    expect(byEmail.get('five@dms.example')).toMatchObject({ role: 600, is_active: true });
    expect(byEmail.get('seven@dms.example')).toMatchObject({ is_active: false });
    const streams = await eight.get('/api/v1/streams');
    expect((streams.body.streams as { name: string }[]).map((stream) => stream.name)).not.toContain('secret');
  });
});
