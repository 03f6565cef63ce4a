// The daily invitation cap counts every invitation email, resends included (Zulip's
// invites_sent::day): an organisation's own fresh count, so this file has its own stack.
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { expectError } from '@teamchat/testing';

const DAILY_LIMIT_MSG =
  'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.';

let stack: Stack;
let admin: TestUser;
beforeAll(async () => {
  stack = await startStack();
  admin = await stack.createUser({ fullName: 'Admin', role: Role.ADMINISTRATOR });
});
afterAll(() => stack.close());

const invite = (emails: string[]) =>
  admin.client.post('/api/v1/invites', { invitee_emails: emails.join(','), stream_ids: '[]' });
const resend = (inviteId: number) => admin.client.post(`/api/v1/invites/${inviteId}/resend`, {});
const emailJobs = async () => {
  const counts = await stack.deps.jobs.queue('email').getJobCounts('waiting', 'delayed', 'active', 'completed');
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
};

test('resends count against the daily cap as invitations do', async () => {
  const addresses = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.org`);
  expect((await invite(addresses('first', 60))).status).toBe(200);
  expectError(await invite(addresses('second', 41)), 400, 'INVITATION_FAILED', DAILY_LIMIT_MSG);
  const { id } = await stack.db.preregistrationUser.findFirstOrThrow({ where: { email: 'first0@example.org' } });

  // 60 invitations and 40 resends make the day's 100 emails.
  for (let i = 0; i < 40; i++) expect((await resend(id)).body).toEqual({ result: 'success', msg: '' });
  expect(await emailJobs()).toBe(100);
  for (let i = 0; i < 101; i++) {
    const refused = await resend(id);
    expectError(refused, 400, 'INVITATION_FAILED', DAILY_LIMIT_MSG);
    expect(refused.body).toMatchObject({ sent_invitations: false, daily_limit_reached: true });
  }
  expectError(await invite(['one-more@example.org']), 400, 'INVITATION_FAILED', DAILY_LIMIT_MSG);
  expect(await emailJobs()).toBe(100);
});
