// Headers built from people's text (a name is anyone's input): a name carrying RFC 2047 encoded-word syntax
// reaches the From display name and the Subject of an invitation email encoded by the mail
// library, its syntax broken, so mail programs show what was typed, never what it decodes to.
// Read from the .eml files the mailer writes without SMTP.
import { waitFor } from '@teamchat/testing';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Role } from '@teamchat/domain';
import { startStack, type Stack } from '@teamchat/stack';

jest.setTimeout(120_000);

const ENCODED_WORD = '=?utf-8?b?U2VjdXJpdHkgVGVhbQ==?='; // "Security Team"

let stack: Stack;
let dir: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'email-headers-'));
  stack = await startStack({
    services: ['worker'],
    env: { EMAIL_HOST: '', EMAIL_LOG_DIR: dir, NOREPLY_EMAIL_ADDRESS: 'noreply@teamchat.test' },
  });
});
afterAll(async () => {
  await stack?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A header's value, unfolded, with its encoded words decoded once (as a mail program shows it). */
function shownHeader(raw: string, name: string): { raw: string; shown: string } {
  const [head] = raw.split(/\r?\n\r?\n/);
  const match = new RegExp(`^${name}: (.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(head);
  const value = (match?.[1] ?? '').replace(/\r?\n[ \t]/g, ' ');
  const shown = value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=/g, (_all, _charset: string, encoding: string, text: string) =>
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            'latin1',
          ).toString('utf8'),
    );
  return { raw: value, shown };
}

test("an inviter's name with encoded-word syntax is shown as typed in From and Subject", async () => {
  const evil = await stack.createUser({ fullName: `Evil ${ENCODED_WORD}`, role: Role.ADMINISTRATOR });
  const invited = await evil.client.post('/api/v1/invites', { invitee_emails: 'target@example.org', stream_ids: '[]' });
  expect(invited.status).toBe(200);
  const file = await waitFor(async () => fs.readdirSync(dir).find((name) => name.endsWith('.eml')));
  const raw = fs.readFileSync(path.join(dir, file!), 'utf8');
  for (const header of ['From', 'Subject']) {
    const { raw: value, shown } = shownHeader(raw, header);
    // Never the attacker's encoded word as it was typed, and never its decoding.
    expect(value).not.toContain(ENCODED_WORD);
    expect(shown).not.toContain('Security Team');
    expect(shown).toContain('Evil =');
    expect(shown).toContain('U2VjdXJpdHkgVGVhbQ==');
  }
});
