// Email through a real SMTP server (test/support/smtp-sink.ts runs smtp-server in a child
// process): invitations (POST /invites and resend) and missed-message emails (unread direct
// messages and mentions of a user who is away, batched over their batching period, with links
// back), each sent once from the worker's email job; the settings that turn them off.
import { waitFor } from '@teamchat/testing';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Role } from '@teamchat/domain';
import { createMailer } from '@teamchat/notifications';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { SmtpSink } from './support/smtp-sink';

jest.setTimeout(120_000);

let stack: Stack;
let sink: SmtpSink;
let owner: TestUser;
let alice: TestUser;
let bob: TestUser;

async function settled(): Promise<void> {
  await waitFor(async () => {
    const counts = await Promise.all(
      (['message-notifications', 'email'] as const).map((name) =>
        stack.deps.jobs.queue(name).getJobCounts('waiting', 'delayed', 'active', 'prioritized'),
      ),
    );
    return counts.every((count) => Object.values(count).every((n) => n === 0));
  });
}

beforeAll(async () => {
  sink = await new SmtpSink().start();
  stack = await startStack({
    services: ['messages', 'events', 'worker'],
    env: {
      EMAIL_HOST: '127.0.0.1',
      EMAIL_PORT: String(sink.port),
      EMAIL_USE_TLS: 'false',
      NOREPLY_EMAIL_ADDRESS: 'noreply@teamchat.test',
    },
  });
  owner = await stack.createUser({ fullName: 'Olivia Owner', role: Role.OWNER });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
  // A short batching period (Zulip's default is 120 s).
  expect((await bob.client.patch('/api/v1/settings', { email_notifications_batching_period_seconds: 1 })).status).toBe(
    200,
  );
});
afterAll(async () => {
  await stack?.close();
  await sink?.stop();
});

test('an invitation by email arrives at the SMTP server with its link; a resend sends it again', async () => {
  const response = await owner.client.post('/api/v1/invites', {
    invitee_emails: 'newcomer@example.org',
    stream_ids: '[]',
  });
  expect(response.status).toBe(200);
  const invite = await stack.db.preregistrationUser.findFirstOrThrow({ where: { email: 'newcomer@example.org' } });
  const [email] = await waitFor(() => sink.to('newcomer@example.org').length > 0 && sink.to('newcomer@example.org'));
  expect(email.from).toBe('noreply@teamchat.test');
  expect(email.subject).toBe('Olivia Owner invited you to join Test Organization');
  expect(email.text).toContain(`${stack.gatewayUrl}/join/${invite.confirmation_key}/`);
  expect(email.text).toContain(owner.deliveryEmail);

  expect((await owner.client.post(`/api/v1/invites/${invite.id}/resend`)).status).toBe(200);
  await waitFor(() => sink.to('newcomer@example.org').length === 2);
  await settled();
  expect(sink.to('newcomer@example.org')).toHaveLength(2);
  expect(sink.to('newcomer@example.org')[1].text).toContain('reminder');
});

test('missed messages: one email for the unread direct messages of a user who is away, with links back', async () => {
  const ids: number[] = [];
  for (const content of ['first unread', 'second unread']) {
    const response = await alice.client.post('/api/v1/messages', {
      type: 'direct',
      to: JSON.stringify([bob.id]),
      content,
    });
    expect(response.status).toBe(200);
    ids.push(response.body.id);
  }
  const [email] = await waitFor(() => sink.to(bob.deliveryEmail).length > 0 && sink.to(bob.deliveryEmail));
  await settled();
  expect(sink.to(bob.deliveryEmail)).toHaveLength(1);
  expect(email.subject).toBe('Direct messages with Alice Liddell');
  expect(email.text).toContain('Alice Liddell: first unread');
  expect(email.text).toContain('Alice Liddell: second unread');
  for (const id of ids) expect(email.text).toContain(`/near/${id}`);
  expect(email.text).toContain(stack.gatewayUrl);
});

test('messages read within the batching period are not emailed; settings off sends nothing', async () => {
  const before = sink.to(bob.deliveryEmail).length;
  expect((await bob.client.patch('/api/v1/settings', { email_notifications_batching_period_seconds: 3 })).status).toBe(
    200,
  );
  const response = await alice.client.post('/api/v1/messages', {
    type: 'direct',
    to: JSON.stringify([bob.id]),
    content: 'read soon',
  });
  await bob.client.post('/api/v1/messages/flags', {
    messages: JSON.stringify([response.body.id]),
    op: 'add',
    flag: 'read',
  });
  await sleep(3500);
  await settled();
  expect(sink.to(bob.deliveryEmail)).toHaveLength(before);

  await bob.client.patch('/api/v1/settings', {
    email_notifications_batching_period_seconds: 1,
    enable_offline_email_notifications: false,
  });
  await alice.client.post('/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.id]), content: 'no email' });
  await sleep(1500);
  await settled();
  expect(sink.to(bob.deliveryEmail)).toHaveLength(before);
  await bob.client.patch('/api/v1/settings', { enable_offline_email_notifications: true });
});

test('without EMAIL_HOST, emails are written to EMAIL_LOG_DIR as .eml files, and the log says so', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'emails-'));
  const logged: string[] = [];
  const logger = { info: () => {}, warn: (_fields: object, message: string) => void logged.push(message) };
  const mailer = createMailer(
    {
      EMAIL_HOST: '',
      EMAIL_PORT: 587,
      EMAIL_HOST_USER: '',
      EMAIL_HOST_PASSWORD: '',
      EMAIL_USE_TLS: true,
      NOREPLY_EMAIL_ADDRESS: 'noreply@teamchat.test',
      EMAIL_LOG_DIR: dir,
    },
    logger as never,
  );
  await mailer.send({ to: 'x@example.org', subject: 'Hello there', text: 'body', messageId: '<m1@teamchat.test>' });
  const files = fs.readdirSync(dir);
  expect(files).toHaveLength(1);
  expect(files[0]).toMatch(/\.eml$/);
  const raw = fs.readFileSync(path.join(dir, files[0]), 'utf8');
  expect(raw).toMatch(/^Subject: Hello there$/m);
  expect(raw).toMatch(/^To: x@example.org$/m);
  expect(logged).toEqual([expect.stringContaining('EMAIL_HOST is not set')]);
  fs.rmSync(dir, { recursive: true });
});
