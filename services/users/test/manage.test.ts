// The manage command line still creates realms and users the way the API sees them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCommand } from '../src/manage';
import { startStack, type Stack } from '@teamchat/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

test('create-realm, create-user (with a bot), list-users and write-zuliprc', async () => {
  const lines: string[] = [];
  const run = (...argv: string[]) => runCommand(stack.deps, argv, (line) => lines.push(line));
  await run('create-realm', '--string-id', 'acme', '--name', 'Acme', '--host', 'acme.example.test');
  await run(
    'create-user',
    '--realm',
    'acme',
    '--email',
    'ada@acme.test',
    '--name',
    'Ada Lovelace',
    '--role',
    'owner',
    '--password',
    's3cret!',
  );
  await run(
    'create-user',
    '--realm',
    'acme',
    '--email',
    'bot@acme.test',
    '--name',
    'Acme Bot',
    '--bot',
    '--owner',
    'ada@acme.test',
  );
  await run('list-users', '--realm', 'acme');
  expect(lines.slice(-2)).toEqual([
    expect.stringMatching(/\tada@acme\.test\tAda Lovelace\trole=100$/),
    expect.stringMatching(/\tbot@acme\.test\tAcme Bot\trole=400\tbot$/),
  ]);

  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'zuliprc-')), 'ada.zuliprc');
  await run('write-zuliprc', '--realm', 'acme', '--email', 'ada@acme.test', '--path', file);
  const key = /key=(\w+)/.exec(fs.readFileSync(file, 'utf8'))![1];
  const ada = stack.client({ email: 'ada@acme.test', apiKey: key }).withHost('acme.example.test');
  const groups = (await ada.get('/api/v1/user_groups')).body.user_groups;
  expect(groups.find((g: { name: string }) => g.name === 'role:owners').members).toHaveLength(1);
  fs.rmSync(path.dirname(file), { recursive: true });
});
