// Password reset by email, end to end through the gateway (Zulip's password_reset flow): the
// form, the worker's email (an .eml file, EMAIL_LOG_DIR), the link's form, the new password, and
// the links that must not work (used, expired, forged).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sessionIdFromCookies } from '@teamchat/bus';
import { DEFAULT_PASSWORD_RESET_TIMEOUT_SECONDS, makePasswordResetToken, passwordResetPath } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { ApiClient, expectError } from '@teamchat/testing';

jest.setTimeout(60_000);

const OLD_PASSWORD = 'the old passphrase';
const NEW_PASSWORD = 'a new passphrase';

let stack: Stack;
let emailDir: string;
let user: TestUser;
beforeAll(async () => {
  emailDir = fs.mkdtempSync(path.join(os.tmpdir(), 'reset-emails-'));
  stack = await startStack({ services: ['web', 'worker'], env: { EMAIL_HOST: '', EMAIL_LOG_DIR: emailDir } });
  user = await stack.createUser({ email: 'ophelia@example.com', password: OLD_PASSWORD });
});
afterAll(async () => {
  await stack?.close();
  fs.rmSync(emailDir, { recursive: true, force: true });
});

/** The text of the .eml files sent to `to` (quoted-printable undone), oldest first. */
function emailsTo(to: string): string[] {
  return fs
    .readdirSync(emailDir)
    .sort()
    .map((file) => fs.readFileSync(path.join(emailDir, file), 'utf8'))
    .filter((raw) => new RegExp(`^To: ${to.replace(/[.]/g, '\\.')}$`, 'm').test(raw))
    .map((raw) =>
      raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    );
}

async function waitForEmails(to: string, count: number): Promise<string[]> {
  for (let i = 0; i < 200; i++) {
    const emails = emailsTo(to);
    if (emails.length >= count) return emails;
    await sleep(50);
  }
  throw new Error(`no email to ${to}`);
}

const form = (path: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  new ApiClient(stack.gatewayUrl, null, headers).post(path, params, { validate: false });

async function requestReset(email: string) {
  const response = await form('/accounts/password/reset/', { email });
  expect(response.status).toBe(302);
  expect(response.headers.location).toBe('/accounts/password/reset/done/');
  return response;
}

/** The reset link of the email, as a path of the site. */
function linkOf(email: string): string {
  const match = /(https?:\/\/\S+?)(\/accounts\/password\/reset\/[^/\s]+\/[^/\s]+\/)/.exec(email);
  expect(match).not.toBeNull();
  expect(match![1]).toBe(stack.gatewayUrl);
  return match![2];
}

async function logIn(password: string) {
  return stack.postLoginForm({ username: user.deliveryEmail, password });
}

test('the form, the email, the link, the new password; the old one and the used link no longer work', async () => {
  const page = await stack.anonymous().get('/accounts/password/reset/', {}, { validate: false });
  expect(page.status).toBe(200);
  expect(page.body).toContain('name="email"');
  const browser = await logIn(OLD_PASSWORD);
  const cookie = browser.headers['set-cookie']![0].split(';', 1)[0];
  expect(sessionIdFromCookies(cookie)).toBeDefined();

  await requestReset(user.deliveryEmail);
  const sent = await stack.anonymous().get('/accounts/password/reset/done/', {}, { validate: false });
  expect(sent.body).toContain('Check your email in a few minutes to finish the process.');
  const [email] = await waitForEmails(user.deliveryEmail, 1);
  expect(email).toMatch(/^Subject: Password reset request for Test Organization$/m);
  expect(email).toContain(
    `Somebody (possibly you) requested a new password for the Zulip account ${user.deliveryEmail}`,
  );
  const link = linkOf(email);

  const confirm = await stack.anonymous().get(link, {}, { validate: false });
  expect(confirm.status).toBe(200);
  expect(confirm.body).toContain('name="new_password1"');
  expect(confirm.body).toContain(user.deliveryEmail);

  const mismatch = await form(link, { new_password1: NEW_PASSWORD, new_password2: 'something else' });
  expect(mismatch.status).toBe(200);
  expect(mismatch.body).toContain('The two password fields didn’t match.');
  const weak = await form(link, { new_password1: 'abc', new_password2: 'abc' });
  expect(weak.body).toContain('The password is too weak.');

  const done = await form(link, { new_password1: NEW_PASSWORD, new_password2: NEW_PASSWORD });
  expect(done.status).toBe(302);
  expect(done.headers.location).toBe('/accounts/password/done/');
  const donePage = await stack.anonymous().get('/accounts/password/done/', {}, { validate: false });
  expect(donePage.body).toContain('with your new password');

  // The session from before the reset has ended; the new password logs in, the old one does not.
  expectError(
    await new ApiClient(stack.gatewayUrl, null, { cookie }).get('/json/users/me'),
    401,
    'UNAUTHORIZED',
    'Not logged in: API authentication or user session required',
  );
  expect((await logIn(OLD_PASSWORD)).body).toContain('Incorrect email or password.');
  expect((await logIn(NEW_PASSWORD)).status).toBe(302);

  // The link was for one use.
  const reused = await stack.anonymous().get(link, {}, { validate: false });
  expect(reused.body).toContain('Sorry, the link you provided is invalid or has already been used.');
  expect(reused.body).not.toContain('name="new_password1"');
  const reposted = await form(link, { new_password1: 'yet another one', new_password2: 'yet another one' });
  expect(reposted.body).toContain('Sorry, the link you provided is invalid or has already been used.');
  expect((await logIn('yet another one')).body).toContain('Incorrect email or password.');
});

test('every address gets the same answer; one without an account is told so by email, with no link', async () => {
  const known = await requestReset(user.deliveryEmail);
  const unknown = await requestReset('nobody-here@example.com');
  expect(unknown.status).toBe(known.status);
  expect(unknown.headers.location).toBe(known.headers.location);
  const [email] = await waitForEmails('nobody-here@example.com', 1);
  expect(email).toContain('You do not have an account in that Zulip organization.');
  expect(email).not.toContain('/accounts/password/reset/');

  const gone = await stack.createUser({ email: 'gone-reset@example.com', password: OLD_PASSWORD });
  await stack.db.userProfile.update({ where: { id: gone.id }, data: { is_active: false } });
  await requestReset(gone.deliveryEmail);
  const [deactivated] = await waitForEmails(gone.deliveryEmail, 1);
  expect(deactivated).toContain('but it has been deactivated');
  expect(deactivated).not.toContain('/accounts/password/reset/');
});

test('a link past PASSWORD_RESET_TIMEOUT_SECONDS (three days) is refused; one just within works', async () => {
  const profile = await stack.db.userProfile.findUniqueOrThrow({ where: { id: user.id } });
  const secret = stack.deps.env.INTERNAL_JWT_SECRET;
  const madeAgo = (seconds: number) =>
    passwordResetPath(user.id, makePasswordResetToken(secret, profile, Date.now() - seconds * 1000));
  const expired = madeAgo(DEFAULT_PASSWORD_RESET_TIMEOUT_SECONDS + 60);
  expect((await stack.anonymous().get(expired, {}, { validate: false })).body).toContain(
    'Sorry, the link you provided is invalid or has already been used.',
  );
  const posted = await form(expired, { new_password1: 'expired one', new_password2: 'expired one' });
  expect(posted.body).toContain('Sorry, the link you provided is invalid or has already been used.');
  const fresh = madeAgo(DEFAULT_PASSWORD_RESET_TIMEOUT_SECONDS - 60);
  expect((await stack.anonymous().get(fresh, {}, { validate: false })).body).toContain('name="new_password1"');
});

test("at most two emails an hour to one address (Zulip's password_reset_form_by_email), the answer unchanged", async () => {
  const address = 'often@example.com';
  for (let i = 0; i < 3; i++) await requestReset(address);
  await waitForEmails(address, 2);
  await sleep(500);
  expect(emailsTo(address)).toHaveLength(2);
});

test('a forged token or another user id is refused', async () => {
  const other = await stack.createUser({ password: OLD_PASSWORD });
  const profile = await stack.db.userProfile.findUniqueOrThrow({ where: { id: user.id } });
  const token = makePasswordResetToken(stack.deps.env.INTERNAL_JWT_SECRET, profile);
  for (const link of [
    passwordResetPath(other.id, token),
    passwordResetPath(user.id, makePasswordResetToken('not the secret', profile)),
    '/accounts/password/reset/xx/yy/',
  ]) {
    const page = await stack.anonymous().get(link, {}, { validate: false });
    expect(page.status).toBe(200);
    expect(page.body).toContain('Sorry, the link you provided is invalid or has already been used.');
  }
});
